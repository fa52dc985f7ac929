//! Property tests of `shape/`: a query template filled with different values of the same types has
//! one shape; a different type or field name is another shape; a capture redacted with
//! `--redact values` has the shapes of the original; any document in any place of a command is
//! shaped without panicking, the same way twice, with a 16-hex-digit hash.

mod props;

use bson::{doc, Bson, DateTime, Document};
use mongotape::redact::{Direction, Redaction, Redactor, ValueKey};
use mongotape::shape::{hash, Shaper};
use mongotape::wire::{Message, MsgFlags, OpMsg};
use proptest::collection::vec;
use proptest::prelude::*;

/// The type of a literal; int32, int64 and double are all numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int32,
    Int64,
    Double,
    String,
    Bool,
    Date,
    ObjectId,
    Null,
}

impl Kind {
    fn class(self) -> u8 {
        match self {
            Kind::Int32 | Kind::Int64 | Kind::Double => 0,
            Kind::String => 1,
            Kind::Bool => 2,
            Kind::Date => 3,
            Kind::ObjectId => 4,
            Kind::Null => 5,
        }
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Int32),
        Just(Kind::Int64),
        Just(Kind::Double),
        Just(Kind::String),
        Just(Kind::Bool),
        Just(Kind::Date),
        Just(Kind::ObjectId),
        Just(Kind::Null),
    ]
}

/// A filter with its values left out: what a shape keeps.
#[derive(Debug, Clone)]
enum Cond {
    Eq(Kind),
    Op(&'static str, Kind),
    In(Kind, usize),
    Or(Vec<Vec<Cond>>),
}

fn cond() -> impl Strategy<Value = Cond> {
    let leaf = prop_oneof![
        kind().prop_map(Cond::Eq),
        (
            prop::sample::select(vec!["$gt", "$gte", "$lt", "$lte", "$ne"]),
            kind()
        )
            .prop_map(|(op, k)| Cond::Op(op, k)),
        (kind(), 1usize..5).prop_map(|(k, n)| Cond::In(k, n)),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        vec(vec(inner, 1..3), 1..3).prop_map(Cond::Or)
    })
}

/// A tiny deterministic source of values.
struct Values(u64);

impl Values {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }

    fn of(&mut self, k: Kind) -> Bson {
        let n = self.next();
        match k {
            Kind::Int32 => Bson::Int32(n as i32),
            Kind::Int64 => Bson::Int64(n as i64),
            Kind::Double => Bson::Double(n as f64 / 7.0),
            Kind::String => Bson::String("v".repeat((n % 20) as usize)),
            Kind::Bool => Bson::Boolean(n.is_multiple_of(2)),
            Kind::Date => Bson::DateTime(DateTime::from_millis(n as i64 % 1_000_000_000)),
            Kind::ObjectId => {
                let mut b = [0u8; 12];
                b[..8].copy_from_slice(&n.to_le_bytes());
                Bson::ObjectId(bson::oid::ObjectId::from_bytes(b))
            }
            Kind::Null => Bson::Null,
        }
    }
}

/// The filter of a template, its values drawn from `v`; fields are named `{prefix}{i}`.
fn fill(conds: &[Cond], prefix: &str, v: &mut Values) -> Document {
    let mut d = Document::new();
    for (i, c) in conds.iter().enumerate() {
        let field = format!("{prefix}{i}");
        match c {
            Cond::Eq(k) => {
                d.insert(field, v.of(*k));
            }
            Cond::Op(op, k) => {
                d.insert(field, doc! {*op: v.of(*k)});
            }
            Cond::In(k, n) => {
                // The list's length is a value too: 1 to n elements.
                let len = 1 + (v.next() as usize % n);
                let list: Vec<Bson> = (0..len).map(|_| v.of(*k)).collect();
                d.insert(field, doc! {"$in": list});
            }
            Cond::Or(branches) => {
                let list: Vec<Bson> = branches
                    .iter()
                    .map(|b| Bson::Document(fill(b, prefix, v)))
                    .collect();
                // A second `$or` replaces the first, the same way for every fill.
                d.insert("$or", list);
            }
        }
    }
    d
}

