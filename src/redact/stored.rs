//! Stored SCRAM credentials: a user's `credentials: {"SCRAM-SHA-1": {iterationCount, salt,
//! storedKey, serverKey}, "SCRAM-SHA-256": {...}}`, as `usersInfo {showCredentials: true}` and
//! reads of `admin.system.users` return it and a restore sends it back. Salt and stored key are
//! enough for an offline dictionary attack, the server key to impersonate the server. Every
//! document keyed by a SCRAM mechanism is emptied wherever it stands, in either direction, so a
//! projection or a pipeline that moves the user document around does not keep it.

use super::error::RedactError;
use bson::raw::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawJavaScriptCodeWithScope};
use bson::RawDocumentBuf;

/// What such a document looks like in BSON: an embedded document's type byte, its key, the NUL.
pub(super) const NEEDLES: &[&[u8]] = &[b"\x03SCRAM-SHA-1\0", b"\x03SCRAM-SHA-256\0"];

fn is_mechanism(key: &str) -> bool {
    matches!(key, "SCRAM-SHA-1" | "SCRAM-SHA-256")
}

/// Whether `bytes` may hold a stored credential (cheap: a byte search).
pub(super) fn present(bytes: &[u8]) -> bool {
    crate::wire::bson_raw::holds_any_key(bytes, NEEDLES)
}

/// A copy of `doc` with every document keyed `SCRAM-SHA-1` or `SCRAM-SHA-256` emptied, and how
/// many were. Recurses only into what holds one; the caller has checked the depth.
pub(super) fn remove(doc: &RawDocument) -> Result<(RawDocumentBuf, usize), RedactError> {
    let mut out = RawDocumentBuf::new();
    let mut emptied = 0;
    for element in doc.iter() {
        let (key, value) = element?;
        match value {
            RawBsonRef::Document(_) if is_mechanism(key.as_str()) => {
                out.append(key, RawDocumentBuf::new());
                emptied += 1;
            }
            other => match inner(other, &mut emptied)? {
                Some(new) => out.append(key, new),
                None => out.append(key, other),
            },
        }
    }
    Ok((out, emptied))
}

/// The value rebuilt when it holds a stored credential, `None` to keep it as it is.
fn inner(value: RawBsonRef<'_>, emptied: &mut usize) -> Result<Option<RawBson>, RedactError> {
    let new = match value {
        RawBsonRef::Document(d) if present(d.as_bytes()) => {
            let (d, n) = remove(d)?;
            *emptied += n;
            RawBson::Document(d)
        }
        RawBsonRef::Array(a) if present(a.as_bytes()) => {
            let mut list = RawArrayBuf::new();
            for item in a {
                let item = item?;
                match inner(item, emptied)? {
                    Some(new) => list.push(new),
                    None => list.push(item),
                }
            }
            RawBson::Array(list)
        }
        RawBsonRef::JavaScriptCodeWithScope(c) if present(c.scope.as_bytes()) => {
            let (scope, n) = remove(c.scope)?;
            *emptied += n;
            RawBson::JavaScriptCodeWithScope(RawJavaScriptCodeWithScope {
                code: c.code.to_string(),
                scope,
            })
        }
        _ => return Ok(None),
    };
    Ok(Some(new))
}
