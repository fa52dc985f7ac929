//! A network namespace made by a test (`ip netns`, root and iproute2 needed, as CI has): its own
//! loopback, so a test can hold fixed ports, answer DNS on 127.0.0.1:53 or sniff `lo` without
//! seeing any other test's traffic. Deleted (with its `/etc/netns/NAME`) when dropped.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Netns {
    pub name: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `ip` (iproute2) to make a network namespace: {e}"));
    assert!(
        out.status.success(),
        "`ip {}` failed: {}; this test needs root and iproute2's `ip netns`",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    /// `mongotape-PURPOSE-PID-N`, with its loopback up.
    pub fn create(purpose: &str) -> Netns {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("mongotape-{purpose}-{}-{n}", std::process::id());
        ip(&["netns", "add", &name]);
        let ns = Netns { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }

    /// `/etc/netns/NAME`: files here are mounted over `/etc` by `ip netns exec`.
    pub fn etc_dir(&self) -> PathBuf {
        PathBuf::from("/etc/netns").join(&self.name)
    }

    /// Moves the calling thread into the namespace: the threads and processes it starts from now
    /// on are inside too.
    pub fn enter(&self) {
        let file = std::fs::File::open(format!("/run/netns/{}", self.name))
            .unwrap_or_else(|e| panic!("open /run/netns/{}: {e}", self.name));
        // SAFETY: setns(2) on a valid namespace descriptor; it changes only this thread's network
        // namespace.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(
            rc,
            0,
            "setns into {}: {}",
            self.name,
            std::io::Error::last_os_error()
        );
    }

    /// `ip netns exec NAME`: the prefix that also mounts the namespace's `/etc` files.
    pub fn exec(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.name]
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
        let _ = std::fs::remove_dir_all(self.etc_dir());
    }
}
