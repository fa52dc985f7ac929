//! What the slicer keeps of each open connection: its open record and handshake metadata (written
//! before its first kept message, however long before the window it opened), what the filters
//! ask of it, and the fates of its requests awaiting replies. Forgotten when it closes.

use super::filter::ConnFacts;
use super::summary::Fate;
use crate::capture::{OpenEvent, Record};
use bson::RawDocument;
use std::collections::VecDeque;

/// Requests awaiting their reply per connection; past it the oldest is forgotten (its reply is
/// then left out as unpaired).
const MAX_AWAITING: usize = 10_000;

pub struct Awaiting {
    pub request_id: i32,
    pub fate: Fate,
    /// The request was a getMore of this cursor: its reply may close it.
    pub get_more: Option<i64>,
    /// A first reply came (exhaust replies may follow with moreToCome), or none is waited for:
    /// the slicer does not count it among the kept requests awaiting a reply.
    pub answered: bool,
}

#[derive(Default)]
pub struct Conn {
    pub open: Option<Record>,
    pub metadata: Option<Record>,
    pub client: Option<String>,
    pub app: Option<String>,
    pub driver: Option<String>,
    /// Its open record (and metadata) went out.
    pub emitted: bool,
    pub metadata_emitted: bool,
    pub awaiting: VecDeque<Awaiting>,
    /// The fate of its last reply (a hello_rewrite record follows it).
    pub last_reply: Option<Fate>,
}

impl Conn {
    pub fn facts(&self, id: u64) -> ConnFacts<'_> {
        ConnFacts {
            id,
            client: self.client.as_deref(),
            app: self.app.as_deref(),
            driver: self.driver.as_deref(),
        }
    }

    pub fn on_open(&mut self, record: Record) {
        self.client = record.event::<OpenEvent>().ok().map(|e| e.client);
        self.open = Some(record);
    }

    /// Learns the application and driver names from a handshake's `client` document.
    pub fn learn_client(&mut self, doc: &RawDocument) {
        let name = |key: &str| {
            doc.get_document(key)
                .ok()
                .and_then(|d| d.get_str("name").ok())
                .map(str::to_owned)
        };
        if let Some(app) = name("application") {
            self.app = Some(app);
        }
        if let Some(driver) = name("driver") {
            self.driver = Some(driver);
        }
    }

    /// Books a request awaiting a reply; true when an older one had to be forgotten.
    pub fn await_reply(&mut self, a: Awaiting) -> Option<Awaiting> {
        self.awaiting.push_back(a);
        if self.awaiting.len() > MAX_AWAITING {
            return self.awaiting.pop_front();
        }
        None
    }

    /// The request a reply answers: removed unless more replies follow (`more_to_come`).
    pub fn answer(&mut self, response_to: i32, more_to_come: bool) -> Option<Awaiting> {
        let at = self
            .awaiting
            .iter()
            .position(|a| a.request_id == response_to)?;
        if more_to_come {
            let a = &mut self.awaiting[at];
            let first = !a.answered;
            a.answered = true;
            return Some(Awaiting {
                request_id: a.request_id,
                fate: a.fate,
                get_more: a.get_more,
                answered: !first,
            });
        }
        self.awaiting.remove(at)
    }
}
