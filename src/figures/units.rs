//! Every number a report prints, as text. One rule per kind of number, so the same figure reads the
//! same in `inspect`, `analyze`, `compare`, the replay and the proxy's status line:
//!
//! - a duration picks its unit by size: `850ns`, `310.5µs`, `3.81ms`, `1.25s`;
//! - bytes in powers of 1024: `512 B`, `1.5 KiB`, `3.2 MiB`;
//! - a count or rate scales by 1000: `950`, `12k`, `3.4M`; small fractions keep their digits;
//! - a share (0..1) as a percentage `12.3%`, a ratio as `1.25x`.
//!
//! A value that is not finite prints as `0` where a unit is attached (charts) and as itself
//! otherwise; a missing one (`None`) prints as `-`.

/// The range of every duration option (`--op-timeout`, `--duration`, `--rotate-every`, ...):
/// from a millisecond to a year. Past it a value is a typo, and far past it (about 1.8e19 s)
/// `Duration::from_secs_f64` and `Instant + Duration` panic.
pub const OPTION_DURATIONS: std::ops::RangeInclusive<std::time::Duration> =
    std::time::Duration::from_millis(1)..=std::time::Duration::from_secs(365 * 86_400);

/// A duration option's value, for clap (which names the option in front of the message): `90s`,
/// `10m`, `1h30m`, `250ms`, or a number of seconds (`2.5`), within [`OPTION_DURATIONS`].
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let range = "a duration from 1ms to 365 days (0.001 to 31536000 seconds)";
    let parsed = match text.trim().parse::<f64>() {
        Ok(secs) => std::time::Duration::try_from_secs_f64(secs).ok(),
        Err(_) => humantime::parse_duration(text.trim()).ok(),
    };
    parsed
        .filter(|d| OPTION_DURATIONS.contains(d))
        .ok_or_else(|| format!("{text:?}: expected {range}, such as 30s or 2m"))
}

