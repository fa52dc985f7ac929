//! What the server spent: `serverStatus` before and after, and, when the server is a local process,
//! its CPU time from the kernel's accounting (`/proc/PID/stat`). The process is given with
//! `--server-pid` or found as the owner of the socket listening on the target's port.

use crate::replay::client::Conn;
use crate::wire::extjson::{self, ExtJson};
use crate::wire::reply;
use bson::{rawdoc, RawDocument, RawDocumentBuf};
use serde::Serialize;
use std::path::Path;

/// Seconds per clock tick of `/proc/*/stat` (`CLK_TCK`, 100 on every Linux we know).
pub fn clock_tick_s() -> f64 {
    let ticks = rustix::param::clock_ticks_per_second();
    1.0 / if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// User + system CPU seconds of a process (all its threads, dead ones included).
pub fn cpu_seconds(pid: u32, tick_s: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    cpu_from_stat(&stat, tick_s)
}

fn cpu_from_stat(stat: &str, tick_s: f64) -> Option<f64> {
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) * tick_s)
}

/// CPU seconds a process's live threads have run, summed from `/proc/PID/task/*/schedstat`
/// (nanoseconds, where `/proc/PID/stat` counts 10 ms ticks): fine enough to read a server's idle
/// rate of a few percent of a core over a second. Threads that end meanwhile drop out, so this
/// is for short windows only; `None` when the kernel keeps no schedstat.
pub fn cpu_seconds_fine(pid: u32) -> Option<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut ns: u128 = 0;
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        if let Some(run) = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
        {
            ns += u128::from(run);
            any = true;
        }
    }
    any.then(|| ns as f64 / 1e9)
}

/// This process's own CPU seconds.
pub fn own_cpu_seconds(tick_s: f64) -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    cpu_from_stat(&stat, tick_s)
}

/// The process listening on TCP `port` (IPv4 or IPv6), if this user may see its sockets.
pub fn find_listener_pid(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] != "0A" {
                continue;
            }
            let local_port = f[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                inodes.push(format!("socket:[{}]", f[9]));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| Path::new(i) == link) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// The parts of `serverStatus` a replay report keeps.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct StatusSnapshot {
    pub opcounters: serde_json::Value,
    pub network: serde_json::Value,
    pub connections: serde_json::Value,
    #[schemars(range(min = 0))]
    pub uptime_s: Option<f64>,
}

/// A sub-document of the reply as relaxed extended JSON, converted without recursing.
fn json(doc: &RawDocument, key: &str) -> Result<serde_json::Value, String> {
    match doc.get_document(key) {
        Ok(d) => extjson::to_json(d, ExtJson::Relaxed)
            .map_err(|e| format!("the serverStatus reply's {key}: {e}")),
        Err(_) => Ok(serde_json::Value::Null),
    }
}

pub async fn server_status(conn: &mut Conn) -> Result<StatusSnapshot, String> {
    let reply = conn
        .command(
            &rawdoc! { "serverStatus": 1, "$db": "admin" },
            "reading serverStatus",
        )
        .await
        .map_err(|e| e.to_string())?;
    reply::check_command(reply.as_bytes()).map_err(|e| format!("serverStatus failed: {e}"))?;
    status_of(reply)
}

/// The snapshot in a `serverStatus` reply; a part nested past the limit is an error, not a walk.
fn status_of(reply: RawDocumentBuf) -> Result<StatusSnapshot, String> {
    let uptime = reply.get("uptime").ok().flatten();
    Ok(StatusSnapshot {
        opcounters: json(&reply, "opcounters")?,
        network: json(&reply, "network")?,
        connections: json(&reply, "connections")?,
        uptime_s: uptime.and_then(|v| {
            v.as_f64()
                .or_else(|| v.as_i64().map(|i| i as f64))
                .or_else(|| v.as_i32().map(f64::from))
        }),
    })
}

/// after - before for every number in two JSON objects of the same shape.
pub fn delta(before: &serde_json::Value, after: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => Value::Object(
            a.iter()
                .filter_map(|(k, av)| {
                    let d = delta(b.get(k).unwrap_or(&Value::Null), av);
                    (!d.is_null()).then(|| (k.clone(), d))
                })
                .collect(),
        ),
        (b, a) if a.is_number() => {
            let bv = b.as_f64().unwrap_or(0.0);
            let av = a.as_f64().unwrap_or(0.0);
            let d = av - bv;
            if d.fract() == 0.0 {
                serde_json::json!(d as i64)
            } else {
                serde_json::json!(d)
            }
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_from_a_stat_line_with_an_awkward_name() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 8 0 1000 0 0";
        assert_eq!(cpu_from_stat(stat, 0.01), Some(3.0));
        assert!(own_cpu_seconds(0.01).is_some());
    }

    /// A busy child process: the fine reading and the kernel's tick count agree on it (a test
    /// process's own threads come and go, and the fine reading sees only live ones).
    #[test]
    fn fine_cpu_reading_agrees_with_the_ticks() {
        let mut child = std::process::Command::new("python3")
            .args(["-c", "while True: pass"])
            .spawn()
            .expect("python3 runs");
        let pid = child.id();
        let tick = clock_tick_s();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let fine = loop {
            let fine = cpu_seconds_fine(pid).expect("schedstat readable");
            if fine >= 0.3 || std::time::Instant::now() > deadline {
                break fine;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let coarse = cpu_seconds(pid, tick).unwrap();
        let fine_after = cpu_seconds_fine(pid).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(fine >= 0.3, "no CPU time counted in 30 s: {fine} s");
        // The tick count lies between the two fine readings, give or take a few ticks.
        assert!(
            coarse >= fine - 0.05 && coarse <= fine_after + 0.05,
            "schedstat {fine}-{fine_after} s, stat {coarse} s"
        );
    }

    #[test]
    fn a_status_reply_nested_past_the_limit_is_an_error() {
        let deep = bson::RawDocument::from_bytes(&crate::wire::depth::nested(10_000))
            .unwrap()
            .to_owned();
        let reply = rawdoc! { "ok": 1.0, "uptime": 3, "network": deep };
        let e = status_of(reply).unwrap_err();
        assert!(e.contains("nests deeper than 200 levels"), "{e}");
        let fine = status_of(rawdoc! { "ok": 1.0, "uptime": 3, "network": { "a": 1 } }).unwrap();
        assert_eq!(fine.uptime_s, Some(3.0));
    }

    #[test]
    fn deltas_of_nested_counters() {
        let b = serde_json::json!({"insert": 1, "x": {"y": 2.5}});
        let a = serde_json::json!({"insert": 11, "x": {"y": 3.0}, "s": "text"});
        assert_eq!(
            delta(&b, &a),
            serde_json::json!({"insert": 10, "x": {"y": 0.5}})
        );
    }

    #[test]
    fn finds_our_own_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(find_listener_pid(port), Some(std::process::id()));
    }
}
