//! BSON as extended JSON (relaxed or canonical, as the bson crate and bsondump write it),
//! converted with an explicit stack. The bson crate's own conversion recurses once per level:
//! 150 levels of it overflow a 2 MiB thread stack (a test thread, a tokio worker) in a debug
//! build. A document nested past [`depth::MAX_DEPTH`] is refused: the JSON value built from it
//! would still be printed and freed recursively.

use super::depth::{self, TooDeep};
use bson::{Bson, RawDocument};
use serde_json::{Map, Value};

/// Which extended JSON documents are written in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExtJson {
    /// Numbers as JSON numbers, dates as ISO-8601: for reading.
    #[default]
    Relaxed,
    /// Every type kept (`$numberLong`, `$numberDouble`, `$date.$numberLong`): for round trips.
    Canonical,
}

/// Why a document was not converted.
#[derive(Debug, thiserror::Error)]
pub enum ExtJsonError {
    #[error(transparent)]
    TooDeep(#[from] TooDeep),
    /// The bytes are not valid BSON (the bson crate's own message).
    #[error("{}", super::bson_error_text(.0))]
    Undecodable(#[from] bson::error::Error),
}

/// `doc` as extended JSON of the given kind: the same value the bson crate's
/// `Bson::Document(..).into_relaxed_extjson()` (or canonical) gives, without recursing.
pub fn to_json(doc: &RawDocument, mode: ExtJson) -> Result<Value, ExtJsonError> {
    depth::check(doc.as_bytes())?;
    Ok(convert(doc, mode)?)
}

/// A document or array being converted: its elements left, what is converted so far, and the
/// key it takes in its parent.
struct Frame<'a> {
    elements: bson::raw::RawIter<'a>,
    out: Nested,
    key: String,
}

enum Nested {
    Object(Map<String, Value>),
    Array(Vec<Value>),
}

impl Nested {
    fn push(&mut self, key: String, value: Value) {
        match self {
            Nested::Object(m) => {
                m.insert(key, value);
            }
            Nested::Array(v) => v.push(value),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Nested::Object(m) => Value::Object(m),
            Nested::Array(v) => Value::Array(v),
        }
    }
}

/// The walk of [`to_json`]. Scalars (and code-with-scope, rare and depth-checked with the rest)
/// are converted by the bson crate.
fn convert(doc: &RawDocument, mode: ExtJson) -> Result<Value, bson::error::Error> {
    let scalar = |v: bson::RawBsonRef<'_>| -> Result<Value, bson::error::Error> {
        let b = Bson::try_from(v)?;
        Ok(match mode {
            ExtJson::Relaxed => b.into_relaxed_extjson(),
            ExtJson::Canonical => b.into_canonical_extjson(),
        })
    };
    let mut stack = vec![Frame {
        elements: doc.iter_elements(),
        out: Nested::Object(Map::new()),
        key: String::new(),
    }];
    loop {
        let top = stack
            .last_mut()
            .expect("the root frame stays until the end");
        let Some(element) = top.elements.next() else {
            let done = stack.pop().expect("a frame");
            let value = done.out.into_value();
            match stack.last_mut() {
                Some(parent) => parent.out.push(done.key, value),
                None => return Ok(value),
            }
            continue;
        };
        let element = element?;
        let key = element.key().as_str().to_owned();
        let value = element.value()?;
        let (elements, out) = match value {
            bson::RawBsonRef::Document(d) => (d.iter_elements(), Nested::Object(Map::new())),
            bson::RawBsonRef::Array(a) => (a.iter_elements(), Nested::Array(Vec::new())),
            other => {
                let v = scalar(other)?;
                top.out.push(key, v);
                continue;
            }
        };
        stack.push(Frame { elements, out, key });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, RawDocumentBuf};

    #[test]
    fn the_same_json_as_the_bson_crate_and_deep_documents_refused() {
        let d = doc! {
            "a": 1, "b": [1i64, {"c": 2.5}, []], "d": {"e": "x", "f": bson::DateTime::from_millis(7)},
            "g": bson::oid::ObjectId::from_bytes([1; 12]), "h": {}, "i": null,
        };
        let raw = RawDocumentBuf::try_from(&d).unwrap();
        for mode in [ExtJson::Relaxed, ExtJson::Canonical] {
            let expected = match mode {
                ExtJson::Relaxed => Bson::Document(d.clone()).into_relaxed_extjson(),
                ExtJson::Canonical => Bson::Document(d.clone()).into_canonical_extjson(),
            };
            assert_eq!(to_json(&raw, mode).unwrap(), expected);
        }
        // At the limit, converted on a test thread's 2 MiB stack (the bson crate overflows it).
        let at_limit = RawDocumentBuf::from_bytes(depth::nested(depth::MAX_DEPTH)).unwrap();
        let v = to_json(&at_limit, ExtJson::Canonical).unwrap();
        assert!(v.to_string().starts_with(r#"{"a":{"a":"#));
        let deep = RawDocumentBuf::from_bytes(depth::nested(10_000)).unwrap();
        assert!(matches!(
            to_json(&deep, ExtJson::Relaxed),
            Err(ExtJsonError::TooDeep(_))
        ));
    }
}
