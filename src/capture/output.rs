//! Creating the files mongotape writes (captures, segments, reports) without ever writing through
//! a symbolic link: a new file is created with `O_CREAT|O_EXCL` (which refuses any existing name,
//! a dangling link too), and a file that may be replaced is opened with `O_NOFOLLOW`. A planted
//! link then makes the command fail, naming the path, instead of writing into whatever it points at.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why an output file could not be created.
#[derive(Debug, Error)]
pub enum OutputError {
    #[error("{path} is a symbolic link: refusing to write through it")]
    Symlink { path: PathBuf },
    #[error("{path} exists")]
    Exists { path: PathBuf },
    #[error("{path} is not a regular file: refusing to write to it")]
    NotAFile { path: PathBuf },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whether an existing regular file of the same name may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Refuse,
    Replace,
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Opens `path` for writing, created with `mode` (unix permission bits) when new. With
/// [`Existing::Replace`] an existing regular file is truncated (its mode is the caller's to
/// change); a symbolic link is refused either way, dangling or not.
pub fn create(path: &Path, existing: Existing, mode: u32) -> Result<File, OutputError> {
    let mut opts = OpenOptions::new();
    opts.write(true);
    match existing {
        Existing::Refuse => opts.create_new(true),
        Existing::Replace => opts.create(true).truncate(true),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: a FIFO planted at the name fails at once instead of hanging the open.
        opts.mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let file = opts.open(path).map_err(|source| {
        // O_EXCL answers EEXIST and O_NOFOLLOW ELOOP for a link: both are said as the link.
        if is_symlink(path) {
            OutputError::Symlink {
                path: path.to_owned(),
            }
        } else if source.kind() == std::io::ErrorKind::AlreadyExists {
            OutputError::Exists {
                path: path.to_owned(),
            }
        } else {
            OutputError::Io {
                action: "create",
                path: path.to_owned(),
                source,
            }
        }
    })?;
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(file),
        Ok(_) => Err(OutputError::NotAFile {
            path: path.to_owned(),
        }),
        Err(source) => Err(OutputError::Io {
            action: "inspect",
            path: path.to_owned(),
            source,
        }),
    }
}

/// Refuses `path` when it is a symbolic link; says nothing about anything else (for the checks
/// made before a recording starts, so a planted link is said before any traffic is taken).
pub fn refuse_symlink(path: &Path) -> Result<(), OutputError> {
    if is_symlink(path) {
        return Err(OutputError::Symlink {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Writes a report: `bytes` into `path`, replacing a regular file, never through a link.
pub fn write_report(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut file = create(path, Existing::Replace, 0o644)?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|source| OutputError::Io {
            action: "write",
            path: path.to_owned(),
            source,
        })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_dangling_link_is_refused_and_nothing_is_created_behind_it() {
        let d = dir();
        let target = d.path().join("elsewhere");
        let link = d.path().join("out.mtape");
        symlink(&target, &link).unwrap();
        for existing in [Existing::Refuse, Existing::Replace] {
            let e = create(&link, existing, 0o600).unwrap_err();
            assert!(matches!(e, OutputError::Symlink { .. }), "{e}");
            assert!(
                e.to_string()
                    .ends_with("out.mtape is a symbolic link: refusing to write through it"),
                "{e}"
            );
        }
        assert!(!target.exists(), "a file was created through the link");
    }

    #[test]
    fn a_link_to_a_file_leaves_the_file_and_its_mode_alone() {
        let d = dir();
        let target = d.path().join("precious");
        std::fs::write(&target, b"keep").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = d.path().join("report.json");
        symlink(&target, &link).unwrap();
        let e = write_report(&link, b"over").unwrap_err();
        assert!(matches!(e, OutputError::Symlink { .. }), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    #[test]
    fn a_regular_file_is_refused_or_replaced_as_asked() {
        let d = dir();
        let path = d.path().join("x");
        std::fs::write(&path, b"old contents").unwrap();
        let e = create(&path, Existing::Refuse, 0o600).unwrap_err();
        assert!(matches!(e, OutputError::Exists { .. }), "{e}");
        write_report(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let fresh = d.path().join("fresh");
        create(&fresh, Existing::Refuse, 0o600).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
