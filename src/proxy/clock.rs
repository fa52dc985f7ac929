//! Timestamps for records: wall-clock time at the start, advanced by a monotonic clock, so they never
//! go backwards within a capture.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start_unix_ns: u64,
    start: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        let start_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock {
            start_unix_ns,
            start: Instant::now(),
        }
    }

    pub fn start_unix_ns(&self) -> u64 {
        self.start_unix_ns
    }

    pub fn now_ns(&self) -> u64 {
        self.start_unix_ns + self.start.elapsed().as_nanos() as u64
    }
}

/// RFC 3339 text for a Unix time in nanoseconds (UTC, second precision).
pub fn rfc3339(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            super::rfc3339(1_795_996_800_000_000_000),
            "2026-11-30T00:00:00Z"
        );
    }
}
