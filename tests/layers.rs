//! The layers of the code, held by a check: walks the `mod` declarations of `src/` from `lib.rs`
//! and `main.rs`, reads every `use` and every `crate::` / `super::` / `mongotape::` path, follows
//! each to the file that defines the item (through every `use` and `pub use` that passes it on),
//! builds the graph of modules at each folder, and fails, naming the cycle and a line that makes
//! it, when modules of one folder import each other in a circle.
//!
//! A folder's map (`mod.rs`, `lib.rs`, `main.rs`, or `x.rs` beside a folder `x/`) is a node of its
//! own, named by its file name: what it defines is not what its modules define.
//!
//! Every folder declares its order, as one line `//! Layers, bottom up: a < b c < d` in its map
//! and the same line in `docs/architecture.md`: every import must point to a lower layer and every
//! module of the folder must stand in the line. The map stands on top (it declares and re-exports
//! its modules), unless the line names it (`a < mod.rs < b`): then it stands in that layer, and
//! only the modules above it may import what it defines. Test code (`#[cfg(test)]` modules and
//! the files they name) is left out: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const LAYERS_PREFIX: &str = "Layers, bottom up:";

#[path = "common/source_tree.rs"]
mod source_tree;
use source_tree::{blank, rust_files};

/// The library (`lib.rs`, reached as `mongotape::`) or the binary (`main.rs` and `cli/`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Krate {
    Lib,
    Bin,
}

/// One file of a crate, reached through `mod` declarations that are not test code.
struct File {
    /// `src/replay/route/op.rs`.
    rel: String,
    krate: Krate,
    /// `["replay", "route", "op"]`.
    module: Vec<String>,
    /// The folder its own modules live in: `src/replay/route` for `route/mod.rs`,
    /// `src/figures/errors` for `figures/errors.rs`.
    dir: String,
    code: String,
    /// The names its `use` declarations bind at the top of the file, each to the path it names.
    binds: Vec<(String, String)>,
    /// Its line `Layers, bottom up: ...`, if it has one: the line and each layer's modules.
    layers: Option<(String, Vec<Vec<String>>)>,
}

/// The files of `src/`, as a crate sees them.
struct Tree {
    files: Vec<File>,
    modules: BTreeMap<(Krate, Vec<String>), usize>,
}

/// One reference from a file to the file that defines what it names, with where it stands.
struct Reference {
    from: usize,
    to: usize,
    at: String,
}

fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".rs").unwrap_or(name)
}

impl Tree {
    /// Reads the crates from their roots: `sources` maps `src/...rs` to each file's text.
    fn new(sources: &BTreeMap<String, String>) -> Tree {
        let mut tree = Tree {
            files: Vec::new(),
            modules: BTreeMap::new(),
        };
        let mut todo: Vec<(String, Krate, Vec<String>)> =
            [("src/lib.rs", Krate::Lib), ("src/main.rs", Krate::Bin)]
                .into_iter()
                .filter(|(rel, _)| sources.contains_key(*rel))
                .map(|(rel, k)| (rel.to_string(), k, Vec::new()))
                .collect();
        while let Some((rel, krate, module)) = todo.pop() {
            let layers = declared_layers(&sources[&rel]);
            let code = code_of(&sources[&rel]);
            let dir = match stem(&rel) {
                "mod" | "lib" | "main" => parent(&rel).to_string(),
                s => format!("{}/{s}", parent(&rel)),
            };
            for name in mod_declarations(&code) {
                let file = format!("{dir}/{name}.rs");
                let folder = format!("{dir}/{name}/mod.rs");
                let Some(child) = [file, folder].into_iter().find(|f| sources.contains_key(f))
                else {
                    continue;
                };
                let mut m = module.clone();
                m.push(name);
                todo.push((child, krate, m));
            }
            let binds = top_level_uses(&code)
                .into_iter()
                .flat_map(|tree| expand_use(&tree))
                .filter_map(|(path, name)| name.map(|n| (n, path)))
                .collect();
            tree.modules
                .insert((krate, module.clone()), tree.files.len());
            tree.files.push(File {
                rel,
                krate,
                module,
                dir,
                code,
                binds,
                layers,
            });
        }
        tree
    }

