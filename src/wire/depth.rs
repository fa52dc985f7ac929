//! How deeply a BSON document nests, measured without recursion.
//!
//! Every walk over BSON that came from the network or a file (redaction, `cat`'s JSON, reply
//! diffs, rewrites) first asks [`within_limit`]: past [`MAX_DEPTH`] levels a document is refused
//! as a value, never walked, so a hostile message cannot overflow a thread's stack. MongoDB itself
//! stores at most 100 levels and parses commands up to 200 (`BSONDepth::kDefaultMaxAllowableDepth`);
//! 200 keeps every message a server would accept.

use super::bson_raw::{self, RawError};

/// The deepest nesting any walk follows: the top-level document is level 1.
pub const MAX_DEPTH: usize = 200;

/// The error a walk reports for a document nested deeper than it follows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("BSON document nests deeper than {limit} levels")]
pub struct TooDeep {
    pub limit: usize,
}

/// The nesting depth of `doc` (1 for a document without embedded documents, arrays or scopes),
/// or `None` once it passes `limit`. Walks with an explicit stack: the thread's own stack does
/// not grow with the document.
pub fn depth(doc: &[u8], limit: usize) -> Result<Option<usize>, RawError> {
    let mut stack = vec![bson_raw::iter(doc)?];
    let mut deepest = 1;
    while let Some(top) = stack.last_mut() {
        let Some(element) = top.next() else {
            stack.pop();
            continue;
        };
        let element = element?;
        let inner = match element.kind {
            bson_raw::DOCUMENT | bson_raw::ARRAY => element.value,
            CODE_WITH_SCOPE => scope(element.value).ok_or(RawError {
                offset: 0,
                detail: "code with scope has no scope document",
            })?,
            _ => continue,
        };
        if stack.len() + 1 > limit {
            return Ok(None);
        }
        stack.push(bson_raw::iter(inner)?);
        deepest = deepest.max(stack.len());
    }
    Ok(Some(deepest))
}

/// Whether `doc` nests at most [`MAX_DEPTH`] levels. Malformed bytes count as within the limit:
/// the parser that reads them next reports them with its own error.
pub fn within_limit(doc: &[u8]) -> bool {
    doc.len() < SHORTEST_TOO_DEEP || !matches!(depth(doc, MAX_DEPTH), Ok(None))
}

/// The fewest bytes a document nesting past [`MAX_DEPTH`] takes: 5 for the top level (its length
/// and terminator), and at least 7 for each level below (the element's type byte, an empty key's
/// NUL, the embedded document's length and terminator). Anything shorter is within the limit
/// without a walk: every inserted document of an ordinary workload.
const SHORTEST_TOO_DEEP: usize = 5 + 7 * MAX_DEPTH;

/// Checks `doc` against [`MAX_DEPTH`], for walks that return errors.
pub fn check(doc: &[u8]) -> Result<(), TooDeep> {
    if within_limit(doc) {
        Ok(())
    } else {
        Err(TooDeep { limit: MAX_DEPTH })
    }
}

/// BSON type 0x0F: JavaScript code with scope (int32 total, string, document).
pub const CODE_WITH_SCOPE: u8 = 0x0F;

/// The scope document of a code-with-scope value.
fn scope(value: &[u8]) -> Option<&[u8]> {
    let code_len = i32::from_le_bytes(value.get(4..8)?.try_into().ok()?);
    let start = 8usize.checked_add(usize::try_from(code_len).ok()?)?;
    let doc = value.get(start..)?;
    let len = bson_raw::doc_len(doc)?;
    doc.get(..len)
}

/// `{a: {a: ... {}}}`, `levels` deep, built by hand (the bson crate's
/// own encoder recurses): the hostile input of tests and fuzz seeds for every walk that must
/// refuse it.
pub fn nested(levels: usize) -> Vec<u8> {
    let levels = levels.max(1);
    let mut doc = Vec::with_capacity(levels * 8);
    for k in (2..=levels).rev() {
        let len = (8 * k - 3) as i32;
        doc.extend_from_slice(&len.to_le_bytes());
        doc.extend_from_slice(&[bson_raw::DOCUMENT, b'a', 0]);
    }
    doc.extend_from_slice(&[5, 0, 0, 0, 0]);
    doc.resize(doc.len() + levels - 1, 0);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, RawDocumentBuf};

    #[test]
    fn counts_levels_of_documents_arrays_and_scopes() {
        let flat = RawDocumentBuf::try_from(&doc! {"a": 1, "b": "x"}).unwrap();
        assert_eq!(depth(flat.as_bytes(), 10), Ok(Some(1)));
        let three = RawDocumentBuf::try_from(&doc! {"a": {"b": [1, 2]}}).unwrap();
        assert_eq!(depth(three.as_bytes(), 10), Ok(Some(3)));
        let code = bson::Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
            code: "x".into(),
            scope: doc! {"s": {"t": 1}},
        });
        let with_scope = RawDocumentBuf::try_from(&doc! {"f": code}).unwrap();
        assert_eq!(depth(with_scope.as_bytes(), 10), Ok(Some(3)));
    }

    #[test]
    fn stops_past_the_limit_without_recursing() {
        assert_eq!(depth(&nested(MAX_DEPTH), MAX_DEPTH), Ok(Some(MAX_DEPTH)));
        assert!(within_limit(&nested(MAX_DEPTH)));
        assert!(!within_limit(&nested(MAX_DEPTH + 1)));
        // Deep enough to overflow any recursive walk on a test thread's stack.
        let deep = nested(100_000);
        assert_eq!(depth(&deep, MAX_DEPTH), Ok(None));
        assert_eq!(check(&deep), Err(TooDeep { limit: MAX_DEPTH }));
    }

    /// `levels` nested documents under empty keys: the shortest bytes that nest that deep.
    fn tightest(levels: usize) -> Vec<u8> {
        let mut doc = vec![5, 0, 0, 0, 0];
        for _ in 1..levels {
            let mut outer = ((doc.len() + 7) as i32).to_le_bytes().to_vec();
            outer.extend_from_slice(&[bson_raw::DOCUMENT, 0]);
            outer.extend_from_slice(&doc);
            outer.push(0);
            doc = outer;
        }
        doc
    }

    #[test]
    fn the_shortcut_for_short_documents_never_passes_a_too_deep_one() {
        let too_deep = tightest(MAX_DEPTH + 1);
        assert_eq!(too_deep.len(), SHORTEST_TOO_DEEP);
        assert_eq!(depth(&too_deep, MAX_DEPTH + 1), Ok(Some(MAX_DEPTH + 1)));
        assert!(!within_limit(&too_deep));
        let deepest_allowed = tightest(MAX_DEPTH);
        assert!(deepest_allowed.len() < SHORTEST_TOO_DEEP);
        assert!(within_limit(&deepest_allowed));
    }

    #[test]
    fn malformed_bytes_are_an_error_not_a_panic() {
        let mut deep = nested(5);
        let n = deep.len();
        deep[n - 3] = 7; // an inner terminator
        assert!(depth(&deep, 10).is_err());
        assert!(depth(&[1, 2], 10).is_err());
        assert!(within_limit(&[1, 2]));
    }
}
