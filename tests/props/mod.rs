//! Strategies shared by the property tests (`tests/proptest_*.rs`): BSON documents of every common
//! type, nested a little, and namespaces.

#![allow(dead_code)]

use bson::{Binary, Bson, Document, RawDocumentBuf};
use proptest::collection::vec;
use proptest::prelude::*;

pub fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z_$][a-zA-Z0-9_.]{0,8}"
}

pub fn namespace() -> impl Strategy<Value = String> {
    "[a-z]{1,8}\\.[a-z$]{1,8}"
}

fn leaf() -> impl Strategy<Value = Bson> {
    prop_oneof![
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<f64>().prop_map(Bson::Double),
        any::<bool>().prop_map(Bson::Boolean),
        ".{0,24}".prop_map(Bson::String),
        vec(any::<u8>(), 0..24).prop_map(|bytes| Bson::Binary(Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes,
        })),
        any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(bson::oid::ObjectId::from_bytes(b))),
        Just(Bson::Null),
    ]
}

pub fn value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Bson::Array),
            vec((key(), inner), 0..4)
                .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
        ]
    })
}

pub fn document() -> impl Strategy<Value = Document> {
    vec((key(), value()), 0..6).prop_map(|fields| fields.into_iter().collect())
}

pub fn raw(doc: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(doc).expect("a generated document encodes")
}

pub fn doc() -> impl Strategy<Value = RawDocumentBuf> {
    document().prop_map(|d| raw(&d))
}
