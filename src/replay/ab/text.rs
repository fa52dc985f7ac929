//! The A/B report as text: the targets, the comparison per command, the differences, the findings.

use super::report::{AbReport, AbRow, TargetReport};
use super::stats::RatioEstimate;
use crate::figures::table::Table;
use crate::figures::units;

impl AbReport {
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "A/B replay of {} ({}), {} wall, {} requests paired, {} unpaired\n",
            self.capture,
            self.options.pacing,
            units::duration_s(self.wall_s),
            self.pairs.paired,
            self.pairs.unpaired
        ));
        let mut t = Table::new(TargetReport::HEADERS);
        for x in &self.targets {
            let complete = if x.complete { "yes" } else { "no (partial)" };
            t.row(x.cells(complete.into()));
        }
        out.push_str(&t.render());
        out.push('\n');
        out.push_str("per command (latency p50 / p99 per target; ratios against the control):\n");
        out.push_str(&self.rows_table("command", &self.per_command));
        out.push('\n');
        out.push_str("per namespace:\n");
        out.push_str(&self.rows_table("namespace", &self.per_namespace));
        out.push('\n');
        out.push_str(&self.differences_text());
        if let Some(cpu) = self.replayer_cpu_us_per_op {
            out.push_str(&format!(
                "replayer CPU: {} per request (all targets)\n",
                units::duration_us(cpu)
            ));
        }
        if !self.findings.is_empty() {
            out.push_str("\nfindings:\n");
            for f in &self.findings {
                out.push_str(&format!("  {f}\n"));
            }
        }
        out
    }

    fn rows_table(&self, key: &str, rows: &std::collections::BTreeMap<String, AbRow>) -> String {
        let mut headers = vec![key.to_string()];
        for x in &self.targets {
            headers.push(format!("{} ops", x.label));
            headers.push(format!("{} p50/p99", x.label));
        }
        for x in self.targets.iter().skip(1) {
            headers.push(format!(
                "{}/{} mean (interval)",
                x.label, self.targets[0].label
            ));
            headers.push(format!(
                "{}/{} median (interval)",
                x.label, self.targets[0].label
            ));
            headers.push(format!("{}/{} p99", x.label, self.targets[0].label));
        }
        let mut t = Table::new(headers);
        for (name, row) in
            std::iter::once(("all", &self.overall)).chain(rows.iter().map(|(k, v)| (k.as_str(), v)))
        {
            let mut cells = vec![name.to_string()];
            for s in &row.targets {
                cells.push(format!(
                    "{}{}",
                    units::count(s.count as f64),
                    errors(s.errors)
                ));
                cells.push(format!(
                    "{} / {}",
                    units::duration_us(s.latency.p50_us),
                    units::duration_us(s.latency.p99_us)
                ));
            }
            for r in &row.ratios {
                let interval = |e: Option<RatioEstimate>| {
                    e.map_or("-".into(), |m| {
                        format!(
                            "{} ({}-{})",
                            units::ratio(m.ratio),
                            units::ratio(m.low),
                            units::ratio(m.high)
                        )
                    })
                };
                cells.push(interval(r.mean));
                cells.push(interval(r.median));
                cells.push(r.p99.map_or("-".into(), units::ratio));
            }
            t.row(cells);
        }
        t.render()
    }

    fn differences_text(&self) -> String {
        let d = &self.differences;
        let mut out = format!(
            "reply differences ({} replies compared{}):\n",
            d.compared,
            if d.baseline {
                ", noise measured against the second baseline"
            } else {
                ", no second baseline: server clock fields ignored, other noise not filtered"
            }
        );
        if d.fields.is_empty() {
            out.push_str("  none\n");
            return out;
        }
        let mut t = Table::new([
            "field",
            "compared",
            "differed",
            "noise rate",
            "verdict",
            "example",
        ]);
        for (name, f) in &d.fields {
            let verdict = if f.real {
                "REAL"
            } else if f.unexplained > 0 {
                "noise (field too noisy)"
            } else {
                "noise"
            };
            let example = f.examples.first().map_or(String::new(), |e| {
                let mut s = format!(
                    "{}: {} vs {}",
                    e["command"].as_str().unwrap_or(""),
                    e["control"],
                    e["candidate"]
                );
                s.truncate(80);
                s
            });
            t.row([
                name.clone(),
                units::count(f.compared as f64),
                units::count(f.differed as f64),
                units::percent(f.noise_rate * 100.0),
                verdict.into(),
                example,
            ]);
        }
        out.push_str(&t.render());
        out
    }
}

fn errors(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} err)")
    }
}