/// The first leaf's kind changed to another type class (`None` when the template has no leaf
/// outside an `$or`).
fn retyped(conds: &[Cond]) -> Option<Vec<Cond>> {
    let mut out = conds.to_vec();
    for c in out.iter_mut() {
        let k = match c {
            Cond::Eq(k) | Cond::Op(_, k) | Cond::In(k, _) => k,
            Cond::Or(_) => continue,
        };
        *k = if k.class() == 1 {
            Kind::Bool
        } else {
            Kind::String
        };
        return Some(out);
    }
    None
}

fn find(filter: Document, sort: bool) -> Vec<u8> {
    let mut body = doc! {"find": "orders", "$db": "shop", "filter": filter};
    if sort {
        body.insert("sort", doc! {"f0": -1});
    }
    let raw = props::raw(&body);
    OpMsg::with_body(raw, MsgFlags::empty()).encode(1, 0)
}

fn shape(bytes: &[u8]) -> String {
    let m = Message::parse(bytes).expect("a generated message decodes");
    Shaper::new()
        .request(&m)
        .expect("a request")
        .view()
        .text
        .to_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn different_literals_same_shape(
        conds in vec(cond(), 1..5), a in any::<u64>(), b in any::<u64>(), sort in any::<bool>()
    ) {
        let one = shape(&find(fill(&conds, "f", &mut Values(a)), sort));
        let two = shape(&find(fill(&conds, "f", &mut Values(b)), sort));
        prop_assert_eq!(&one, &two);
        prop_assert_eq!(hash(&one), hash(&two));
        prop_assert!(!one.contains("vvv"), "a literal leaked into {}", one);
    }

    #[test]
    fn different_types_or_field_names_different_shape(
        conds in vec(cond(), 1..5), a in any::<u64>()
    ) {
        let base = shape(&find(fill(&conds, "f", &mut Values(a)), false));
        let renamed = shape(&find(fill(&conds, "g", &mut Values(a)), false));
        prop_assert_ne!(&base, &renamed);
        if let Some(other) = retyped(&conds) {
            let retyped = shape(&find(fill(&other, "f", &mut Values(a)), false));
            prop_assert_ne!(hash(&base), hash(&retyped));
        }
    }

    #[test]
    fn redacted_values_keep_the_shape(conds in vec(cond(), 1..5), a in any::<u64>()) {
        let original = find(fill(&conds, "f", &mut Values(a)), true);
        let redactor = Redactor::with_key(Redaction::Values, ValueKey::from_bytes([7; 32]));
        let redacted = redactor
            .message(&original, Direction::Request)
            .expect("a generated find redacts")
            .unwrap_or_else(|| original.clone());
        prop_assert_eq!(shape(&original), shape(&redacted));
    }

    #[test]
    fn any_document_anywhere_is_shaped_the_same_twice(
        d in props::document(), place in 0usize..8
    ) {
        let d = Bson::Document(d);
        let body = match place {
            0 => doc! {"find": "c", "$db": "x", "filter": d},
            1 => doc! {"find": "c", "$db": "x", "projection": d.clone(), "sort": d},
            2 => doc! {"aggregate": "c", "$db": "x", "pipeline": [d.clone(), {"$match": d}]},
            3 => doc! {"update": "c", "$db": "x", "updates": [{"q": d.clone(), "u": d}]},
            4 => doc! {"findAndModify": "c", "$db": "x", "query": d.clone(), "update": [d]},
            5 => doc! {"aggregate": "c", "$db": "x", "pipeline": [{"$facet": {"a": [d.clone()]}},
                                                                 {"$lookup": d}]},
            6 => doc! {"count": "c", "$db": "x", "query": {"$or": [d.clone()]}, "hint": d},
            _ => doc! {"explain": {"distinct": "c", "key": "k", "query": d}, "$db": "x"},
        };
        let bytes = OpMsg::with_body(props::raw(&body), MsgFlags::empty()).encode(1, 0);
        let one = shape(&bytes);
        prop_assert_eq!(&one, &shape(&bytes));
        let h = hash(&one);
        prop_assert!(h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
