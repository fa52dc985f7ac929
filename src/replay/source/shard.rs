//! `--shard I/N`: which part of a capture this process replays. Recorded connections are grouped
//! so that what must stay on one connection's side stays on one shard: connections that share a
//! cursor (opened on one, getMore or killCursors on another) or a multi-statement transaction
//! (`lsid` + `txnNumber`) form one group. Groups go to shards greedily by their recorded requests
//! (the largest first, each to the shard with the fewest so far, ties to the lowest group id and
//! shard index), so the shards' loads are balanced and every process, reading the same capture,
//! assigns the same; a group's clones go round the shards from its first clone's.
//!
//! Sessions without a transaction may span groups: each shard maps a recorded `lsid` to its own
//! live one and its `txnNumber`s stay increasing, which is all the server asks.

use crate::capture::{CaptureError, CaptureSet, RecordKind};
use crate::replay::measure::outcome;
use crate::replay::report::MAX_SHARDS;
use crate::replay::request;
use crate::wire::header::MsgHeader;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
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
        if count > MAX_SHARDS {
            return Err(format!(
                "shard {index}/{count}: at most {MAX_SHARDS} shards"
            ));
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

/// Connection groups over a whole capture (union-find on connection ids), with the requests each
/// connection recorded.
#[derive(Debug, Default)]
pub struct Groups {
    parent: HashMap<u64, u64>,
    requests: HashMap<u64, u64>,
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
        let mut names = crate::replay::names::Names::default();
        while let Some(record) = reader.next_record() {
            let record = record?;
            match record.kind {
                RecordKind::Request => {
                    let Ok(req) = request::understand_with(
                        record.conn_id,
                        record.ts_ns,
                        &record.payload,
                        &mut names,
                    ) else {
                        continue;
                    };
                    groups.find(req.conn_id);
                    *groups.requests.entry(req.conn_id).or_default() += 1;
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

    /// Each group's shard (its first clone's): the groups by recorded requests, largest first
    /// (ties: the lowest group id), each to the shard with the fewest requests so far (ties: the
    /// lowest index).
    fn balance(&mut self, count: u32) -> HashMap<u64, u32> {
        let conns: Vec<u64> = self.parent.keys().copied().collect();
        let mut load: HashMap<u64, u64> = HashMap::new();
        for conn in conns {
            let n = self.requests.get(&conn).copied().unwrap_or(0);
            *load.entry(self.find(conn)).or_default() += n;
        }
        let mut order: Vec<(u64, u64)> = load.into_iter().collect();
        order.sort_unstable_by_key(|&(group, n)| (Reverse(n), group));
        let mut shards: BinaryHeap<Reverse<(u64, u32)>> =
            (0..count.max(1)).map(|i| Reverse((0, i))).collect();
        let mut assigned = HashMap::with_capacity(order.len());
        for (group, n) in order {
            let Reverse((sum, index)) = shards.pop().expect("at least one shard");
            assigned.insert(group, index);
            shards.push(Reverse((sum + n, index)));
        }
        assigned
    }
}

/// What this process replays of the capture.
#[derive(Debug)]
pub struct ShardPlan {
    pub shard: Shard,
    groups: Groups,
    /// Each group's shard, balanced by recorded requests ([`Groups::balance`]).
    assigned: HashMap<u64, u32>,
}

impl ShardPlan {
    pub fn build(inputs: &[PathBuf], shard: Shard) -> Result<ShardPlan, CaptureError> {
        Ok(ShardPlan::of_groups(Groups::of_capture(inputs)?, shard))
    }

    fn of_groups(mut groups: Groups, shard: Shard) -> ShardPlan {
        let assigned = groups.balance(shard.count);
        ShardPlan {
            shard,
            groups,
            assigned,
        }
    }

    /// Whether this shard replays recorded connection `conn_id` in clone `clone` (0-based). A
    /// connection the first reading did not see (it sent nothing then) goes by its hash.
    pub fn owns(&mut self, conn_id: u64, clone: u32) -> bool {
        let group = self.groups.group(conn_id);
        let n = self.shard.count.max(1);
        let shard = match self.assigned.get(&group) {
            Some(&first) => (first + clone % n) % n,
            None => shard_of(group, clone, n),
        };
        shard == self.shard.index
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

    /// Four identical workers and their monitors: whole groups, loads as even as they can be,
    /// the same in every process.
    #[test]
    fn groups_are_balanced_by_their_recorded_requests() {
        let plan = |shard: u32| {
            let mut g = Groups::default();
            for (conn, n) in [
                (1, 810),
                (2, 2),
                (3, 810),
                (4, 2),
                (5, 810),
                (6, 810),
                (7, 5),
            ] {
                g.find(conn);
                g.requests.insert(conn, n);
            }
            g.union(5, 7); // a cursor opened on 5, read on 7
            ShardPlan::of_groups(g, Shard::new(shard, 2).unwrap())
        };
        let mut loads = [0u64; 2];
        for shard in 0..2 {
            let mut p = plan(shard);
            for (conn, n) in [
                (1, 810),
                (2, 2),
                (3, 810),
                (4, 2),
                (5, 810),
                (6, 810),
                (7, 5),
            ] {
                if p.owns(conn, 0) {
                    loads[shard as usize] += n;
                }
            }
            assert_eq!(p.owns(5, 0), p.owns(7, 0), "a group stays whole");
            // Clones go round: clone 1 of every group is on the other shard.
            assert_ne!(p.owns(1, 0), p.owns(1, 1));
        }
        assert_eq!(loads.iter().sum::<u64>(), 3249);
        assert!(loads[0].abs_diff(loads[1]) <= 5, "{loads:?}");
        assert_eq!(
            (0..2).map(|s| plan(s).owns(1, 0)).filter(|&o| o).count(),
            1,
            "exactly one shard owns a connection"
        );
    }

    #[test]
    fn shard_labels_parse_and_are_checked() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert!("4/4".parse::<Shard>().is_err());
        assert!("x/4".parse::<Shard>().is_err());
        assert!("3".parse::<Shard>().is_err());
    }
}
