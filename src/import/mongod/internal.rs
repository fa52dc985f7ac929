//! Traffic between the members of a deployment, which a server's recording holds beside its
//! clients': sessions that say they are a member (`MongoDB Internal Client`, or `internalClient`
//! in their handshake), replication's commands (heartbeats, positions, votes) and the oplog's
//! reads (`find` and `getMore` on `local.oplog.rs`). Left out of an import unless
//! `--keep-internal`, and counted. The filter keeps a few request ids per session (the replies
//! to leave out with their requests), never the messages.

use crate::wire::{info, Body, Message, MsgHeader, RequestInfo};
use bson::RawDocument;
use std::collections::VecDeque;

/// Replication's own commands (user commands such as `replSetGetStatus` are not among them).
const INTERNAL_COMMANDS: &[&str] = &[
    "replSetHeartbeat",
    "replSetUpdatePosition",
    "replSetRequestVotes",
    "replSetGetRBID",
    "replSetStepUp",
    "_isSelf",
];
/// The driver name a member's connections give in their handshake.
const INTERNAL_DRIVER: &str = "MongoDB Internal Client";
/// Request ids remembered per session whose replies are left out.
const REMEMBERED: usize = 64;

/// What a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// A handshake that says its session is a member's.
    InternalSession,
    /// Replication's traffic on any session.
    InternalCommand,
    Other,
}

/// Classifies a request (a message that cannot be parsed is `Other`: kept, as a gap if need be).
pub fn classify(message: &[u8]) -> RequestKind {
    let Ok(parsed) = Message::parse(message) else {
        return RequestKind::Other;
    };
    let req = RequestInfo::of(&parsed);
    if info::is_handshake_command(&req.command) {
        let internal_field =
            command_body(&parsed).is_some_and(|b| matches!(b.get("internalClient"), Ok(Some(_))));
        let driver = info::client_metadata(&parsed).and_then(|c| {
            let d = c.get_document("driver").ok()?;
            d.get_str("name").ok().map(str::to_owned)
        });
        if internal_field || driver.as_deref() == Some(INTERNAL_DRIVER) {
            return RequestKind::InternalSession;
        }
    }
    let oplog = req.db.as_deref() == Some("local") && req.collection.as_deref() == Some("oplog.rs");
    if INTERNAL_COMMANDS.contains(&req.command.as_str())
        || (oplog && matches!(req.command.as_str(), "find" | "getMore"))
    {
        return RequestKind::InternalCommand;
    }
    RequestKind::Other
}

fn command_body(msg: &Message) -> Option<&RawDocument> {
    match &msg.body {
        Body::Msg(m) => Some(m.body()),
        Body::Query(q) => Some(q.query.get_document("$query").unwrap_or(&q.query)),
        _ => None,
    }
}

/// One session's state in the filter.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    internal: bool,
    dropped: VecDeque<i32>,
}

/// What to do with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Leave it out; `new_session`: it showed the session to be a member's.
    Drop {
        new_session: bool,
    },
}

impl Filter {
    pub fn is_internal(&self) -> bool {
        self.internal
    }

    /// The verdict on a message of this session.
    pub fn judge(&mut self, request: bool, message: &[u8]) -> Verdict {
        let header = MsgHeader::parse(message).ok().flatten();
        if self.internal {
            return Verdict::Drop { new_session: false };
        }
        if !request {
            let Some(h) = header else {
                return Verdict::Keep;
            };
            if !self.dropped.contains(&h.response_to) {
                return Verdict::Keep;
            }
            // An exhaust reply's successor answers it.
            self.remember(h.request_id);
            return Verdict::Drop { new_session: false };
        }
        match classify(message) {
            RequestKind::InternalSession => {
                self.internal = true;
                Verdict::Drop { new_session: true }
            }
            RequestKind::InternalCommand => {
                if let Some(h) = header {
                    self.remember(h.request_id);
                }
                Verdict::Drop { new_session: false }
            }
            RequestKind::Other => Verdict::Keep,
        }
    }

    fn remember(&mut self, request_id: i32) {
        if self.dropped.len() == REMEMBERED {
            self.dropped.pop_front();
        }
        self.dropped.push_back(request_id);
    }
}