    fn from_disk() -> Tree {
        let root = Path::new(ROOT);
        let mut paths = Vec::new();
        rust_files(&root.join("src"), &mut paths);
        let sources = paths
            .iter()
            .map(|p| {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                (rel, std::fs::read_to_string(p).unwrap())
            })
            .collect();
        Tree::new(&sources)
    }

    /// The file that defines what an absolute path names: its module's file, or, where the name
    /// is bound there by a `use` (`pub` or not: modules below see both), the file that defines
    /// what that `use` names. `None` for a path out of the crate (`bson::Document`).
    fn definer(&self, krate: Krate, path: &[String], hops: usize) -> Option<usize> {
        let mut at = *self.modules.get(&(krate, Vec::new()))?;
        for (i, seg) in path.iter().enumerate() {
            if let Some(&m) = self.modules.get(&(krate, path[..=i].to_vec())) {
                at = m;
                continue;
            }
            let file = &self.files[at];
            let bound = file.binds.iter().find(|(name, _)| name == seg);
            let Some((_, to)) = bound.filter(|_| hops < 16) else {
                return Some(at);
            };
            let (krate, mut abs) = self.absolute(file, to)?;
            abs.extend(path[i + 1..].iter().cloned());
            return self.definer(krate, &abs, hops + 1);
        }
        Some(at)
    }

    /// A path seen from a file as an absolute module path: `crate::`, `super::`, `self::`,
    /// `mongotape::`, or one of the file's own modules (`use document::Walker` in `redact/mod.rs`).
    fn absolute(&self, file: &File, path: &str) -> Option<(Krate, Vec<String>)> {
        let first = path.split("::").next()?.trim();
        let mut child = file.module.clone();
        child.push(first.to_string());
        if self.modules.contains_key(&(file.krate, child)) {
            return resolve(file.krate, &file.module, &format!("self::{path}"));
        }
        resolve(file.krate, &file.module, path)
    }

    /// Every reference of the crate's files, each to the file that defines what it names.
    fn references(&self) -> Vec<Reference> {
        let mut refs = Vec::new();
        for (from, file) in self.files.iter().enumerate() {
            for (path, line) in paths_named(&file.code, &mod_declarations(&file.code)) {
                let Some((krate, abs)) = self.absolute(file, &path) else {
                    continue;
                };
                if let Some(to) = self.definer(krate, &abs, 0) {
                    let at = format!("{}:{}: {}", file.rel, line, path.trim());
                    refs.push(Reference { from, to, at });
                }
            }
        }
        refs
    }

    /// Every folder that holds modules, with its maps (the files whose modules live in it).
    fn folders(&self) -> BTreeMap<String, Vec<usize>> {
        let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for f in &self.files {
            out.entry(parent(&f.rel).to_string()).or_default();
        }
        for (i, f) in self.files.iter().enumerate() {
            if let Some(maps) = out.get_mut(&f.dir) {
                maps.push(i);
            }
        }
        out
    }

    /// What a file is in a folder: its map (`mod.rs`), one of its modules (`op`, or `route` for
    /// every file under `route/`), or nothing.
    fn node(&self, folder: &str, file: usize) -> Option<String> {
        let f = &self.files[file];
        if f.dir == folder {
            return Some(f.rel.rsplit('/').next()?.to_string());
        }
        let rest = f.rel.strip_prefix(folder)?.strip_prefix('/')?;
        Some(match rest.split_once('/') {
            Some((sub, _)) => sub.to_string(),
            None => stem(rest).to_string(),
        })
    }

    /// The modules a folder holds (its maps not counted).
    fn children(&self, folder: &str) -> BTreeSet<String> {
        (0..self.files.len())
            .filter(|&i| self.files[i].dir != folder)
            .filter_map(|i| self.node(folder, i))
            .collect()
    }
}

/// The code of a file without comments, literals and `#[cfg(test)]` items.
fn code_of(text: &str) -> String {
    let mut code = blank(text);
    while let Some(at) = test_attribute(&code) {
        let rest = &code[at..];
        let end = match (rest.find(';'), rest.find('{')) {
            (Some(semi), Some(brace)) if semi < brace => at + semi + 1,
            (_, Some(brace)) => at + brace + matching_brace(&rest[brace..]),
            (Some(semi), None) => at + semi + 1,
            (None, None) => code.len(),
        };
        let kept: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { c } else { ' ' })
            .collect();
        code.replace_range(at..end, &kept);
    }
    code
}

