//! Reading a report file back (`merge`, `compare`): one reader, one size bound. A report is a few
//! hundred KiB to a few tens of MiB (10,000 shapes with their histograms); parsed, its JSON
//! takes 20-50 times its size, so a file past the bound is refused before it is read. A report
//! of a `schema_version` this build does not know may mean something else by the same keys: every
//! reader refuses it the same way, naming the file and the versions it reads.

use std::io::Read;
use std::path::Path;

/// The `schema_version` at the top of every JSON report (`docs/schemas/<kind>.schema.json`).
/// Raised when a key is removed or renamed or changes type; adding a key keeps it.
pub const SCHEMA_VERSION: u32 = 1;

/// The A/B report's own `schema_version` (`kind: "ab"`; `docs/ab.md`, "Schema versions"): raised
/// when a field changes meaning, not only when one is removed or renamed.
pub const AB_SCHEMA_VERSION: u32 = 3;

/// The largest report file read back.
pub const MAX_REPORT_BYTES: u64 = 64 * 1024 * 1024;

/// Why a report file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReportFileError {
    #[error("cannot read report {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("report {path} is {kind}, not a file")]
    NotAFile { path: String, kind: &'static str },
    #[error("report {path} is larger than any report ({MAX_REPORT_BYTES} bytes at most): {size}")]
    TooLarge { path: String, size: String },
    #[error(
        "report {path} has schema_version {found}; this mongotape reads schema_version {reads} \
         (and reports written before there was one): read it with the mongotape that wrote it"
    )]
    UnknownSchema {
        path: String,
        found: String,
        reads: u32,
    },
}

/// The top of a report, for its `schema_version` and `kind` alone (the other keys are skipped
/// unread).
#[derive(serde::Deserialize)]
struct Head {
    schema_version: Option<serde_json::Value>,
    kind: Option<serde_json::Value>,
}

/// Refuses a report whose `schema_version` is not its kind's ([`AB_SCHEMA_VERSION`] for an A/B
/// report, [`SCHEMA_VERSION`] for every other). A report without one
/// (written before there was one) is read; bytes that are not a JSON object are left to the
/// caller's parser to name.
fn check_schema(path: &Path, bytes: &[u8]) -> Result<(), ReportFileError> {
    let Ok(Head {
        schema_version: Some(found),
        kind,
    }) = serde_json::from_slice::<Head>(bytes)
    else {
        return Ok(());
    };
    let reads = match kind.as_ref().and_then(serde_json::Value::as_str) {
        Some("ab") => AB_SCHEMA_VERSION,
        _ => SCHEMA_VERSION,
    };
    if found.as_u64() == Some(u64::from(reads)) {
        return Ok(());
    }
    Err(ReportFileError::UnknownSchema {
        path: path.display().to_string(),
        found: found.to_string(),
        reads,
    })
}

/// The bytes of the report file at `path`, at most [`MAX_REPORT_BYTES`] of them (also when the
/// file grows while read, or is a pipe whose size is not known), of a `schema_version` this build
/// reads.
pub fn read(path: &Path) -> Result<Vec<u8>, ReportFileError> {
    let shown = || path.display().to_string();
    let failed = |source| ReportFileError::Read {
        path: shown(),
        source,
    };
    // Only a regular file: open(2) of a FIFO would block for ever.
    let kind = |meta: &std::fs::Metadata| {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let kind = match () {
            _ if t.is_file() => return Ok(()),
            _ if t.is_dir() => "a directory",
            _ if t.is_fifo() => "a FIFO (named pipe)",
            _ => "a special file",
        };
        Err(ReportFileError::NotAFile {
            path: shown(),
            kind,
        })
    };
    kind(&std::fs::metadata(path).map_err(failed)?)?;
    let file = std::fs::File::open(path).map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    kind(&meta)?;
    let len = meta.len();
    if len > MAX_REPORT_BYTES {
        return Err(ReportFileError::TooLarge {
            path: shown(),
            size: format!("{len} bytes"),
        });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(ReportFileError::TooLarge {
            path: shown(),
            size: "more bytes than that".into(),
        });
    }
    check_schema(path, &bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_bound_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_REPORT_BYTES + 1).unwrap();
        let e = read(&big).unwrap_err();
        assert!(matches!(e, ReportFileError::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("67108865 bytes"), "{e}");
        let small = dir.path().join("small.json");
        std::fs::write(&small, b"{}").unwrap();
        assert_eq!(read(&small).unwrap(), b"{}");
    }

    #[test]
    fn a_schema_version_this_build_does_not_know_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("r.json");
        for known in [
            r#"{"schema_version": 1, "a": [1]}"#,
            r#"{"schema_version": 3, "kind": "ab"}"#,
            r#"{"a": 1}"#,
            "[1]",
            "x",
        ] {
            std::fs::write(&at, known).unwrap();
            assert!(read(&at).is_ok(), "{known}");
        }
        for (unknown, shown) in [
            (
                r#"{"a": {"schema_version": 1}, "schema_version": 99}"#,
                "99",
            ),
            (r#"{"schema_version": 0}"#, "0"),
            (r#"{"schema_version": "1"}"#, r#""1""#),
        ] {
            std::fs::write(&at, unknown).unwrap();
            let e = read(&at).unwrap_err().to_string();
            let said =
                format!("r.json has schema_version {shown}; this mongotape reads schema_version 1");
            assert!(e.contains(&said), "{unknown}: {e}");
        }
        // An A/B report has a version of its own.
        std::fs::write(&at, r#"{"schema_version": 1, "kind": "ab"}"#).unwrap();
        let e = read(&at).unwrap_err().to_string();
        assert!(e.contains("this mongotape reads schema_version 3"), "{e}");
    }

    #[test]
    fn a_fifo_or_a_directory_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("shard.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read(&fifo).unwrap_err().to_string();
        assert!(
            e.contains("shard.json is a FIFO (named pipe), not a file"),
            "{e}"
        );
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a file"), "{e}");
    }
}
