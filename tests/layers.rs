//! The layers of the code, held by a check: reads every `use` and every `crate::` / `super::` /
//! `mongotape::` path of `src/`, builds the graph of modules at each folder, and fails, naming the
//! cycle and a line that makes it, when modules of one folder import each other in a circle.
//!
//! For `src/`, `src/replay/` and `src/report/` the order is also declared, as one line
//! `//! Layers, bottom up: a < b c < d` in the folder's map (`lib.rs`, `mod.rs`) and the same
//! line in `docs/architecture.md`: every import must point to a lower layer, and every module of
//! the folder must stand in the line. Test code (`#[cfg(test)]` modules, `tests.rs` files) is left
//! out: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const DECLARED: [(&str, &str); 3] = [
    ("src", "src/lib.rs"),
    ("src/replay", "src/replay/mod.rs"),
    ("src/report", "src/report/mod.rs"),
];
const LAYERS_PREFIX: &str = "Layers, bottom up:";

/// One reference from a file to a module path, with where it stands.
struct Reference {
    from: Vec<String>,
    to: Vec<String>,
    at: String,
}

#[path = "common/source_tree.rs"]
mod source_tree;
use source_tree::rust_files;

/// The module path of a file: `src/replay/route/op.rs` is `replay::route::op`; `mod.rs`, `lib.rs`
/// and `main.rs` are their folder's module.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .skip(1)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_stem().unwrap().to_string_lossy();
    name == "tests" || name.ends_with("_tests")
}

/// The code of a file without comments and without `#[cfg(test)]` items.
fn code_of(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    for line in text.lines() {
        let line = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    while let Some(at) = code.find("#[cfg(test)]") {
        let rest = &code[at..];
        let end = match (rest.find(';'), rest.find('{')) {
            (Some(semi), Some(brace)) if semi < brace => at + semi + 1,
            (_, Some(brace)) => at + brace + matching_brace(&rest[brace..]),
            (Some(semi), None) => at + semi + 1,
            (None, None) => code.len(),
        };
        code.replace_range(at..end, "");
    }
    code
}

/// The length up to and including the brace that closes the one `s` starts with.
fn matching_brace(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// Every path a `use` tree names: `a::{b, c::{d, e as f}}` gives `a::b`, `a::c::d`, `a::c::e`.
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or("").trim();
        return vec![path.trim_end_matches("::self").to_string()];
    };
    let prefix = tree[..open].trim().trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        for path in expand_use(part) {
            if path == "self" || path.is_empty() {
                out.push(prefix.to_string());
            } else if prefix.is_empty() {
                out.push(path);
            } else {
                out.push(format!("{prefix}::{path}"));
            }
        }
    }
    out
}

/// A path as an absolute module path of the library (or of the binary, for `src/cli`).
fn resolve(module: &[String], path: &str) -> Option<Vec<String>> {
    let mut segs = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let first = segs.next()?;
    let mut abs: Vec<String> = match first {
        "crate" | "mongotape" => Vec::new(),
        "super" | "self" => {
            let mut cur = module.to_vec();
            if first == "super" {
                cur.pop()?;
            }
            cur
        }
        _ => return None,
    };
    for s in segs {
        match s {
            "super" => {
                abs.pop()?;
            }
            "self" => {}
            s if s
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '*') =>
            {
                abs.push(s.to_string())
            }
            _ => break,
        }
    }
    Some(abs)
}

fn references(file: &Path, rel: &Path) -> Vec<Reference> {
    let module = module_of(rel);
    let code = code_of(&std::fs::read_to_string(file).unwrap());
    let mut refs = Vec::new();
    let mut add = |path: &str, line: usize| {
        if let Some(to) = resolve(&module, path) {
            refs.push(Reference {
                from: module.clone(),
                to,
                at: format!("{}:{}: {}", rel.display(), line, path.trim()),
            });
        }
    };
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut rest = 0;
    while let Some(found) = code[rest..].find("use ") {
        let at = rest + found;
        rest = at + 4;
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        for path in expand_use(&code[at + 4..at + end]) {
            add(&path, line_of(at));
        }
    }
    for anchor in ["crate::", "super::", "mongotape::"] {
        let mut rest = 0;
        while let Some(found) = code[rest..].find(anchor) {
            let at = rest + found;
            rest = at + anchor.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            add(code[at..at + len].trim_end_matches(':'), line_of(at));
        }
    }
    refs
}

/// The modules a folder holds: its `.rs` files (but `mod.rs`) and its subfolders.
fn children(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_stem()?.to_string_lossy().into_owned();
            let keep = path.is_dir()
                || (path.extension().is_some_and(|x| x == "rs")
                    && !matches!(name.as_str(), "mod" | "lib" | "main")
                    && !is_test_file(&path));
            keep.then_some(name)
        })
        .collect()
}

