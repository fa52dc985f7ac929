//! The tap on the proxy ([`crate::proxy::tap::Tap`]): on the forwarding path, so it only looks
//! at a request's command in place (`wire::peek`) and queues the reads, every reply and every
//! close for the mirror's dispatcher ([`super::pairs`]), without waiting and without waking it
//! (the dispatcher polls). Past its bound (in bytes and in records) a record is dropped and
//! counted: the application never waits.

use crate::capture::{Record, RecordKind};
use crate::proxy::tap::Tap;
use crate::wire::peek;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Records the dispatcher may have waiting.
pub const INTAKE_RECORDS: usize = 65_536;

pub struct Intake {
    tx: mpsc::Sender<Record>,
    queued: Arc<AtomicUsize>,
    max_bytes: usize,
    /// Whether handshakes go to the dispatcher too (`--app` reads the application's name).
    handshakes: bool,
    /// Whether writes go to the dispatcher too (`--mirror all`).
    writes: bool,
    /// Records dropped because the dispatcher fell behind.
    pub dropped: Arc<AtomicU64>,
}

/// Whether a request's command may be mirrored (a compressed one is opened by the dispatcher).
fn wanted(command: Option<&[u8]>, handshakes: bool, writes: bool) -> bool {
    match command {
        None => true,
        Some(c) => {
            c == b"getMore"
                || (handshakes && matches!(c, b"hello" | b"isMaster" | b"ismaster"))
                || (writes
                    && super::config::WRITE_COMMANDS
                        .iter()
                        .any(|w| w.as_bytes() == c))
                || super::config::READ_COMMANDS
                    .iter()
                    .any(|r| r.as_bytes() == c)
        }
    }
}

impl Intake {
    /// The tap and the receiving end; `queued` is decreased by the dispatcher as it takes records.
    pub fn new(
        max_bytes: usize,
        handshakes: bool,
        writes: bool,
    ) -> (Arc<Intake>, mpsc::Receiver<Record>, Arc<AtomicUsize>) {
        let (tx, rx) = mpsc::channel(INTAKE_RECORDS);
        let queued = Arc::new(AtomicUsize::new(0));
        let intake = Intake {
            tx,
            queued: queued.clone(),
            max_bytes,
            handshakes,
            writes,
            dropped: Arc::default(),
        };
        (Arc::new(intake), rx, queued)
    }
}

impl Intake {
    /// Whether no record waits for the dispatcher.
    pub fn is_empty(&self) -> bool {
        self.queued.load(Ordering::Relaxed) == 0
    }
}

impl Tap for Intake {
    fn record(&self, record: &Record) {
        match record.kind {
            RecordKind::Request => {
                if !peek::request(&record.payload)
                    .is_some_and(|p| wanted(p.command, self.handshakes, self.writes))
                {
                    return;
                }
            }
            RecordKind::Reply | RecordKind::Close => {}
            _ => return,
        }
        let size = record.payload.len();
        if self.queued.fetch_add(size, Ordering::Relaxed) + size > self.max_bytes {
            self.queued.fetch_sub(size, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.tx.try_send(record.clone()).is_err() {
            self.queued.fetch_sub(size, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}
