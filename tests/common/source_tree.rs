//! The `.rs` files under a folder, in name order, and their code without comments and literals:
//! what `tests/layers.rs` and `tests/sizes.rs` read of `src/`. Included by path, without the rest
//! of the harness.

use std::path::{Path, PathBuf};

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// `text` with every comment, string and character literal replaced by spaces (newlines kept),
/// so that braces and `fn` inside them are not code.
pub fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            Some(find(b, i, b"\n").unwrap_or(b.len()))
        } else if rest.starts_with(b"/*") {
            Some(find(b, i + 2, b"*/").map_or(b.len(), |j| j + 2))
        } else if let Some(hashes) = raw_string_start(rest).filter(|_| !ident(i)) {
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let open = rest.iter().position(|&c| c == b'"').unwrap() + 1;
            Some(find(b, i + open, &close).map_or(b.len(), |j| j + close.len()))
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some((j + 1).min(b.len()))
        } else if rest[0] == b'\'' {
            char_literal_len(rest).map(|n| i + n)
        } else {
            None
        };
        match end {
            Some(end) => {
                blank(&mut out, i, end);
                i = end;
            }
            None => i += 1,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// `r"`, `r#"`, `br##"`...: the number of `#`.
fn raw_string_start(s: &[u8]) -> Option<usize> {
    let s = s.strip_prefix(b"b").unwrap_or(s);
    let s = s.strip_prefix(b"r")?;
    let hashes = s.iter().take_while(|&&c| c == b'#').count();
    (s.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The length of a character literal at the start of `s` (`'a'`, `'\n'`, `'\u{1F600}'`, `'é'`);
/// `None` for a lifetime.
pub fn char_literal_len(s: &[u8]) -> Option<usize> {
    if s.get(1) == Some(&b'\\') {
        // The escaped character stands at 2 (`'\''`, `'\\'`); the quote that closes is after it.
        return s.iter().skip(3).position(|&c| c == b'\'').map(|p| p + 4);
    }
    let ch = std::str::from_utf8(&s[1..s.len().min(5)])
        .or_else(|e| std::str::from_utf8(&s[1..1 + e.valid_up_to()]))
        .ok()?
        .chars()
        .next()?;
    let n = 1 + ch.len_utf8();
    (s.get(n) == Some(&b'\'')).then_some(n + 1)
}
