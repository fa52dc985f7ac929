//! A client's handshake metadata (`driver.name`, `driver.version`) said for people, as the text
//! reports print it: `pymongo 4.20.0 (C extension)`, `mongosh 2.12.0 on Node.js driver 7.9.0`.
//! The JSON keeps the raw strings.
//!
//! Drivers write wrappers after the driver they wrap, joined by `|` in both the name and the
//! version (`nodejs|mongosh` `7.9.0|2.12.0`); the PHP extension joins libmongoc and itself with
//! ` / ` (`mongoc / ext-mongodb:PHP ` `1.23.1 / 1.15.0 `).

/// The driver's own names, for people.
fn base_name(name: &str) -> &str {
    match name {
        "nodejs" => "Node.js driver",
        "PyMongo" => "pymongo",
        "mongo-rust-driver" => "Rust driver",
        "mongo-java-driver" => "Java driver",
        "mongo-go-driver" => "Go driver",
        "mongo-csharp-driver" => ".NET driver",
        "mongo-ruby-driver" => "Ruby driver",
        "mongoc" => "libmongoc",
        other => other,
    }
}

fn with_version(name: &str, version: &str) -> String {
    if version.is_empty() {
        name.to_owned()
    } else {
        format!("{name} {version}")
    }
}

/// `name` and `version` as written in a hello, said for people.
pub fn for_people(name: &str, version: &str) -> String {
    let (name, version) = (name.trim(), version.trim());
    if name.contains(" / ") {
        return joined_by_slash(name, version);
    }
    let names: Vec<&str> = name.split('|').map(str::trim).collect();
    let versions: Vec<&str> = version.split('|').map(str::trim).collect();
    let version_of = |i: usize| versions.get(i).copied().unwrap_or("");
    let mut base = with_version(base_name(names[0]), version_of(0));
    let mut wrappers = Vec::new();
    for (i, wrapper) in names.iter().enumerate().skip(1) {
        match (names[0], *wrapper) {
            ("PyMongo", "c") => base.push_str(" (C extension)"),
            _ if wrapper.is_empty() => {}
            _ => wrappers.push(with_version(wrapper, version_of(i))),
        }
    }
    wrappers.reverse();
    wrappers.push(base);
    wrappers.join(" on ")
}

/// `mongoc / ext-mongodb:PHP ` `1.23.1 / 1.15.0 `: the outermost part first.
fn joined_by_slash(name: &str, version: &str) -> String {
    let names: Vec<&str> = name.split(" / ").map(str::trim).collect();
    let versions: Vec<&str> = version.split(" / ").map(str::trim).collect();
    let mut parts: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let n = match n.split_once(':') {
                Some((ext, lang)) if !lang.is_empty() => format!("{lang} {ext}"),
                _ => base_name(n).to_owned(),
            };
            with_version(&n, versions.get(i).copied().unwrap_or(""))
        })
        .collect();
    parts.reverse();
    parts.join(" on ")
}

/// A label `NAME VERSION`, optionally followed by ` (APPLICATION)` (how `analyze` groups
/// connections), said for people; a label it cannot split is returned as it is.
pub fn label_for_people(label: &str) -> String {
    let bytes = label.as_bytes();
    for (i, _) in label.match_indices(' ') {
        if !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            continue;
        }
        let (name, after) = (&label[..i], &label[i + 1..]);
        let (version, rest) = match after.find(" (") {
            Some(at) => after.split_at(at),
            None => (after, ""),
        };
        let separators = |s: &str| (s.matches('|').count(), s.matches(" / ").count());
        if separators(name) == separators(version.trim_end()) {
            let people = for_people(name, version);
            // `mongosh 2.12.0 on ... (mongosh 2.12.0)`: the application said once.
            let app = rest.trim().trim_start_matches('(').trim_end_matches(')');
            if !app.is_empty() && people.contains(app) {
                return people;
            }
            return format!("{people}{rest}");
        }
    }
    label.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_clients_read_as_people_name_them() {
        let cases = [
            ("PyMongo|c", "4.20.0|", "pymongo 4.20.0 (C extension)"),
            (
                "nodejs|mongosh",
                "7.9.1|2.12.0",
                "mongosh 2.12.0 on Node.js driver 7.9.1",
            ),
            ("nodejs", "6.22.0", "Node.js driver 6.22.0"),
            ("mongo-rust-driver", "3.9.1", "Rust driver 3.9.1"),
            (
                "mongoc / ext-mongodb:PHP ",
                "1.23.1 / 1.15.0 ",
                "PHP ext-mongodb 1.15.0 on libmongoc 1.23.1",
            ),
            ("somedriver", "", "somedriver"),
        ];
        for (name, version, want) in cases {
            assert_eq!(for_people(name, version), want, "{name} {version}");
            let label = format!("{name} {version}");
            if !version.is_empty() {
                assert_eq!(label_for_people(&label), want, "{label}");
                assert_eq!(
                    label_for_people(&format!("{label} (app 1.0)")),
                    format!("{want} (app 1.0)"),
                );
            }
        }
        assert_eq!(
            label_for_people("nodejs|mongosh 7.9.0|2.12.0 (mongosh 2.12.0)"),
            "mongosh 2.12.0 on Node.js driver 7.9.0"
        );
        assert_eq!(label_for_people("unknown"), "unknown");
        assert_eq!(
            label_for_people("(other connections)"),
            "(other connections)"
        );
    }
}
