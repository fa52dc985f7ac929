//! A map that forgets its oldest entries past a cap: what the slicer remembers of cursors and of
//! decided transactions stays bounded however long the capture.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

pub struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    pub fn new(cap: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    pub fn insert(&mut self, key: K, value: V) {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        while self.map.len() > self.cap {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        // Keys removed by hand leave stale entries in `order`; drop them once they dominate.
        if self.order.len() > 2 * self.cap {
            let map = &self.map;
            self.order.retain(|k| map.contains_key(k));
        }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.map.remove(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entries_go_first_and_memory_stays_bounded() {
        let mut b = Bounded::new(3);
        for i in 0..10 {
            b.insert(i, i * 10);
        }
        assert_eq!(b.map.len(), 3);
        assert_eq!(b.get(&9), Some(&90));
        assert_eq!(b.get(&6), None);
        for i in 100..10_000 {
            b.insert(i, 0);
            b.remove(&i);
        }
        assert!(b.order.len() <= 7, "{}", b.order.len());
    }
}
