//! Server error codes mongotape acts on or explains, by the names of the server's
//! `error_codes.yml`. A reply's own `codeName` wins in reports; [`name`] fills in for replies
//! that give a code without one (legacy replies, some write errors).

/// A command run without the required authentication or privileges. Left out of [`name`] so that
/// a reply giving it without a `codeName` is reported with no name, as the reports always did.
pub const UNAUTHORIZED: i32 = 13;
pub const CURSOR_NOT_FOUND: i32 = 43;
pub const MAX_TIME_MS_EXPIRED: i32 = 50;
pub const PRIMARY_STEPPED_DOWN: i32 = 189;
pub const TRANSACTION_TOO_OLD: i32 = 225;
pub const NO_SUCH_TRANSACTION: i32 = 251;
pub const NOT_WRITABLE_PRIMARY: i32 = 10107;
pub const DUPLICATE_KEY: i32 = 11000;
pub const INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: i32 = 11602;
pub const NOT_PRIMARY_NO_SECONDARY_OK: i32 = 13435;

/// Codes of a reply from a member that is (no longer) the primary.
pub const NOT_PRIMARY: [i32; 4] = [
    NOT_WRITABLE_PRIMARY,
    NOT_PRIMARY_NO_SECONDARY_OK,
    PRIMARY_STEPPED_DOWN,
    INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
];

/// The server's name for the codes above.
pub fn name(code: i32) -> Option<&'static str> {
    Some(match code {
        CURSOR_NOT_FOUND => "CursorNotFound",
        MAX_TIME_MS_EXPIRED => "MaxTimeMSExpired",
        PRIMARY_STEPPED_DOWN => "PrimarySteppedDown",
        TRANSACTION_TOO_OLD => "TransactionTooOld",
        NO_SUCH_TRANSACTION => "NoSuchTransaction",
        NOT_WRITABLE_PRIMARY => "NotWritablePrimary",
        DUPLICATE_KEY => "DuplicateKey",
        INTERRUPTED_DUE_TO_REPL_STATE_CHANGE => "InterruptedDueToReplStateChange",
        NOT_PRIMARY_NO_SECONDARY_OK => "NotPrimaryNoSecondaryOk",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_named_code_has_its_name() {
        for code in super::NOT_PRIMARY {
            assert!(super::name(code).is_some(), "{code}");
        }
        assert_eq!(super::name(super::DUPLICATE_KEY), Some("DuplicateKey"));
        assert_eq!(super::name(1), None);
    }
}
