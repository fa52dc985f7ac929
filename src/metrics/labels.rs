//! Label values with a bound: a command outside [`COMMANDS`] is `other`, an opcode outside the
//! protocol's is `other`, and at most [`MAX_ERROR_CODES`] distinct error codes get their own
//! series. Whatever a client or a server sends, a scrape stays the same size.

use crate::wire::OpCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Commands counted under their own name, sorted (binary search). Everything else is `other`.
pub const COMMANDS: &[&str] = &[
    "abortTransaction",
    "aggregate",
    "authenticate",
    "buildInfo",
    "buildinfo",
    "bulkWrite",
    "collMod",
    "collStats",
    "commitTransaction",
    "connectionStatus",
    "count",
    "create",
    "createIndexes",
    "createUser",
    "currentOp",
    "dbStats",
    "delete",
    "distinct",
    "drop",
    "dropDatabase",
    "dropIndexes",
    "dropUser",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getCmdLineOpts",
    "getLastError",
    "getMore",
    "getParameter",
    "getnonce",
    "hello",
    "hostInfo",
    "insert",
    "isMaster",
    "ismaster",
    "killCursors",
    "killOp",
    "killSessions",
    "listCollections",
    "listDatabases",
    "listIndexes",
    "logout",
    "mapReduce",
    "ping",
    "refreshSessions",
    "renameCollection",
    "replSetGetStatus",
    "saslContinue",
    "saslStart",
    "serverStatus",
    "setParameter",
    "startSession",
    "update",
    "updateUser",
    "validate",
    "whatsmyuri",
];

/// Index of `other` in per-command tables.
pub const OTHER_COMMAND: usize = COMMANDS.len();
/// Index of OP_COMPRESSED requests, whose command is inside the compressed body.
pub const COMPRESSED_COMMAND: usize = COMMANDS.len() + 1;
/// Length of a per-command table.
pub const COMMAND_SLOTS: usize = COMMANDS.len() + 2;

/// The table index of a command name.
pub fn command_index(name: &[u8]) -> usize {
    COMMANDS
        .binary_search_by(|c| c.as_bytes().cmp(name))
        .unwrap_or(OTHER_COMMAND)
}

/// The label value of a table index.
pub fn command_label(index: usize) -> &'static str {
    match index {
        i if i < COMMANDS.len() => COMMANDS[i],
        COMPRESSED_COMMAND => "compressed",
        _ => "other",
    }
}

/// The opcodes of the protocol (as `wire/` knows them), then `other`.
pub const OPCODE_SLOTS: usize = OpCode::KNOWN.len() + 1;

pub fn opcode_index(code: OpCode) -> usize {
    OpCode::KNOWN
        .iter()
        .position(|&c| c == code)
        .unwrap_or(OpCode::KNOWN.len())
}

pub fn opcode_label(index: usize) -> &'static str {
    OpCode::KNOWN
        .get(index)
        .and_then(|c| c.known_name())
        .unwrap_or("other")
}

/// Distinct error codes with a series of their own; later ones count as `other`.
pub const MAX_ERROR_CODES: usize = 64;

/// Error replies by server error code (`none` when the reply gave no code). Touched only for
/// error replies; the table grows to [`MAX_ERROR_CODES`] entries at most.
#[derive(Debug, Default)]
pub struct ErrorCodes {
    codes: Mutex<Vec<(Option<i32>, u64)>>,
    other: AtomicU64,
}

impl ErrorCodes {
    pub fn add(&self, code: Option<i32>) {
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = codes.iter_mut().find(|(c, _)| *c == code) {
            entry.1 += 1;
        } else if codes.len() < MAX_ERROR_CODES {
            codes.push((code, 1));
        } else {
            self.other.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Each code's label value (the number, `none` or `other`) and count.
    pub fn counts(&self) -> Vec<(String, u64)> {
        let codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(String, u64)> = codes
            .iter()
            .map(|(code, n)| (code.map_or("none".into(), |c| c.to_string()), *n))
            .collect();
        let other = self.other.load(Ordering::Relaxed);
        if other > 0 {
            out.push(("other".into(), other));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_sorted_and_found() {
        assert!(
            COMMANDS.windows(2).all(|w| w[0] < w[1]),
            "COMMANDS must stay sorted"
        );
        assert_eq!(command_label(command_index(b"insert")), "insert");
        assert_eq!(command_label(command_index(b"isMaster")), "isMaster");
        assert_eq!(command_index(b"noSuchCommand"), OTHER_COMMAND);
        assert_eq!(command_label(OTHER_COMMAND), "other");
        assert_eq!(command_label(COMPRESSED_COMMAND), "compressed");
        assert_eq!(opcode_label(opcode_index(OpCode::Msg)), "OP_MSG");
        assert_eq!(opcode_label(opcode_index(OpCode::Unknown(99))), "other");
    }

    #[test]
    fn error_codes_are_bounded() {
        let e = ErrorCodes::default();
        for code in 0..1000 {
            e.add(Some(code));
        }
        e.add(None);
        let counts = e.counts();
        assert_eq!(counts.len(), MAX_ERROR_CODES + 1);
        assert_eq!(
            counts.last().unwrap(),
            &("other".to_string(), 1000 - 64 + 1)
        );
    }
}
