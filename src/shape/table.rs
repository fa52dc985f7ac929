//! Memory bounded whatever the capture: a table of at most `cap` distinct shapes, each with the
//! figures a report keeps (`T`), the rest added up under one `other` entry; and the open cursors,
//! each with the shape that opened it, so a `getMore` on any connection is charged to it.

use super::{Shape, ShapeView};
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;

/// Distinct shapes a table keeps by default; further ones are counted under `other`.
pub const DEFAULT_MAX_SHAPES: usize = 10_000;
/// Open cursors remembered by default; past it the oldest is forgotten (its getMores then count
/// under the fallback shape `getMore db.coll`).
pub const DEFAULT_MAX_CURSORS: usize = 100_000;

/// A shape's place in its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShapeId(u32);

impl ShapeId {
    /// The `other` entry: every shape past the cap.
    pub const OTHER: ShapeId = ShapeId(u32::MAX);

    /// The id of the table's `i`-th entry (`None` past what an id holds).
    pub fn at(i: usize) -> Option<ShapeId> {
        u32::try_from(i)
            .ok()
            .filter(|&i| i != u32::MAX)
            .map(ShapeId)
    }

    /// Its place among the table's entries, in the order first seen; `None` for `other`.
    pub fn index(self) -> Option<usize> {
        (self != ShapeId::OTHER).then_some(self.0 as usize)
    }
}

/// Distinct shapes with their figures, at most `cap` of them.
#[derive(Debug)]
pub struct ShapeTable<T> {
    /// Hash of the text -> the entries with that hash (nearly always one).
    index: HashMap<u64, Vec<u32>>,
    entries: Vec<(Shape, T)>,
    other: T,
    cap: usize,
}

impl<T: Default> Default for ShapeTable<T> {
    fn default() -> Self {
        ShapeTable::new(DEFAULT_MAX_SHAPES)
    }
}

/// The index's key of a shape's text: a fast hash with a fixed seed (the index lives in one
/// process; the hash a report prints is [`super::hash`]).
fn key(text: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x6d6f_6e67_6f74_6170).hash_one(text)
}

impl<T: Default> ShapeTable<T> {
    pub fn new(cap: usize) -> ShapeTable<T> {
        ShapeTable {
            index: HashMap::new(),
            entries: Vec::new(),
            other: T::default(),
            cap: cap.min(u32::MAX as usize - 1),
        }
    }

    /// The entry of a shape, added while the table has room; [`ShapeId::OTHER`] after.
    pub fn id(&mut self, shape: &ShapeView<'_>) -> ShapeId {
        let k = key(shape.text);
        if let Some(ids) = self.index.get(&k) {
            for &i in ids {
                if self.entries[i as usize].0.text == shape.text {
                    return ShapeId(i);
                }
            }
        }
        if self.entries.len() >= self.cap {
            return ShapeId::OTHER;
        }
        let i = self.entries.len() as u32;
        self.entries.push((shape.to_shape(), T::default()));
        self.index.entry(k).or_default().push(i);
        ShapeId(i)
    }

    pub fn get_mut(&mut self, id: ShapeId) -> &mut T {
        match self.entries.get_mut(id.0 as usize) {
            Some((_, t)) => t,
            None => &mut self.other,
        }
    }

    /// Every shape kept, in the order first seen.
    pub fn entries(&self) -> &[(Shape, T)] {
        &self.entries
    }

    pub fn get(&self, id: ShapeId) -> Option<&(Shape, T)> {
        self.entries.get(id.0 as usize)
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every shape with its figures, in the order first seen (a [`ShapeId::index`] is a place
    /// in it), and the `other` entry.
    pub fn parts(&self) -> (&[(Shape, T)], &T) {
        (&self.entries, &self.other)
    }

    /// Every shape with its figures, in the order first seen, and the `other` entry.
    pub fn into_parts(self) -> (Vec<(Shape, T)>, T) {
        (self.entries, self.other)
    }
}

/// Open cursors and the shape each continues, across connections (a cursor id is the server's,
/// not a connection's). Bounded: past `cap` the oldest cursor is forgotten.
#[derive(Debug)]
pub struct CursorShapes {
    open: HashMap<i64, ShapeId>,
    /// Cursor ids in the order opened; may hold ids already closed (skipped when evicting).
    order: VecDeque<i64>,
    cap: usize,
    /// Cursors forgotten because the bound was reached.
    pub forgotten: u64,
}

impl Default for CursorShapes {
    fn default() -> Self {
        CursorShapes::new(DEFAULT_MAX_CURSORS)
    }
}

impl CursorShapes {
    pub fn new(cap: usize) -> CursorShapes {
        CursorShapes {
            open: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
            forgotten: 0,
        }
    }

    /// A reply handed out cursor `id` (0 is no cursor) for a request of `shape`.
    pub fn opened(&mut self, id: i64, shape: ShapeId) {
        if id == 0 {
            return;
        }
        if self.open.insert(id, shape).is_some() {
            return;
        }
        while self.open.len() > self.cap {
            match self.order.pop_front() {
                Some(old) => {
                    if self.open.remove(&old).is_some() {
                        self.forgotten += 1;
                    }
                }
                None => break,
            }
        }
        self.order.push_back(id);
        if self.order.len() > 2 * self.cap + 16 {
            let open = &self.open;
            self.order.retain(|c| open.contains_key(c));
        }
    }

    /// The shape a cursor continues, when its opening was seen.
    pub fn shape(&self, id: i64) -> Option<ShapeId> {
        self.open.get(&id).copied()
    }

    /// The cursor is exhausted or killed.
    pub fn closed(&mut self, id: i64) {
        self.open.remove(&id);
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str) -> ShapeView<'_> {
        ShapeView {
            text,
            command: "find",
            namespace: "d.c",
        }
    }

    #[test]
    fn the_table_keeps_cap_shapes_and_folds_the_rest_into_other() {
        let mut t: ShapeTable<u64> = ShapeTable::new(3);
        let texts: Vec<String> = (0..10)
            .map(|i| format!("find d.c {{a{i}: ?number}}"))
            .collect();
        for (n, text) in texts.iter().enumerate() {
            for _ in 0..=n {
                let id = t.id(&view(text));
                *t.get_mut(id) += 1;
            }
        }
        assert_eq!(t.len(), 3);
        assert_eq!(t.id(&view(&texts[1])), t.id(&view(&texts[1])));
        assert_eq!(t.id(&view(&texts[5])), ShapeId::OTHER);
        let (entries, other) = t.into_parts();
        assert_eq!(
            entries.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(other, (4..=10).sum::<u64>());
        assert_eq!(entries[2].0.text, texts[2]);
    }

    #[test]
    fn cursors_are_bounded_and_closed_ones_forgotten() {
        let mut c = CursorShapes::new(100);
        let s = ShapeId(7);
        for id in 1..=1_000 {
            c.opened(id, s);
            if id % 2 == 0 {
                c.closed(id);
            }
        }
        assert!(c.len() <= 100);
        assert!(c.order.len() <= 2 * 100 + 16);
        assert_eq!(c.shape(999), Some(s));
        assert_eq!(c.shape(1), None);
        assert_eq!(c.shape(1_000), None);
        c.opened(0, s);
        assert_eq!(c.shape(0), None);
        assert!(c.forgotten > 0);
    }
}
