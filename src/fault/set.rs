//! The live rules: each with its fire count and its own seeded draws, replaceable while the proxy
//! runs (`PUT /faults`). Deciding takes a short lock per request, and only when rules are set.

use super::facts::{ClientFacts, RequestFacts};
use super::rng::SplitMix;
use super::rule::{Action, Rule};
use crate::wire::info::is_handshake_command;
use serde::Serialize;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// A rule that fired on a request: what to do, and who said so.
#[derive(Debug, Clone)]
pub struct Decision {
    pub rule: usize,
    pub name: String,
    pub action: Action,
    pub block_ms: Option<u64>,
}

#[derive(Debug)]
struct Armed {
    rule: Rule,
    fired: u64,
    rng: SplitMix,
    /// When it first fired (the start of a `for` window).
    first: Option<Instant>,
}

/// One rule as `GET /faults` lists it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RuleStatus {
    pub index: usize,
    /// The rule's name, or its index.
    pub name: String,
    /// The rule in the text syntax.
    pub rule: String,
    pub action: String,
    /// How often it fired since it was set.
    pub fired: u64,
}

/// The rules of a running proxy.
#[derive(Debug)]
pub struct FaultControl {
    seed: u64,
    rules: Mutex<Vec<Armed>>,
    /// Whether any rule matches on shapes (the hash is only worked out then).
    wants_shape: RwLock<bool>,
}

impl FaultControl {
    pub fn new(rules: Vec<Rule>, seed: u64) -> Arc<FaultControl> {
        let control = Arc::new(FaultControl {
            seed,
            rules: Mutex::new(Vec::new()),
            wants_shape: RwLock::new(false),
        });
        control.replace(rules);
        control
    }

    /// Replaces every rule; counts and draws start again.
    pub fn replace(&self, rules: Vec<Rule>) {
        let shape = rules.iter().any(|r| r.matcher.shape.is_some());
        let armed = rules
            .into_iter()
            .enumerate()
            .map(|(i, rule)| Armed {
                rule,
                fired: 0,
                first: None,
                rng: SplitMix::new(self.seed ^ (i as u64).wrapping_mul(0x9E37_79B9)),
            })
            .collect();
        *self.rules.lock().expect("fault rules lock") = armed;
        *self.wants_shape.write().expect("fault rules lock") = shape;
    }

    pub fn wants_shape(&self) -> bool {
        *self.wants_shape.read().expect("fault rules lock")
    }

