//! `checksum.txt` of a recording directory: one line per finished `.bin` file, its path (as the
//! server wrote it, absolute on the recording host), a tab, and the CRC-32C of the file's bytes
//! in hexadecimal. Files are matched by name, so a directory copied elsewhere still verifies.

use crate::import::{input, ImportError};
use std::collections::HashMap;
use std::io::Read;

/// The longest `checksum.txt` read (a line per file: far more files than any recording has).
const MAX_LEN: u64 = 16 * 1024 * 1024;

/// File name to the CRC-32C `checksum.txt` gives it. Lines that do not parse are skipped; a name
/// listed twice keeps its last value (the server appends).
pub fn parse(text: &str) -> HashMap<String, u32> {
    let mut sums = HashMap::new();
    for line in text.lines() {
        let line = line.trim_end();
        let Some((path, hex)) = line.rsplit_once(['\t', ' ']) else {
            continue;
        };
        let hex = hex.trim().trim_start_matches("0x");
        let Ok(value) = u64::from_str_radix(hex, 16) else {
            continue;
        };
        let Ok(value) = u32::try_from(value) else {
            continue;
        };
        let name = path.trim().rsplit(['/', '\\']).next().unwrap_or_default();
        if !name.is_empty() {
            sums.insert(name.to_owned(), value);
        }
    }
    sums
}

/// Reads `checksum.txt` of a directory: `None` when there is none. Only a regular file is read
/// (a FIFO of that name would block for ever), and one past [`MAX_LEN`] is refused rather than
/// read in part: a cut list would verify some files and call the rest unlisted.
pub fn read(dir: &std::path::Path) -> Result<Option<HashMap<String, u32>>, ImportError> {
    let path = dir.join("checksum.txt");
    let io = |source| ImportError::Open {
        path: path.clone(),
        source,
    };
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    input::check(&path, &meta)?;
    if meta.len() > MAX_LEN {
        return Err(ImportError::UnknownFormat {
            path: path.clone(),
            what: format!(
                "{} bytes, more than the {} MiB a checksum list of any recording takes",
                meta.len(),
                MAX_LEN >> 20
            ),
        });
    }
    let file = input::open(&path)?;
    let mut text = Vec::new();
    file.take(MAX_LEN + 1).read_to_end(&mut text).map_err(io)?;
    if text.len() as u64 > MAX_LEN {
        return Err(ImportError::UnknownFormat {
            path: path.clone(),
            what: format!("grew past {} MiB while being read", MAX_LEN >> 20),
        });
    }
    Ok(Some(parse(&String::from_utf8_lossy(&text))))
}

/// A reader that keeps the CRC-32C and the count of the bytes read through it.
pub struct CrcReader<R> {
    inner: R,
    pub crc: u32,
    pub bytes: u64,
}

impl<R: Read> CrcReader<R> {
    pub fn new(inner: R) -> CrcReader<R> {
        CrcReader {
            inner,
            crc: 0,
            bytes: 0,
        }
    }

    /// Reads the rest of the input, so that the CRC covers all of it.
    pub fn drain(&mut self) -> std::io::Result<()> {
        std::io::copy(self, &mut std::io::sink()).map(|_| ())
    }
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_file_name_in_any_case_and_padding() {
        let text = "/data/rec/1700000000000.bin\tdeadbeef\n\
                    /data/rec/1700000000100.bin\t0000abcd\n\
                    garbage line\n\
                    C:\\rec\\1700000000200.bin 1F\n\
                    /x/too-big.bin\t1ffffffff\n";
        let sums = parse(text);
        assert_eq!(sums["1700000000000.bin"], 0xdead_beef);
        assert_eq!(sums["1700000000100.bin"], 0xabcd);
        assert_eq!(sums["1700000000200.bin"], 0x1f);
        assert_eq!(sums.len(), 3);
    }

    #[test]
    fn the_reader_computes_crc32c_across_reads() {
        let data = b"123456789".repeat(1000);
        let mut r = CrcReader::new(&data[..]);
        let mut first = [0u8; 7];
        r.read_exact(&mut first).unwrap();
        r.drain().unwrap();
        assert_eq!(r.crc, crc32c::crc32c(&data));
        assert_eq!(r.bytes, data.len() as u64);
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }
}
