use super::*;
use crate::replay::report::OpenLoopReport;

fn report(pacing: Pacing, lag_p50_us: f64, p50_us: f64) -> ReplayReport {
    let mut r = ReplayReport::default();
    r.options.pacing = pacing.describe();
    r.lag.latency.count = 100;
    r.lag.latency.p50_us = lag_p50_us;
    r.summary.overall.latency.p50_us = p50_us;
    r
}

#[test]
fn the_table_sets_recorded_latency_beside_replayed_within_100_columns() {
    let mut r = report(Pacing::Fast, 0.0, 480.0);
    let latency = |p50_us: f64| LatencySummary {
        count: 120_000,
        p50_us,
        p90_us: p50_us * 2.0,
        p99_us: p50_us * 4.0,
        p999_us: p50_us * 8.0,
        max_us: 1_234_567.0,
        ..LatencySummary::default()
    };
    let command = |p50_us: f64| CommandSummary {
        count: 120_000,
        errors: 12_345,
        ops_per_s: 3456.7,
        latency: latency(p50_us),
    };
    for name in ["commitTransaction", "find", "listCollections"] {
        r.summary.per_command.insert(name.into(), command(480.0));
        r.recorded.per_command.insert(name.into(), latency(320.0));
    }
    r.summary.overall = command(480.0);
    let text = r.render_text();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{} wide: {line}", line.len());
    }
    let find = text.lines().find(|l| l.starts_with("find ")).unwrap();
    assert!(
        find.contains("480.0µs") && find.contains("320.0µs") && find.contains("1.50x"),
        "{find}"
    );
    assert!(text.contains("includes the proxy's hop"), "{text}");
    // The page keeps every column.
    assert_eq!(r.command_table().for_html().headers().len(), 13);
}

#[test]
fn lag_is_left_out_of_a_fast_replay_and_flagged_when_it_dwarfs_the_latency() {
    let fast = report(Pacing::Fast, 0.127, 50.0).render_text();
    assert!(!fast.contains("schedule lag"), "{fast}");
    let small = report(Pacing::Recorded { speed: 1.0 }, 5.0, 50.0).render_text();
    assert!(small.contains("schedule lag: p50 5.0µs"), "{small}");
    assert!(!small.contains("WARNING"), "{small}");
    assert!(
        !small.contains("held"),
        "nothing held, no second line: {small}"
    );
    let mut held = report(Pacing::Recorded { speed: 1.0 }, 40.0, 500.0);
    held.lag.held = 7;
    held.lag.clock.p50_us = 3.0;
    held.lag.clock.p99_us = 60.0;
    // Sentences are wrapped at 100 columns: read them with their breaks undone.
    let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let held = flat(held.render_text());
    assert!(
        held.contains(
            "7 of 100 ops held past their time by earlier replies on their connection or \
             the order; the rest (the clock's own lag): p50 3.0µs p99 60.0µs"
        ),
        "{held}"
    );
    assert!(!held.contains("from the send"), "closed loop: {held}");
    let rate = Pacing::Rate { ops_per_s: 200.0 };
    let mut open = report(rate, 30.0, 250.0);
    open.options.open_loop = OpenLoopReport::of(&rate);
    open.lag.from_send.count = 100;
    open.lag.from_send.p50_us = 220.0;
    open.lag.from_send.p99_us = 900.0;
    let open = flat(open.render_text());
    assert!(
        open.contains(
            "latency from the send (the server's own; the table counts from the \
             intended time): p50 220.0µs p99 900.0µs"
        ),
        "{open}"
    );
    let big = flat(report(Pacing::Recorded { speed: 1.0 }, 800.0, 53.0).render_text());
    assert!(
        big.contains("WARNING: lag p50 800.0µs is 15.1x the p50 latency (53.0µs)"),
        "{big}"
    );
}
