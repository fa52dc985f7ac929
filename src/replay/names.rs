//! Names a capture repeats in every request (commands, databases, collections, namespaces): each
//! distinct one is kept once, and a request and its copies hold a [`Name`] that points to it.
//!
//! A kept name lives as long as the process and is copied by reference: a name the capture reader
//! hands to a lane costs no allocation and no reference count, whose cache line would otherwise
//! travel between the reader's core and the lanes' with every request. At most [`MAX_KEPT`] names
//! of [`MAX_KEPT_BYTES`] in all are kept; past them a name is shared by reference count.

use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

/// The most distinct names kept for the process's life, and their bytes in all.
pub const MAX_KEPT: usize = 20_000;
pub const MAX_KEPT_BYTES: usize = 1 << 20;

type Set = HashSet<&'static str, foldhash::fast::RandomState>;

/// A command, database, collection or namespace name.
#[derive(Clone)]
pub enum Name {
    /// Kept for the process's life.
    Kept(&'static str),
    /// Past what is kept.
    Counted(Arc<str>),
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Name::Kept(s) => s,
            Name::Counted(s) => s,
        }
    }
}

impl From<&'static str> for Name {
    fn from(s: &'static str) -> Name {
        Name::Kept(s)
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::Kept("")
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        **self == **other
    }
}

impl Eq for Name {}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

/// The names kept by the process, and their bytes.
struct Kept {
    set: Set,
    bytes: usize,
}

fn kept() -> &'static Mutex<Kept> {
    static KEPT: OnceLock<Mutex<Kept>> = OnceLock::new();
    KEPT.get_or_init(|| {
        Mutex::new(Kept {
            set: Set::default(),
            bytes: 0,
        })
    })
}

/// One thread's view of the kept names: looked up without a lock once seen.
#[derive(Debug, Default)]
pub struct Names(Set);

impl Names {
    /// The [`Name`] for `name`.
    pub fn get(&mut self, name: &str) -> Name {
        if let Some(known) = self.0.get(name) {
            return Name::Kept(known);
        }
        let mut all = kept().lock().unwrap_or_else(|p| p.into_inner());
        let known = match all.set.get(name) {
            Some(known) => *known,
            None if all.set.len() < MAX_KEPT && all.bytes + name.len() <= MAX_KEPT_BYTES => {
                let leaked: &'static str = Box::leak(name.into());
                all.set.insert(leaked);
                all.bytes += name.len();
                leaked
            }
            None => return Name::Counted(Arc::from(name)),
        };
        drop(all);
        self.0.insert(known);
        Name::Kept(known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_kept_once_and_counted_past_the_limit() {
        let mut names = Names::default();
        let (a, b) = (names.get("insert"), names.get("insert"));
        let mut other = Names::default();
        let c = other.get("insert");
        match (&a, &b, &c) {
            (Name::Kept(a), Name::Kept(b), Name::Kept(c)) => {
                assert!(std::ptr::eq(*a, *b) && std::ptr::eq(*a, *c))
            }
            _ => panic!("{a:?} {b:?} {c:?} are not kept"),
        }
        // Fill what the process keeps; a new name is then counted, an old one still kept.
        let mut i = 0;
        while matches!(names.get(&format!("names-test-{i}")), Name::Kept(_)) {
            i += 1;
            assert!(i <= MAX_KEPT, "never counted");
        }
        let late = names.get("a name past the limit");
        assert!(matches!(late, Name::Counted(_)), "{late:?}");
        assert_eq!(&*late, "a name past the limit");
        assert!(matches!(names.get("insert"), Name::Kept(_)));
        assert_eq!(late, Name::Counted(Arc::from("a name past the limit")));
        assert_eq!(late.to_string(), "a name past the limit");
    }
}
