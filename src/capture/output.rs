//! Creating the files mongotape writes (captures, segments, reports) without ever writing through
//! a symbolic link: a new file is created with `O_CREAT|O_EXCL` (which refuses any existing name,
//! a dangling link too), and a file that may be replaced is opened with `O_NOFOLLOW`. A planted
//! link then makes the command fail, naming the path, instead of writing into whatever it points at.
//! A file replaced (`--force`, a report) is a new file under the name, never the old one truncated,
//! so a hard link's other names keep their bytes; and no output may be one of the command's inputs
//! ([`guard`]): the same file under any name, or a segment of an input folder.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
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
    #[error("refusing to write {output}: it is the input {input} (give the output another name)")]
    IsInput { output: PathBuf, input: PathBuf },
    #[error(
        "refusing to write {output}: it would be a segment of the input folder {folder} \
         (give the output another folder or name)"
    )]
    InInputFolder { output: PathBuf, folder: PathBuf },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl OutputError {
    /// An output named over an input: the command line's mistake, said before anything is done.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            OutputError::IsInput { .. } | OutputError::InInputFolder { .. }
        )
    }
}

/// Names a folder's readers take as its files: capture segments (`capture::set`) and the
/// `.bin` files of a mongod traffic recording (`import::mongod`).
const FOLDER_MEMBERS: [&str; 3] = [".mtape", ".mtape.partial", ".bin"];

/// A file's identity across its names: device and inode.
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The files and folders a command reads, by identity, which its outputs must not be.
#[derive(Debug, Default)]
pub struct Inputs {
    files: Vec<((u64, u64), PathBuf)>,
    folders: Vec<((u64, u64), PathBuf)>,
}

impl Inputs {
    /// The inputs named on a command line; a path that does not exist is left to its reader.
    pub fn of(paths: &[PathBuf]) -> Inputs {
        let mut inputs = Inputs::default();
        for path in paths {
            let Some(id) = identity(path) else { continue };
            match std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                true => inputs.folders.push((id, path.clone())),
                false => inputs.files.push((id, path.clone())),
            }
        }
        inputs
    }

    /// Refuses `output` when it is an input under any name (a hard link, a symbolic link, a
    /// relative path) or a file its input folder's reader would take.
    pub fn check(&self, output: &Path) -> Result<(), OutputError> {
        if let Some(id) = identity(output) {
            if let Some((_, input)) = self.files.iter().chain(&self.folders).find(|f| f.0 == id) {
                return Err(OutputError::IsInput {
                    output: output.to_owned(),
                    input: input.clone(),
                });
            }
        }
        let name = output.file_name().map(|n| n.to_string_lossy());
        if !name.is_some_and(|n| FOLDER_MEMBERS.iter().any(|m| n.ends_with(m))) {
            return Ok(());
        }
        let parent = output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        match identity(parent).and_then(|id| self.folders.iter().find(|f| f.0 == id)) {
            Some((_, folder)) => Err(OutputError::InInputFolder {
                output: output.to_owned(),
                folder: folder.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// The inputs of this process's command, checked at every output created.
static GUARDED: Mutex<Vec<Inputs>> = Mutex::new(Vec::new());

/// Declares the files a command reads and checks the outputs it will write against them (so the
/// mistake is said before any work); every output created afterwards is checked again.
pub fn guard(inputs: &[PathBuf], outputs: &[Option<&Path>]) -> Result<(), OutputError> {
    let inputs = Inputs::of(inputs);
    for output in outputs.iter().flatten() {
        inputs.check(output)?;
    }
    GUARDED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(inputs);
    Ok(())
}

fn check_guarded(output: &Path) -> Result<(), OutputError> {
    let guarded = GUARDED.lock().unwrap_or_else(|p| p.into_inner());
    guarded.iter().try_for_each(|inputs| inputs.check(output))
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

/// Opens a new file `path` for writing, created with `mode` (unix permission bits). With
/// [`Existing::Replace`] an existing regular file's name is removed first (the new file is a new
/// inode: the old one's other names, hard links, keep their bytes); a symbolic link is refused
/// either way, dangling or not, and so is an input of the command ([`guard`]).
pub fn create(path: &Path, existing: Existing, mode: u32) -> Result<File, OutputError> {
    check_guarded(path)?;
    if existing == Existing::Replace {
        remove_existing(path)?;
    }
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
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

/// Removes the regular file `path` so a new one can take its name; refuses a link or a non-file.
fn remove_existing(path: &Path) -> Result<(), OutputError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let path = path.to_owned();
    if meta.file_type().is_symlink() {
        return Err(OutputError::Symlink { path });
    }
    if !meta.is_file() {
        return Err(OutputError::NotAFile { path });
    }
    std::fs::remove_file(&path).map_err(|source| OutputError::Io {
        action: "replace",
        path,
        source,
    })
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

/// Writes a report: `bytes` into a new file renamed over `path` once whole (a regular file is
/// replaced, its hard links keep their bytes; a link or a non-file is refused).
pub fn write_report(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    check_guarded(path)?;
    refuse_symlink(path)?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(OutputError::NotAFile {
            path: path.to_owned(),
        });
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let fresh = path.with_file_name(format!(".{name}.{}.new", std::process::id()));
    let written = create(&fresh, Existing::Replace, 0o644).and_then(|mut file| {
        file.write_all(bytes)
            .and_then(|()| file.flush())
            .map_err(|source| OutputError::Io {
                action: "write",
                path: fresh.clone(),
                source,
            })
    });
    let renamed = written.and_then(|()| {
        std::fs::rename(&fresh, path).map_err(|source| OutputError::Io {
            action: "write",
            path: path.to_owned(),
            source,
        })
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&fresh);
    }
    renamed
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

    #[test]
    fn a_replaced_file_is_a_new_file_and_its_hard_link_keeps_its_bytes() {
        let d = dir();
        let path = d.path().join("out.mtape");
        let other = d.path().join("other-name");
        std::fs::write(&path, b"precious").unwrap();
        std::fs::hard_link(&path, &other).unwrap();
        let mut f = create(&path, Existing::Replace, 0o600).unwrap();
        f.write_all(b"new").unwrap();
        write_report(&other, b"report").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read(&other).unwrap(), b"report");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "a temporary file was left behind");
    }

    #[test]
    fn an_input_under_any_name_and_a_member_of_an_input_folder_are_refused() {
        let d = dir();
        let input = d.path().join("big.mtape");
        std::fs::write(&input, b"capture").unwrap();
        let linked = d.path().join("linked.mtape");
        std::fs::hard_link(&input, &linked).unwrap();
        let folder = d.path().join("rec");
        std::fs::create_dir(&folder).unwrap();
        let inputs = Inputs::of(&[input.clone(), folder.clone()]);
        for out in [input.clone(), linked, d.path().join(".").join("big.mtape")] {
            let e = inputs.check(&out).unwrap_err();
            assert!(
                matches!(e, OutputError::IsInput { .. }) && e.is_usage(),
                "{e}"
            );
            assert!(e.to_string().contains("big.mtape"), "{e}");
        }
        for name in ["slice.mtape", "x.mtape.partial", "y.bin"] {
            let e = inputs.check(&folder.join(name)).unwrap_err();
            assert!(matches!(e, OutputError::InInputFolder { .. }), "{e}");
        }
        inputs.check(&folder.join("report.json")).unwrap();
        inputs.check(&d.path().join("slice.mtape")).unwrap();
        assert_eq!(std::fs::read(&input).unwrap(), b"capture");
    }
}