/// Where the first `#[cfg(test)]` (or `#[cfg(all(test, unix))]`, not `not(test)`) stands.
fn test_attribute(code: &str) -> Option<usize> {
    code.match_indices("#[cfg(").map(|(at, _)| at).find(|&at| {
        let attr = &code[at..at + code[at..].find(']').unwrap_or(0)];
        word_starts(attr, "test").next().is_some() && !attr.contains("not(")
    })
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `word` stands in `code` as a word of its own (not the end of a longer name).
fn word_starts<'c>(code: &'c str, word: &'c str) -> impl Iterator<Item = usize> + 'c {
    code.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| !code[..at].chars().next_back().is_some_and(is_ident))
}

/// The modules a file declares in files of their own: `mod a;`, `pub(crate) mod b;`.
fn mod_declarations(code: &str) -> Vec<String> {
    word_starts(code, "mod ")
        .filter_map(|at| {
            let rest = code[at + 4..].trim_start();
            let len = rest.find(|c: char| !is_ident(c))?;
            rest[len..]
                .trim_start()
                .starts_with(';')
                .then(|| rest[..len].to_string())
        })
        .collect()
}

/// The trees of the `use` declarations at the top level of a file (not in a function or a block).
fn top_level_uses(code: &str) -> Vec<String> {
    let mut depth_at = Vec::with_capacity(code.len() + 1);
    let mut depth = 0i32;
    for b in code.bytes() {
        depth_at.push(depth);
        match b {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            _ => {}
        }
    }
    word_starts(code, "use ")
        .filter(|&at| depth_at[at] == 0)
        .filter_map(|at| Some(code[at + 4..at + code[at..].find(';')?].to_string()))
        .collect()
}

/// Every path a `use` tree names, with the name it binds: `a::{b, c::{d, e as f}}` gives `a::b`
/// (`b`), `a::c::d` (`d`) and `a::c::e` (`f`); a glob and `as _` bind none.
fn expand_use(tree: &str) -> Vec<(String, Option<String>)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut parts = tree.split(" as ");
        let path = parts.next().unwrap_or("").trim().trim_end_matches("::self");
        let name = match parts.next().map(str::trim) {
            Some(alias) => alias,
            None => path.rsplit("::").next().unwrap_or(path),
        };
        let binds = !matches!(name, "_" | "*" | "" | "self" | "super" | "crate");
        return vec![(path.to_string(), binds.then(|| name.to_string()))];
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
        for (path, name) in expand_use(part) {
            if path == "self" || path.is_empty() {
                let name = name.or_else(|| prefix.rsplit("::").next().map(String::from));
                out.push((prefix.to_string(), name));
            } else if prefix.is_empty() {
                out.push((path, name));
            } else {
                out.push((format!("{prefix}::{path}"), name));
            }
        }
    }
    out
}

/// Every path a file's code names through `use`, as `crate::`, `super::`, `mongotape::`, or as
/// `m::` for one of its own modules `m`, with its line. A `pub use` that the file's own code does
/// not name again only passes an item on: who names it through the file reaches the item itself.
fn paths_named(code: &str, own: &[String]) -> Vec<(String, usize)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut rest = code.to_string();
    let mut uses = Vec::new();
    for at in word_starts(code, "use ") {
        let Some(end) = code[at..].find(';').map(|e| at + e) else {
            break;
        };
        let public = code[..at].trim_end().ends_with("pub") || code[..at].trim_end().ends_with(')');
        uses.push((at, public, expand_use(&code[at + 4..end])));
        rest.replace_range(at..end, &" ".repeat(end - at));
    }
    for at in word_starts(code, "mod ").collect::<Vec<_>>() {
        let end = at + code[at..].find([';', '{']).unwrap_or(0);
        rest.replace_range(at..end, &" ".repeat(end - at));
    }
    let mut out = Vec::new();
    for (at, public, paths) in uses {
        for (path, name) in paths {
            let passed_on = public
                && name.is_some_and(|n| {
                    word_starts(&rest, &n).all(|i| rest[i + n.len()..].starts_with(is_ident))
                });
            if !passed_on {
                out.push((path, line_of(at)));
            }
        }
    }
    let own: Vec<String> = own.iter().map(|m| format!("{m}::")).collect();
    let anchors = ["crate::", "super::", "mongotape::"].map(String::from);
    for anchor in anchors.iter().chain(&own) {
        for at in word_starts(&rest, anchor) {
            if rest[..at].ends_with(':') {
                continue;
            }
            let len = rest[at..]
                .find(|c: char| !(is_ident(c) || c == ':'))
                .unwrap_or(rest.len() - at);
            out.push((
                rest[at..at + len].trim_end_matches(':').to_string(),
                line_of(at),
            ));
        }
    }
    out
}

