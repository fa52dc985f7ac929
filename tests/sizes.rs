//! Files small enough to read in one sitting, functions short enough to see whole: fails, naming
//! them all, on a file of `src/` over 500 lines or a function of `src/` over 80 (house style:
//! "when one grows past that, it is two concepts"). Test code (`#[cfg(test)]` items, `tests.rs`
//! files and `tests/` folders) is left out of the function check: a test is one scenario.
//!
//! Functions are found in the code with comments, strings and character literals blanked out: a
//! line that declares a `fn` with a body, measured from that line to the one of its closing brace.

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 80;

#[path = "common/source_tree.rs"]
mod source_tree;
use source_tree::{blank, char_literal_len, rust_files};

fn is_test_file(rel: &Path) -> bool {
    rel.file_stem().is_some_and(|s| s == "tests")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

/// The name of the function a line of code declares, if it does.
fn declared_fn(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace().peekable();
    while let Some(w) = words.next() {
        match w {
            "fn" => {
                let name = words.next()?;
                let end = name
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(name.len());
                return Some(&name[..end]).filter(|n| !n.is_empty());
            }
            "const" | "async" | "unsafe" | "default" | "extern" | "pub" => {}
            w if w.starts_with("pub(") || w.starts_with('"') => {}
            _ => return None,
        }
    }
    None
}

/// The functions of `code` (blanked) with their first line and length in lines; `skip` says which
/// lines are test code.
fn functions(code: &str, skip: &[bool]) -> Vec<(String, usize, usize)> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(code.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |at: usize| starts.partition_point(|&s| s <= at) - 1;
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let Some(name) = declared_fn(line) else {
            continue;
        };
        if skip.get(n).copied().unwrap_or(false) {
            continue;
        }
        let rest = &code[starts[n]..];
        let Some(open) = rest.find(['{', ';']) else {
            continue;
        };
        if rest.as_bytes()[open] == b';' {
            continue; // a declaration without a body
        }
        let mut depth = 0usize;
        let mut close = None;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(starts[n] + open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        if let Some(close) = close {
            out.push((name.to_owned(), n + 1, line_of(close) - n + 1));
        }
    }
    out
}

/// Which lines of `code` (blanked) belong to a `#[cfg(test)]` item.
fn test_lines(code: &str) -> Vec<bool> {
    let mut skip = vec![false; code.lines().count() + 1];
    let line_of = |at: usize| code[..at].matches('\n').count();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|p| from + p) {
        let rest = &code[at..];
        let end = match (rest.find(';'), rest.find('{')) {
            (Some(semi), Some(brace)) if semi < brace => at + semi,
            (_, Some(brace)) => {
                let mut depth = 0usize;
                let mut end = code.len() - 1;
                for (i, c) in rest[brace..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + brace + i;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(semi), None) => at + semi,
            (None, None) => code.len() - 1,
        };
        for s in &mut skip[line_of(at)..=line_of(end)] {
            *s = true;
        }
        from = end + 1;
    }
    skip
}

#[test]
fn no_file_over_500_lines_and_no_function_over_80() {
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut files);
    assert!(files.len() > 100, "{} files under src/", files.len());
    let mut over = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(ROOT).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            over.push(format!("{}: {lines} lines", rel.display()));
        }
        if is_test_file(rel) {
            continue;
        }
        let code = blank(&text);
        for (name, at, len) in functions(&code, &test_lines(&code)) {
            if len > MAX_FN_LINES {
                over.push(format!("{}:{at}: fn {name}, {len} lines", rel.display()));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over {MAX_FILE_LINES} lines a file or {MAX_FN_LINES} a function (split by concept):\n  {}",
        over.join("\n  ")
    );
}

#[test]
fn the_reader_sees_through_strings_comments_and_lifetimes() {
    let text = r##"
pub(crate) async fn outer<'a>(x: &'a str) -> &'a str {
    let s = "fn fake() { {{";
    let c = '{';
    let r = r#"}"#;
    // fn commented() {
    /* } */
    x
}

fn declared();

#[cfg(test)]
mod tests {
    fn long_test() {
    }
}
"##;
    let code = blank(text);
    let found = functions(&code, &test_lines(&code));
    assert_eq!(found, vec![("outer".to_string(), 2, 8)]);
    assert_eq!(char_literal_len(b"'\\n'"), Some(4));
    assert_eq!(char_literal_len(b"'\\''"), Some(4));
    assert_eq!(char_literal_len("'é' ".as_bytes()), Some(4));
    assert_eq!(char_literal_len(b"'a>"), None);
}
