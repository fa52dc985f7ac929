//! The query shape of any request (`shape::Shaper`), fed to a shape table and the cursor map as
//! a report would.

use super::{mode, op_msg_of, op_query_of};
use mongotape::shape::{
    hash, CursorShapes, ShapeId, ShapeTable, Shaped, Shaper, HASH_HEX, MAX_TEXT,
};
use mongotape::wire::Message;

/// The first byte picks what the rest is: 0 a whole message; 1 a document sent as an OP_MSG
/// body; 2 the same as a command over OP_QUERY to `d.$cmd`; 3 the query of a legacy OP_QUERY
/// find on `d.c`. Asserts: the same message has the same shape twice; the text starts with its
/// command and holds its namespace, stays within `MAX_TEXT` (plus the cut's hash) and hashes to
/// 16 hex digits; the table and cursor map take it.
pub fn shape(data: &[u8]) {
    let (m, rest) = mode(data);
    let message = match m % 4 {
        0 => rest.to_vec(),
        1 => op_msg_of(0, rest),
        2 => op_query_of("d.$cmd", rest),
        _ => op_query_of("d.c", rest),
    };
    let Ok(msg) = Message::parse(&message) else {
        return;
    };
    let mut shaper = Shaper::new();
    let Some(first) = shaper.request(&msg).map(|s| s.view().to_shape()) else {
        return;
    };
    let mut again = Shaper::new();
    let shaped = again.request(&msg).expect("shaped once, shaped twice");
    let view = shaped.view();
    assert_eq!(view.to_shape(), first, "the same message shaped two ways");
    assert!(view.text.starts_with(view.command), "{:?}", view);
    assert!(view.text.contains(view.namespace), "{:?}", view);
    assert!(
        view.text.len() <= MAX_TEXT + "… sha256:".len() + 64,
        "a text of {} bytes",
        view.text.len()
    );
    let h = hash(view.text);
    assert!(h.len() == HASH_HEX && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let mut table: ShapeTable<u64> = ShapeTable::new(1);
    let mut cursors = CursorShapes::new(2);
    let id = table.id(&view);
    assert_ne!(id, ShapeId::OTHER);
    assert_eq!(table.id(&view), id);
    *table.get_mut(id) += 1;
    if let Shaped::Continues { cursors: ids, .. } = &shaped {
        for c in ids {
            cursors.opened(*c, id);
            assert!(cursors.shape(*c).is_some() || *c == 0);
            cursors.closed(*c);
        }
    }
}