/// A path as an absolute module path of a crate, seen from a module of `krate`.
fn resolve(krate: Krate, module: &[String], path: &str) -> Option<(Krate, Vec<String>)> {
    let mut segs = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let first = segs.next()?;
    let (krate, mut abs) = match first {
        "crate" => (krate, Vec::new()),
        "mongotape" => (Krate::Lib, Vec::new()),
        "super" | "self" => {
            let mut cur = module.to_vec();
            if first == "super" {
                cur.pop()?;
            }
            (krate, cur)
        }
        _ => return None,
    };
    for s in segs {
        match s {
            "super" => {
                abs.pop()?;
            }
            "self" => {}
            "*" => break,
            s if s.chars().all(is_ident) => abs.push(s.to_string()),
            _ => break,
        }
    }
    Some((krate, abs))
}

type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The imports between the nodes of one folder (its modules and its maps), each edge with one
/// line that makes it.
fn folder_graph(tree: &Tree, folder: &str, refs: &[Reference]) -> Graph {
    let mut g = Graph::new();
    for r in refs {
        let (Some(a), Some(b)) = (tree.node(folder, r.from), tree.node(folder, r.to)) else {
            continue;
        };
        if a != b {
            g.entry(a)
                .or_default()
                .entry(b)
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

/// Every circle of imports among the nodes of any folder, each named with the lines that make it.
fn circles(tree: &Tree, refs: &[Reference]) -> Vec<String> {
    let mut found = Vec::new();
    for folder in tree.folders().keys() {
        let g = folder_graph(tree, folder, refs);
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
                "{folder}/: {} import each other:\n{}",
                c.join(", "),
                why.join("\n")
            ));
        }
    }
    found
}

/// The `Layers, bottom up:` line of a file: each layer's modules, bottom first.
fn declared_layers(text: &str) -> Option<(String, Vec<Vec<String>>)> {
    let line = text.lines().find(|l| l.contains(LAYERS_PREFIX))?;
    let layers = line[line.find(LAYERS_PREFIX)? + LAYERS_PREFIX.len()..]
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
    Some((line.trim_start_matches("//!").trim().to_string(), layers))
}

/// What breaks the declared order of every folder: a folder whose map declares none or says
/// other than `architecture`, a module in no layer or a name that is no module, an import that
/// does not point down, and a module that imports what a map defines.
fn order_faults(tree: &Tree, refs: &[Reference], architecture: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for (folder, maps) in tree.folders() {
        let declared = maps.iter().find_map(|&m| {
            let map = &tree.files[m];
            map.layers.clone().map(|d| (map.rel.clone(), d))
        });
        let Some((map, (line, layers))) = declared else {
            wrong.push(format!(
                "{folder}/ declares no order: no line `{LAYERS_PREFIX} ...` in its map"
            ));
            continue;
        };
        let doc_line = format!("{folder}/: {line}");
        if !architecture.contains(&doc_line) {
            wrong.push(format!(
                "docs/architecture.md should hold the line\n  {doc_line}\n(as {map} declares it)"
            ));
        }
        let floor: BTreeMap<&str, usize> = layers
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.iter().map(move |m| (m.as_str(), i)))
            .collect();
        let kids = tree.children(&folder);
        let map_names: Vec<String> = maps.iter().filter_map(|&m| tree.node(&folder, m)).collect();
        for kid in &kids {
            if !floor.contains_key(kid.as_str()) {
                wrong.push(format!("{folder}/{kid} stands in no layer of {map}"));
            }
        }
        for name in floor.keys() {
            if !kids.contains(*name) && !map_names.iter().any(|m| m == name) {
                wrong.push(format!(
                    "{map} names {name}, which is no module of {folder}/"
                ));
            }
        }
        for (a, targets) in &folder_graph(tree, &folder, refs) {
            for (b, at) in targets {
                match (floor.get(a.as_str()), floor.get(b.as_str())) {
                    (Some(fa), Some(fb)) if fb >= fa => wrong.push(format!(
                        "{folder}/{a} (layer {}) imports {b} (layer {}), not below it: {at}",
                        fa + 1,
                        fb + 1
                    )),
                    (Some(_), None) if !kids.contains(b) => wrong.push(format!(
                        "{folder}/{a} imports what the map {b} defines, and {map} does not name \
                         {b} in a layer below it: {at}"
                    )),
                    _ => {}
                }
            }
        }
    }
    wrong
}

