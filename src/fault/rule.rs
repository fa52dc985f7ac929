//! The rule model: what a rule matches, how often it fires, and what it does.

use std::fmt;

/// One fault rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// A name for reports and metrics (`name:` in the text syntax); the index otherwise.
    pub name: Option<String>,
    pub matcher: Matcher,
    /// Fires at most this many times (failCommand's `times`); unlimited otherwise.
    pub times: Option<u64>,
    /// Fires on this share of the requests it matches, drawn from the `--fault-seed` sequence.
    pub probability: Option<f64>,
    /// Fires only during this many milliseconds from its first firing (a window: a stepdown, a
    /// slow spell); unlimited otherwise.
    pub for_ms: Option<u64>,
    /// Waits this long before the action (failCommand's `blockTimeMS` beside another action).
    pub block_ms: Option<u64>,
    pub action: Action,
}

/// What a request must be for a rule to fire; every field given must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Matcher {
    /// Command names (`insert`, `find`, ...); any command when empty, handshake and
    /// authentication commands excepted: those only when named here.
    pub commands: Vec<String>,
    /// `db.collection`, or `db` alone for every collection of a database.
    pub namespace: Option<String>,
    /// The application name the client gave in its handshake (`appName`).
    pub app: Option<String>,
    /// The driver name the client gave in its handshake (`PyMongo`, `nodejs`, ...).
    pub driver: Option<String>,
    /// The proxy's connection id.
    pub connection: Option<u64>,
    /// A query shape hash, as `analyze` shows it.
    pub shape: Option<String>,
}

/// A MongoDB error as a reply says it.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorSpec {
    pub code: i32,
    pub code_name: Option<String>,
    pub labels: Vec<String>,
    pub message: Option<String>,
}

impl ErrorSpec {
    /// The `errmsg` of the made-up reply.
    pub fn errmsg(&self) -> String {
        self.message
            .clone()
            .unwrap_or_else(|| format!("fault injected by mongotape (code {})", self.code))
    }
}

/// What a rule does to a request it fires on.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Not forwarded; the client gets this error (nothing is applied).
    Error(ErrorSpec),
    /// Forwarded; the server's reply is replaced by this error (applied, the client never learns).
    ReplyError(ErrorSpec),
    /// Forwarded; the client connection is closed instead of the reply.
    CloseAfter,
    /// Closed without forwarding.
    CloseBefore,
    /// Forwarded after this many milliseconds.
    DelayRequest(u64),
    /// Forwarded; the reply reaches the client this many milliseconds late.
    DelayReply(u64),
    /// Not forwarded, never answered; the connection stays open until the client gives up.
    Stall,
    /// Forwarded; the reply says `ok: 1` with this `writeConcernError`.
    WriteConcernError(ErrorSpec),
}

impl Action {
    /// The action's name in rules, records and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Error(_) => "error",
            Action::ReplyError(_) => "reply_error",
            Action::CloseAfter => "close_after",
            Action::CloseBefore => "close_before",
            Action::DelayRequest(_) => "delay_request",
            Action::DelayReply(_) => "delay_reply",
            Action::Stall => "stall",
            Action::WriteConcernError(_) => "write_concern_error",
        }
    }

    /// Whether the request still goes to the server.
    pub fn forwards(&self) -> bool {
        !matches!(self, Action::Error(_) | Action::CloseBefore | Action::Stall)
    }
}

impl fmt::Display for ErrorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " code={}", self.code)?;
        if let Some(name) = &self.code_name {
            write!(f, " {}", word("codeName", name))?;
        }
        if !self.labels.is_empty() {
            write!(f, " {}", word("labels", &self.labels.join(",")))?;
        }
        if let Some(m) = &self.message {
            write!(f, " msg=\"{m}\"")?;
        }
        Ok(())
    }
}

/// `key=value`, the value quoted when it would not read back as one word.
fn word(key: &str, value: &str) -> String {
    if value.is_empty()
        || value.contains(char::is_whitespace)
        || value.contains("->")
        || value.starts_with('"')
    {
        format!("{key}=\"{value}\"")
    } else {
        format!("{key}={value}")
    }
}

/// The rule in the text syntax of [`super::parse`] (what `GET /faults` shows).
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            write!(f, "{name}: ")?;
        }
        let m = &self.matcher;
        let mut words = Vec::new();
        if !m.commands.is_empty() {
            words.push(word("command", &m.commands.join(",")));
        }
        let opt = [
            ("ns", &m.namespace),
            ("app", &m.app),
            ("driver", &m.driver),
            ("shape", &m.shape),
        ];
        for (key, value) in opt {
            if let Some(v) = value {
                words.push(word(key, v));
            }
        }
        if let Some(c) = m.connection {
            words.push(format!("conn={c}"));
        }
        if let Some(t) = self.times {
            words.push(format!("times={t}"));
        }
        if let Some(p) = self.probability {
            words.push(format!("probability={p}"));
        }
        if let Some(w) = self.for_ms {
            words.push(format!("for={w}"));
        }
        if let Some(b) = self.block_ms {
            words.push(format!("block={b}"));
        }
        write!(
            f,
            "{}-> {}",
            words.join(" ") + if words.is_empty() { "" } else { " " },
            self.action.name()
        )?;
        match &self.action {
            Action::Error(e) | Action::ReplyError(e) | Action::WriteConcernError(e) => {
                write!(f, "{e}")
            }
            Action::DelayRequest(ms) | Action::DelayReply(ms) => write!(f, " ms={ms}"),
            _ => Ok(()),
        }
    }
}
