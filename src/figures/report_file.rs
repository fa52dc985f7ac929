//! Reading a report file back (`merge`, `compare`): one reader, one size bound. A report is a few
//! hundred KiB to a few tens of MiB (10,000 shapes with their histograms); parsed, its JSON
//! takes 20-50 times its size, so a file past the bound is refused before it is read.

use std::io::Read;
use std::path::Path;

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
    #[error("report {path} is larger than any report ({MAX_REPORT_BYTES} bytes at most): {size}")]
    TooLarge { path: String, size: String },
}

/// The bytes of the report file at `path`, at most [`MAX_REPORT_BYTES`] of them (also when the
/// file grows while read, or is a pipe whose size is not known).
pub fn read(path: &Path) -> Result<Vec<u8>, ReportFileError> {
    let shown = || path.display().to_string();
    let failed = |source| ReportFileError::Read {
        path: shown(),
        source,
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    let len = file.metadata().map_err(failed)?.len();
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
}