/// A duration in nanoseconds, in the unit its size calls for: `850ns`, `310.5µs`, `3.81ms`, `1.25s`;
/// zero as `0` (an axis's origin needs no unit).
pub fn duration_ns(ns: f64) -> String {
    if ns == 0.0 {
        "0".into()
    } else if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// A duration in microseconds (the unit latency summaries are kept in); see [`duration_ns`].
pub fn duration_us(us: f64) -> String {
    duration_ns(us * 1e3)
}

/// A duration in seconds; see [`duration_ns`].
pub fn duration_s(s: f64) -> String {
    duration_ns(s * 1e9)
}

/// Time left or taken, as a clock reads it: `45s`, `3m05s`, `2h07m`; under a second as [`duration_s`].
pub fn clock(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    if s < 1.0 {
        return duration_s(s);
    }
    let t = s.round() as u64;
    match (t / 3600, t / 60 % 60, t % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// A byte count in powers of 1024: `512 B`, `1.5 KiB`, `3.2 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A count or a rate without a unit, short: `950`, `12k`, `3.4M`, `1.2G`; `2.50`, `0.125` below 100.
pub fn count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A share between 0 and 1 as a percentage, `-` when unknown: `Some(0.123)` -> `12.3%`.
pub fn share(share: Option<f64>) -> String {
    share.map_or("-".into(), |s| percent(s * 100.0))
}

/// A value already in percent: `12.3%`.
pub fn percent(v: f64) -> String {
    format!("{v:.1}%")
}

/// `v` to two significant digits, as a sentence says it (`1.873` -> `1.9`, `775` -> `780`,
/// `0.41`); integral values print without a fraction.
fn two_digits(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i32;
    let step = 10f64.powi(magnitude - 1);
    let r = (v / step).round() * step;
    // Rounding up may add a digit (0.9997 -> 1.0): the decimals follow the rounded value.
    let decimals = (1 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.decimals$}")
}

/// A duration in microseconds for a sentence: two significant digits, a space before the unit:
/// `1.9 ms`, `410 µs`, `13 ms`, `2.8 s`.
pub fn rounded_us(us: f64) -> String {
    let us = if us.is_finite() { us.max(0.0) } else { 0.0 };
    // The unit is chosen after rounding: 999.7 µs is `1.0 ms`, not `1000 µs`.
    let (v, unit) = if us >= 999_500.0 {
        (us / 1e6, "s")
    } else if us >= 999.5 {
        (us / 1e3, "ms")
    } else if us >= 0.9995 {
        (us, "µs")
    } else {
        (us * 1e3, "ns")
    };
    format!("{} {unit}", two_digits(v))
}

/// A rate for a sentence: two significant digits from 100 up (`775` -> `780 ops/s`), whole below.
pub fn rounded_rate(ops_per_s: f64) -> String {
    let v = if ops_per_s.is_finite() {
        ops_per_s
    } else {
        0.0
    };
    if v.abs() >= 100.0 {
        format!("{} ops/s", two_digits(v))
    } else {
        format!("{v:.0} ops/s")
    }
}

/// A ratio: `1.25x`.
pub fn ratio(v: f64) -> String {
    format!("{v:.2}x")
}

/// A value with its unit as charts and `compare` label it: `µs`, `ms` and `s` as durations, `%` as a
/// percentage, `x` as a ratio, no unit as a count, any other label after the count (`1.2k ops/s`).
pub fn value(v: f64, unit: &str) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    match unit {
        "µs" => duration_us(v),
        "ms" => duration_ns(v * 1e6),
        "s" => duration_s(v),
        "%" => percent(v),
        "x" => ratio(v),
        "" => count(v),
        u => format!("{} {u}", count(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_one_unit_by_size_whatever_they_are_given_in() {
        assert_eq!(duration_ns(850.0), "850ns");
        assert_eq!(duration_us(310.54), "310.5µs");
        assert_eq!(duration_us(3101.0), "3.10ms");
        assert_eq!(duration_ns(3_810_000.0), "3.81ms");
        assert_eq!(duration_s(1.25), "1.25s");
        assert_eq!(value(3101.0, "µs"), duration_us(3101.0));
        assert_eq!(value(2.0, "ms"), "2.00ms");
        assert_eq!(value(f64::NAN, "s"), "0");
    }

    #[test]
    fn bytes_counts_shares_and_ratios() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(count(950.0), "950");
        assert_eq!(count(12_345.0), "12k");
        assert_eq!(count(3_400_000.0), "3.4M");
        assert_eq!(count(2.5), "2.50");
        assert_eq!(count(0.125), "0.125");
        assert_eq!(share(Some(0.123)), "12.3%");
        assert_eq!(share(None), "-");
        assert_eq!(ratio(1.254), "1.25x");
        assert_eq!(value(1200.0, "ops/s"), "1200 ops/s");
        assert_eq!(clock(45.2), "45s");
        assert_eq!(clock(185.0), "3m05s");
        assert_eq!(clock(7620.0), "2h07m");
        assert_eq!(clock(0.25), "250.00ms");
    }

    #[test]
    fn sentences_say_two_digits() {
        assert_eq!(rounded_us(1873.412), "1.9 ms");
        assert_eq!(rounded_us(412.0), "410 µs");
        assert_eq!(rounded_us(999.7), "1.0 ms");
        assert_eq!(rounded_us(13_041.663), "13 ms");
        assert_eq!(rounded_us(2_818_572.0), "2.8 s");
        assert_eq!(rounded_us(0.25), "250 ns");
        assert_eq!(rounded_rate(775.0), "780 ops/s");
        assert_eq!(rounded_rate(9202.52), "9200 ops/s");
        assert_eq!(rounded_rate(42.4), "42 ops/s");
    }

    #[test]
    fn a_duration_option_is_refused_out_of_its_range_not_panicked_on() {
        use std::time::Duration;
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_duration("365days"),
            Ok(Duration::from_secs(365 * 86_400))
        );
        for bad in [
            "1e300", "1e19", "-1", "NaN", "inf", "0", "0s", "400days", "1e-9", "x",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("1ms to 365 days"), "{bad}: {e}");
        }
    }
}