#[test]
fn no_folder_has_modules_that_import_each_other_in_a_circle() {
    let tree = Tree::from_disk();
    let refs = tree.references();
    assert!(
        tree.files.len() > 200 && refs.len() > 500,
        "only {} files and {} references read: the reader is broken",
        tree.files.len(),
        refs.len()
    );
    let found = circles(&tree, &refs);
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn imports_point_down_the_declared_layers_and_the_docs_say_the_same() {
    let tree = Tree::from_disk();
    let architecture = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let wrong = order_faults(&tree, &tree.references(), &architecture);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A crate of a few files, for the checks on the checker.
fn tree_of(files: &[(&str, &str)]) -> Tree {
    let sources = files
        .iter()
        .map(|(rel, text)| (rel.to_string(), text.to_string()))
        .collect();
    Tree::new(&sources)
}

#[test]
fn a_pub_use_is_followed_to_the_file_that_defines_the_item() {
    let tree = tree_of(&[
        ("src/lib.rs", "mod x;"),
        (
            "src/x/mod.rs",
            "mod p;\nmod q;\npub use p::P;\npub use q::Q;",
        ),
        ("src/x/p.rs", "use super::Q;\npub struct P;"),
        ("src/x/q.rs", "use super::P;\npub struct Q;"),
    ]);
    let found = circles(&tree, &tree.references());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/x/: p, q import each other"),
        "{found:?}"
    );
}

#[test]
fn a_map_is_a_node_of_its_own() {
    let tree = tree_of(&[
        ("src/lib.rs", "mod x;"),
        (
            "src/x/mod.rs",
            "mod d;\nuse d::Walker;\npub struct Budget(Walker);",
        ),
        ("src/x/d.rs", "use super::Budget;\npub struct Walker;"),
    ]);
    let found = circles(&tree, &tree.references());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/x/: d, mod.rs import each other"),
        "{found:?}"
    );
}

#[test]
fn an_import_up_or_into_the_map_breaks_the_declared_order() {
    let files = |line: &str| {
        tree_of(&[
            ("src/lib.rs", "//! Layers, bottom up: x\nmod x;"),
            (
                "src/x/mod.rs",
                &format!("//! Layers, bottom up: {line}\nmod a;\nmod b;\npub struct M;"),
            ),
            ("src/x/a.rs", "use super::b::B;\npub struct A;"),
            ("src/x/b.rs", "use super::M;\npub struct B;"),
        ])
    };
    let docs = "src/: Layers, bottom up: x\n\
                src/x/: Layers, bottom up: mod.rs < b < a\n\
                src/x/: Layers, bottom up: a < b\n";
    let good = files("mod.rs < b < a");
    assert_eq!(
        order_faults(&good, &good.references(), docs),
        Vec::<String>::new()
    );
    let bad = files("a < b");
    let wrong = order_faults(&bad, &bad.references(), docs);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].starts_with("src/x/a (layer 1) imports b (layer 2)"),
        "{wrong:?}"
    );
    assert!(
        wrong[1].starts_with("src/x/b imports what the map mod.rs defines"),
        "{wrong:?}"
    );
}