    pub fn len(&self) -> usize {
        self.rules.lock().expect("fault rules lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rules and their fire counts.
    pub fn status(&self) -> Vec<RuleStatus> {
        let rules = self.rules.lock().expect("fault rules lock");
        rules
            .iter()
            .enumerate()
            .map(|(index, a)| RuleStatus {
                index,
                name: rule_name(&a.rule, index),
                rule: a.rule.to_string(),
                action: a.rule.action.name().into(),
                fired: a.fired,
            })
            .collect()
    }

    /// The first rule that fires on this request, counted; `None` lets it through untouched.
    pub fn decide(
        &self,
        req: &RequestFacts,
        client: &ClientFacts,
        conn_id: u64,
    ) -> Option<Decision> {
        let mut rules = self.rules.lock().expect("fault rules lock");
        for (index, armed) in rules.iter_mut().enumerate() {
            if !matches(&armed.rule, req, client, conn_id) {
                continue;
            }
            if armed.rule.times.is_some_and(|t| armed.fired >= t) {
                continue;
            }
            let closed = |w: u64| {
                armed
                    .first
                    .is_some_and(|t| t.elapsed() >= Duration::from_millis(w))
            };
            if armed.rule.for_ms.is_some_and(closed) {
                continue;
            }
            if let Some(p) = armed.rule.probability {
                if armed.rng.unit() >= p {
                    continue;
                }
            }
            armed.fired += 1;
            armed.first.get_or_insert_with(Instant::now);
            return Some(Decision {
                rule: index,
                name: rule_name(&armed.rule, index),
                action: armed.rule.action.clone(),
                block_ms: armed.rule.block_ms,
            });
        }
        None
    }
}

fn rule_name(rule: &Rule, index: usize) -> String {
    rule.name.clone().unwrap_or_else(|| index.to_string())
}

fn matches(rule: &Rule, req: &RequestFacts, client: &ClientFacts, conn_id: u64) -> bool {
    let m = &rule.matcher;
    let named = m
        .commands
        .iter()
        .any(|c| c.eq_ignore_ascii_case(&req.command));
    if m.commands.is_empty() {
        // The handshake is left alone unless a rule names it.
        if is_handshake_command(&req.command) {
            return false;
        }
    } else if !named {
        return false;
    }
    let ns_ok = m.namespace.as_ref().is_none_or(|ns| {
        req.namespace == *ns
            || (!ns.contains('.') && req.namespace.split('.').next() == Some(ns.as_str()))
    });
    let eq = |want: &Option<String>, got: &Option<String>| {
        want.as_ref()
            .is_none_or(|w| got.as_ref().is_some_and(|g| g.eq_ignore_ascii_case(w)))
    };
    ns_ok
        && eq(&m.app, &client.app)
        && eq(&m.driver, &client.driver)
        && eq(&m.shape, &req.shape)
        && m.connection.is_none_or(|c| c == conn_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::parse::parse_rule;

    fn req(command: &str, ns: &str, id: i32) -> RequestFacts {
        RequestFacts {
            request_id: id,
            command: command.into(),
            namespace: ns.into(),
            expects_reply: true,
            ..RequestFacts::default()
        }
    }

    #[test]
    fn matchers_times_and_the_handshake() {
        let rules = vec![
            parse_rule("command=insert ns=shop times=2 -> close_after").unwrap(),
            parse_rule("app=billing -> stall").unwrap(),
        ];
        let set = FaultControl::new(rules, 1);
        let none = ClientFacts::default();
        let billing = ClientFacts {
            app: Some("billing".into()),
            driver: None,
        };
        assert!(set.decide(&req("insert", "other.c", 1), &none, 1).is_none());
        for _ in 0..2 {
            let d = set.decide(&req("insert", "shop.c", 1), &none, 1).unwrap();
            assert_eq!((d.rule, d.action.name()), (0, "close_after"));
        }
        assert!(set.decide(&req("insert", "shop.c", 1), &none, 1).is_none());
        assert_eq!(
            set.decide(&req("find", "a.b", 1), &billing, 1)
                .unwrap()
                .rule,
            1
        );
        assert!(set.decide(&req("hello", "admin", 1), &billing, 1).is_none());
        assert!(set
            .decide(&req("saslStart", "admin", 1), &billing, 1)
            .is_none());
        assert_eq!(set.status()[0].fired, 2);
        set.replace(vec![parse_rule("command=hello -> stall").unwrap()]);
        assert!(set.decide(&req("hello", "admin", 1), &none, 1).is_some());
    }

    #[test]
    fn a_window_closes_after_its_first_firing() {
        // for=0 closes the moment it opens: one firing; an hour stays open through the test.
        let set = FaultControl::new(
            vec![
                parse_rule("command=insert for=0 -> close_after").unwrap(),
                parse_rule("command=insert for=3600s -> stall").unwrap(),
            ],
            1,
        );
        let none = ClientFacts::default();
        let rules: Vec<usize> = (0..5)
            .map(|i| set.decide(&req("insert", "a.b", i), &none, 1).unwrap().rule)
            .collect();
        assert_eq!(rules, [0, 1, 1, 1, 1]);
        // Replaced rules open their windows again.
        set.replace(vec![parse_rule("for=0 -> stall").unwrap()]);
        assert!(set.decide(&req("find", "a.b", 1), &none, 1).is_some());
        assert!(set.decide(&req("find", "a.b", 2), &none, 1).is_none());
    }

    #[test]
    fn a_seed_fires_on_the_same_requests() {
        let fired = |seed| {
            let set =
                FaultControl::new(vec![parse_rule("probability=0.3 -> stall").unwrap()], seed);
            (0..200)
                .filter(|&i| {
                    set.decide(&req("find", "a.b", i), &ClientFacts::default(), 1)
                        .is_some()
                })
                .collect::<Vec<_>>()
        };
        let (a, b) = (fired(42), fired(42));
        assert_eq!(a, b);
        assert!(a.len() > 30 && a.len() < 90, "{}", a.len());
        assert_ne!(a, fired(43));
    }
}
