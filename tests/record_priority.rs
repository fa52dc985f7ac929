//! The recorder thread runs in the background (`SCHED_IDLE`) while it keeps up, so that it never
//! holds a CPU against forwarding, and comes back to normal priority when its queue backs up: on
//! a host whose CPUs are all taken (two busy loops at normal priority here), recording through
//! the proxy still loses nothing. Real server (secantusd-rs), pymongo through `mongotape record`.

mod common;
use common::*;
use mongotape::capture::RecordKind;
use std::process::{Child, Command};

/// The scheduling policy (5: SCHED_IDLE, 0: SCHED_OTHER) of `pid`'s thread named `name`, once
/// it is there (the proxy may be listening before its recorder thread has started or named
/// itself; waits up to 10 s).
fn thread_policy(pid: u32, name: &str) -> u32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
            let dir = task.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            if comm.trim() == name {
                let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
                let policy = stat
                    .rsplit_once(')')
                    .and_then(|(_, after)| after.split_whitespace().nth(38)?.parse().ok());
                if let Some(policy) = policy {
                    return policy;
                }
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no thread {name} in process {pid} within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0")
}

/// Busy loops at normal priority, one per CPU; killed (by their ids) when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start() -> Hogs {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let spin = || {
            Command::new("python3")
                .args(["-c", "while True: pass"])
                .spawn()
                .unwrap()
        };
        Hogs((0..cpus).map(|_| spin()).collect())
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_recorder_in_the_background_loses_nothing_when_every_cpu_is_busy() {
    let server = Server::start();
    let dir = tempdir();
    let capture = dir.path().join("busy.mtape");
    let proxy = Proxy::start(server.addr(), &capture);
    let mut policy = thread_policy(proxy.pid(), "mongotape-recor");
    if is_root() {
        // The thread goes to SCHED_IDLE as its first step, right after it has started.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while policy != 5 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            policy = thread_policy(proxy.pid(), "mongotape-recor");
        }
        assert_eq!(policy, 5, "the recorder should start as SCHED_IDLE");
    }
    let hogs = Hogs::start();
    // 400 batches of 100 documents of ~600 bytes: 24 MB of requests while the recorder competes
    // with the busy loops at the lowest priority there is (the unit test of proxy::gear shows it
    // coming back past its high mark); at stop it comes back to write the rest at once.
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1])\n\
         for b in range(400):\n\
         \x20   c.busy.docs.insert_many([{'_id': b * 100 + i, 'pad': 'x' * 600} for i in range(100)])\n\
         print(c.busy.docs.count_documents({}))\n",
        &[proxy.uri()],
    );
    // The busy phase is the workload; what the recorder still holds at the stop is written with
    // the CPUs free again (a debug build under CI load can take well over 10 s for 14 MiB while
    // two busy loops share the CPUs with it).
    drop(hogs);
    let exit = proxy.stop_within(std::time::Duration::from_secs(90));
    assert!(
        exit.status.success() && !exit.killed,
        "proxy (killed: {}): {}",
        exit.killed,
        exit.stderr
    );
    let records = capture_records(&capture);
    let gaps = records.iter().filter(|r| r.kind == RecordKind::Gap).count();
    assert_eq!(gaps, 0, "records lost while the CPUs were busy");
    let inserts = records
        .iter()
        .filter(|r| r.kind == RecordKind::Request)
        .filter(|r| memchr::memmem::find(&r.payload, b"\x02insert\0").is_some())
        .count();
    assert_eq!(inserts, 400, "every insert recorded");
}
