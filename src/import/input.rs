//! The files an import reads: regular files only, opened without blocking (a FIFO left in a
//! recording's folder, or named by mistake, would block open(2) for ever), or standard input
//! when named `-` or `/dev/stdin` (a pcap or pcapng piped in, read once as a stream: its format
//! is known from its first block, read by the packet reader itself).

use super::ImportError;
use crate::capture::reader::special_kind;
use std::fs::File;
use std::path::Path;

/// Whether `path` names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-" || path.as_os_str() == "/dev/stdin"
}

/// Opens `path` if it is a regular file (a link to one counts); anything else is refused,
/// saying what it is.
pub fn open(path: &Path) -> Result<File, ImportError> {
    let io = |source| ImportError::Open {
        path: path.to_owned(),
        source,
    };
    check(path, &std::fs::metadata(path).map_err(io)?)?;
    let file = File::open(path).map_err(io)?;
    // Checked again on what was opened, in case the name changed in between.
    check(path, &file.metadata().map_err(io)?)?;
    Ok(file)
}

/// Refuses what is not a regular file.
pub fn check(path: &Path, meta: &std::fs::Metadata) -> Result<(), ImportError> {
    match special_kind(meta) {
        None => Ok(()),
        Some(kind) => Err(ImportError::NotAFile {
            path: path.to_owned(),
            kind,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!("mongotape-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("checksum.txt");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = open(&fifo).unwrap_err().to_string();
        assert!(err.contains("is a FIFO (named pipe), not a file"), "{err}");
        assert!(err.contains("checksum.txt"), "{err}");
        let err = open(&dir).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn standard_input_is_named_by_a_dash_or_dev_stdin() {
        assert!(is_stdin(Path::new("-")));
        assert!(is_stdin(Path::new("/dev/stdin")));
        assert!(!is_stdin(Path::new("./-x")));
    }
}
