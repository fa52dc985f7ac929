//! `--shard I/N`: which part of a capture this process replays. Recorded connections are grouped
//! so that what must stay on one connection's side stays on one shard: connections that share a
//! cursor (opened on one, getMore or killCursors on another) or a multi-statement transaction
//! (`lsid` + `txnNumber`) form one group. A group and a clone make a unit; units go to shards by a
//! stable hash of the group's lowest connection id, clones round-robin from there: the same in
//! every process.
//!
//! Sessions without a transaction may span groups: each shard maps a recorded `lsid` to its own
//! live one and its `txnNumber`s stay increasing, which is all the server asks.

use crate::capture::{CaptureError, CaptureSet, RecordKind};
use crate::replay::measure::outcome;
use crate::replay::request;
use crate::wire::header::MsgHeader;
use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;

/// This process's part: shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The Kubernetes Indexed Job environment: `JOB_COMPLETION_INDEX` with `count` shards.
    pub fn from_env(count: u32) -> Result<Shard, String> {
        let raw = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| {
            "--shards N needs JOB_COMPLETION_INDEX in the environment (or use --shard I/N)"
                .to_string()
        })?;
        let index = raw
            .trim()
            .parse()
            .map_err(|_| format!("JOB_COMPLETION_INDEX={raw:?} is not a number"))?;
        Shard::new(index, count)
    }

    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 || index >= count {
            return Err(format!("shard {index}/{count}: need 0 <= I < N"));
        }
        Ok(Shard { index, count })
    }

    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?}: expected I/N"))?;
        let num = |v: &str| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{s:?}: expected I/N"))
        };
        Shard::new(num(i)?, num(n)?)
    }
}

/// splitmix64: a fixed, well-mixed hash, identical in every build and process.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Which shard a unit (group, clone) goes to: the group's hash picks the shard of its first clone,
/// the next clones go round the shards from there (so K clones of one group spread evenly).
pub fn shard_of(group: u64, clone: u32, count: u32) -> u32 {
    let n = count.max(1) as u64;
    ((mix(group) % n + clone as u64 % n) % n) as u32
}

/// Connection groups over a whole capture (union-find on connection ids).
#[derive(Debug, Default)]
pub struct Groups {
    parent: HashMap<u64, u64>,
}

impl Groups {
    fn find(&mut self, c: u64) -> u64 {
        let mut root = c;
        while let Some(&p) = self.parent.get(&root) {
            if p == root {
                break;
            }
            root = p;
        }
        // Path compression.
        let mut x = c;
        while x != root {
            let next = self.parent.get(&x).copied().unwrap_or(root);
            self.parent.insert(x, root);
            x = next;
        }
        self.parent.entry(root).or_insert(root);
        root
    }

    pub fn union(&mut self, a: u64, b: u64) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The lowest connection id names the group, whatever the order of discovery.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent.insert(hi, lo);
        }
    }

    /// The group's name: its lowest connection id.
    pub fn group(&mut self, c: u64) -> u64 {
        self.find(c)
    }

    /// Reads a capture and joins the connections that share a cursor or a transaction.
    pub fn of_capture(inputs: &[PathBuf]) -> Result<Groups, CaptureError> {
        let mut reader = CaptureSet::open(inputs)?;
        let mut groups = Groups::default();
        let mut cursor_conn: HashMap<i64, u64> = HashMap::new();
        let mut txn_conn: HashMap<(Vec<u8>, i64), u64> = HashMap::new();
        while let Some(record) = reader.next_record() {
            let record = record?;
            match record.kind {
                RecordKind::Request => {
                    let Ok(req) =
                        request::understand(record.conn_id, record.ts_ns, &record.payload)
                    else {
                        continue;
                    };
                    groups.find(req.conn_id);
                    for c in &req.cursor_refs {
                        if let Some(&owner) = cursor_conn.get(c) {
                            groups.union(owner, req.conn_id);
                        }
                    }
                    if let (Some(l), Some(t)) = (req.lsid, req.transaction) {
                        match txn_conn.get(&(l.clone(), t)) {
                            Some(&owner) => groups.union(owner, req.conn_id),
                            None => {
                                txn_conn.insert((l, t), req.conn_id);
                            }
                        }
                    }
                }
                RecordKind::Reply => {
                    let is_msg = MsgHeader::parse(&record.payload).ok().flatten().is_some();
                    if !is_msg {
                        continue;
                    }
                    if let Some(c) = outcome::scan(&record.payload)
                        .ok()
                        .and_then(|o| o.cursor_id)
                        .filter(|&c| c != 0)
                    {
                        cursor_conn.entry(c).or_insert(record.conn_id);
                    }
                }
                _ => {}
            }
        }
        Ok(groups)
    }
}

/// What this process replays of the capture.
#[derive(Debug)]
pub struct ShardPlan {
    pub shard: Shard,
    groups: Groups,
}

impl ShardPlan {
    pub fn build(inputs: &[PathBuf], shard: Shard) -> Result<ShardPlan, CaptureError> {
        Ok(ShardPlan {
            shard,
            groups: Groups::of_capture(inputs)?,
        })
    }

    /// Whether this shard replays recorded connection `conn_id` in clone `clone` (0-based).
    pub fn owns(&mut self, conn_id: u64, clone: u32) -> bool {
        let group = self.groups.group(conn_id);
        shard_of(group, clone, self.shard.count) == self.shard.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_named_by_their_lowest_connection() {
        let mut g = Groups::default();
        g.union(7, 3);
        g.union(9, 7);
        g.union(12, 20);
        assert_eq!(g.group(9), 3);
        assert_eq!(g.group(3), 3);
        assert_eq!(g.group(20), 12);
        assert_eq!(g.group(5), 5);
    }

    #[test]
    fn every_unit_has_exactly_one_shard() {
        for group in 0..200u64 {
            for clone in 0..4 {
                let s = shard_of(group, clone, 4);
                assert!(s < 4);
                assert_eq!(s, shard_of(group, clone, 4));
            }
            // The clones of one group spread over every shard.
            let mut shards: Vec<u32> = (0..4).map(|c| shard_of(group, c, 4)).collect();
            shards.sort_unstable();
            assert_eq!(shards, [0, 1, 2, 3]);
        }
        // The hash spreads: no shard empty over 200 groups.
        let mut seen = [0; 4];
        for group in 0..200u64 {
            seen[shard_of(group, 0, 4) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 20), "{seen:?}");
    }

    #[test]
    fn shard_labels_parse_and_are_checked() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert!("4/4".parse::<Shard>().is_err());
        assert!("x/4".parse::<Shard>().is_err());
        assert!("3".parse::<Shard>().is_err());
    }
}