type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The imports between the modules of one folder, each edge with one line that makes it.
fn folder_graph(folder: &[String], kids: &BTreeSet<String>, refs: &[Reference]) -> Graph {
    let mut g = Graph::new();
    let n = folder.len();
    for r in refs {
        if r.from.len() <= n || r.to.len() <= n || r.from[..n] != *folder || r.to[..n] != *folder {
            continue;
        }
        let (a, b) = (&r.from[n], &r.to[n]);
        if a != b && kids.contains(a) && kids.contains(b) {
            g.entry(a.clone())
                .or_default()
                .entry(b.clone())
                .or_insert_with(|| r.at.clone());
        }
    }
    g
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(t: &mut T<'g>, v: &'g str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        for w in t.g.get(v).into_iter().flat_map(|m| m.keys()) {
            if !t.index.contains_key(w.as_str()) {
                visit(t, w);
                let lw = t.low[w.as_str()];
                t.low.insert(v, t.low[v].min(lw));
            } else if t.stack.contains(&w.as_str()) {
                let iw = t.index[w.as_str()];
                t.low.insert(v, t.low[v].min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                t.out.push(c);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn all_references() -> Vec<Reference> {
    let root = Path::new(ROOT);
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files
        .iter()
        .map(|f| (f, f.strip_prefix(root).unwrap()))
        .filter(|(_, rel)| !is_test_file(rel))
        .flat_map(|(f, rel)| references(f, rel))
        .collect()
}

fn folders() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("src")];
    let mut i = 0;
    while i < out.len() {
        let dir = Path::new(ROOT).join(&out[i]);
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().is_dir() {
                out.push(out[i].join(e.file_name()));
            }
        }
        i += 1;
    }
    out
}

fn folder_module(folder: &Path) -> Vec<String> {
    folder
        .components()
        .skip(1)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn no_folder_has_modules_that_import_each_other_in_a_circle() {
    let refs = all_references();
    assert!(
        refs.len() > 500,
        "only {} references read: the reader is broken",
        refs.len()
    );
    let mut found = Vec::new();
    for folder in folders() {
        let kids = children(&Path::new(ROOT).join(&folder));
        let g = folder_graph(&folder_module(&folder), &kids, &refs);
        for c in cycles(&g) {
            let mut why = Vec::new();
            for a in &c {
                for (b, at) in g.get(a).into_iter().flatten() {
                    if c.contains(b) {
                        why.push(format!("    {a} -> {b}   ({at})"));
                    }
                }
            }
            found.push(format!(
                "{}/: {} import each other:\n{}",
                folder.display(),
                c.join(", "),
                why.join("\n")
            ));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

/// The `Layers, bottom up:` line of a file: each layer's modules, bottom first.
fn declared_layers(text: &str, path: &str) -> (String, Vec<Vec<String>>) {
    let line = text
        .lines()
        .find(|l| l.contains(LAYERS_PREFIX))
        .unwrap_or_else(|| panic!("{path} has no line `{LAYERS_PREFIX} ...`"));
    let layers = line[line.find(LAYERS_PREFIX).unwrap() + LAYERS_PREFIX.len()..]
        .trim()
        .trim_end_matches('.')
        .split('<')
        .map(|layer| {
            layer
                .split_whitespace()
                .map(|m| m.trim_matches('`').to_string())
                .collect()
        })
        .collect();
    (line.trim_start_matches("//!").trim().to_string(), layers)
}

#[test]
fn imports_point_down_the_declared_layers_and_the_docs_say_the_same() {
    let refs = all_references();
    let architecture = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let mut wrong = Vec::new();
    for (folder, map) in DECLARED {
        let text = std::fs::read_to_string(Path::new(ROOT).join(map)).unwrap();
        let (line, layers) = declared_layers(&text, map);
        let doc_line = format!("{folder}/: {line}");
        assert!(
            architecture.contains(&doc_line),
            "docs/architecture.md should hold the line\n  {doc_line}\n(as {map} declares it)"
        );
        let floor: BTreeMap<&str, usize> = layers
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.iter().map(move |m| (m.as_str(), i)))
            .collect();
        let kids = children(&Path::new(ROOT).join(folder));
        for kid in &kids {
            if !floor.contains_key(kid.as_str()) {
                wrong.push(format!("{folder}/{kid} stands in no layer of {map}"));
            }
        }
        for name in floor.keys() {
            if !kids.contains(*name) {
                wrong.push(format!(
                    "{map} names {name}, which is no module of {folder}/"
                ));
            }
        }
        let g = folder_graph(&folder_module(Path::new(folder)), &kids, &refs);
        for (a, targets) in &g {
            for (b, at) in targets {
                if let (Some(fa), Some(fb)) = (floor.get(a.as_str()), floor.get(b.as_str())) {
                    if fb >= fa {
                        wrong.push(format!(
                            "{folder}/{a} (layer {}) imports {b} (layer {}), not below it: {at}",
                            fa + 1,
                            fb + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_reader_follows_use_trees_and_relative_paths() {
    let paths = expand_use("super::{a, b::{c, d as e}, self}");
    assert_eq!(paths, ["super::a", "super::b::c", "super::b::d", "super"]);
    let module: Vec<String> = ["replay", "measure", "knee"].map(String::from).to_vec();
    assert_eq!(
        resolve(&module, "super::super::pacing::Pacing").unwrap(),
        ["replay", "pacing", "Pacing"]
    );
    assert_eq!(
        resolve(&module, "crate::wire::reply").unwrap(),
        ["wire", "reply"]
    );
    let code =
        code_of("use a::b; // crate::x\n#[cfg(test)]\nmod tests {\n use crate::y;\n}\nfn f() {}\n");
    assert!(!code.contains("crate::x") && !code.contains("crate::y") && code.contains("fn f"));
    // A cycle is found and named.
    let mut g = Graph::new();
    g.entry("a".into())
        .or_default()
        .insert("b".into(), "x".into());
    g.entry("b".into())
        .or_default()
        .insert("a".into(), "y".into());
    g.entry("b".into())
        .or_default()
        .insert("c".into(), "z".into());
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
}
