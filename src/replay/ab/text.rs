//! The A/B report as text: the targets, the comparison per command, the differences, the findings.

use super::report::{AbReport, AbRow};
use super::shapes;
use super::tables;
use crate::figures::text::fit_lines;
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
        out.push_str(&tables::targets(self).render());
        out.push_str(&self.run.text());
        out.push_str(&self.errors_text());
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push('\n');
        for (key, rows) in [
            ("command", &self.per_command),
            ("namespace", &self.per_namespace),
        ] {
            let [latency, ratios] = tables::comparison_text(self, key, rows);
            out.push_str(&format!(
                "per {key}: ops, errors per target, latency p50 / p99 per target\n"
            ));
            out.push_str(&latency.render());
            let control = self.targets.first().map_or("", |t| t.label.as_str());
            out.push_str(&format!(
                "per {key}: ratios to {}, median (95% interval) and p99; means in JSON/HTML\n",
                tables::cut_label(control)
            ));
            out.push_str(&ratios.render());
            out.push_str(&not_findings_legend(&self.overall, rows));
            out.push('\n');
        }
        if !self.shapes.is_empty() {
            let labels: Vec<String> = self.targets.iter().map(|t| t.label.clone()).collect();
            out.push_str(&format!(
                "per query shape, the {} whose total time moved most (of {}; mean ratio and interval):\n",
                self.shapes.len().min(shapes::TEXT_ROWS),
                self.shapes.len()
            ));
            out.push_str(&shapes::table(&self.shapes, &labels, shapes::TEXT_ROWS).render());
            out.push_str(
                "(share: of the summed latency of every request replayed into that target)\n",
            );
            out.push('\n');
        }
        out.push_str(&self.differences_text());
        if let Some(load) = &self.load {
            out.push_str(&load.text());
        }
        if let Some(plans) = &self.plans {
            out.push_str(&crate::plan::text::text(plans));
        }
        out.push_str(&self.state_text());
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
        if !self.set_aside.is_empty() {
            out.push_str("\nnot findings (an interval clear of 1, but):\n");
            for f in &self.set_aside {
                out.push_str(&format!("  {f}\n"));
            }
        }
        out.push_str(&self.control_text());
        fit_lines(&out)
    }

    /// Each target's errors by code, a line each, and what a majority of DuplicateKey means.
    fn errors_text(&self) -> String {
        let mut out = String::new();
        for t in &self.targets {
            if let Some(line) = t.replay.errors.line() {
                out.push_str(&format!("{}: {line}\n", t.label));
            }
            if let Some(hint) = t.replay.errors.duplicate_key_hint() {
                out.push_str(&format!("{}: {hint}\n", t.label));
            }
        }
        out
    }

    /// With A2: per command and per query shape the text lists, what A2 showed against A and
    /// whether the candidate went beyond it.
    fn control_text(&self) -> String {
        let listed: Vec<&str> = self
            .shapes
            .iter()
            .take(shapes::TEXT_ROWS)
            .map(|s| s.hash.as_str())
            .collect();
        let per_command: Vec<_> = self
            .control
            .iter()
            .filter(|c| {
                c.kind == "command"
                    || (c.kind == "shape" && c.hash.as_deref().is_some_and(|h| listed.contains(&h)))
            })
            .collect();
        if per_command.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "\nthe control's copy (a candidate's ratio within what it shows is not a finding):\n",
        );
        for c in per_command {
            out.push_str(&format!("  {}\n", c.sentence));
        }
        out
    }

    fn differences_text(&self) -> String {
        let d = &self.differences;
        let mut out = format!(
            "reply differences ({} replies compared{}):\n",
            d.compared,
            if d.baseline {
                ", noise measured against the second baseline"
            } else {
                ";\n  no second baseline: server clock fields ignored, other noise not filtered"
            }
        );
        if d.fields.is_empty() {
            out.push_str("  none\n");
            return out;
        }
        out.push_str(&tables::differences(self).render());
        out.push_str("first example of each:\n");
        out.push_str(&tables::first_examples(self));
        out
    }
}

/// Under a table of ratios: why each ratio marked [`tables::NOT_A_FINDING`] is not a finding.
fn not_findings_legend(
    overall: &AbRow,
    rows: &std::collections::BTreeMap<String, AbRow>,
) -> String {
    let mut out = String::new();
    let all = std::iter::once(("all", overall));
    for (name, row) in all.chain(rows.iter().map(|(k, v)| (k.as_str(), v))) {
        for x in &row.ratios {
            if let Some(why) = &x.not_a_finding {
                out.push_str(&format!(
                    "  {} not a finding: {name}, {}: {why}\n",
                    tables::NOT_A_FINDING,
                    x.target
                ));
            }
        }
    }
    out
}

impl AbReport {
    /// `--check-state`: each target's end against the capture's, then the targets' against each
    /// other.
    fn state_text(&self) -> String {
        let mut out = String::new();
        for t in &self.targets {
            if let Some(state) = &t.replay.state {
                out.push_str(&format!("{}: {}", t.label, state.text()));
            }
        }
        if let Some(between) = &self.state_between {
            out.push_str(&between.text());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::{CommandSummary, LatencySummary};
    use crate::replay::ab::report::{AbRow, FieldReport, RatioReport, TargetReport};
    use crate::replay::ab::stats::RatioEstimate;

    /// Three targets, long names and wide numbers: every table line within 100 columns.
    #[test]
    fn three_targets_fit_100_columns() {
        let mut r = AbReport::default();
        for (label, role) in [("A", "control"), ("B", "candidate"), ("A2", "baseline")] {
            let mut t = TargetReport {
                label: label.into(),
                role: role.into(),
                server_cpu_us_per_op: Some(1234.5),
                ..TargetReport::default()
            };
            t.replay.target =
                "mongodb://db-candidate.internal.example.net:27017/?directConnection=true".into();
            t.replay.summary.ops = 1_234_567;
            t.replay.summary.ops_per_s = 12_345.0;
            r.targets.push(t);
        }
        let summary = CommandSummary {
            count: 1_234_567,
            errors: 12_345,
            ops_per_s: 12_345.0,
            latency: LatencySummary {
                p50_us: 1234.5,
                p99_us: 123_456.0,
                ..LatencySummary::default()
            },
        };
        let estimate = Some(RatioEstimate {
            ratio: 1.234,
            low: 1.123,
            high: 1.345,
            confidence: 0.95,
            pairs: 1000,
        });
        let ratio = RatioReport {
            target: "B".into(),
            p99: Some(1.5),
            mean: estimate,
            median: estimate,
            not_a_finding: Some("within what A2 shows: A2 1.20x (1.10-1.40x)".into()),
            ..RatioReport::default()
        };
        let row = AbRow {
            targets: vec![summary.clone(); 3],
            ratios: vec![ratio.clone(), ratio],
            ..AbRow::default()
        };
        r.overall = row.clone();
        r.per_command
            .insert("commitTransaction".into(), row.clone());
        r.per_namespace
            .insert("inventory_service.warehouse_items".into(), row);
        r.differences.fields.insert(
            "cursor.firstBatch[].lastModified".into(),
            FieldReport {
                compared: 1_234_567,
                differed: 123_456,
                unexplained: 12,
                examples: vec![serde_json::json!({
                    "command": "find",
                    "control": "x".repeat(200),
                    "candidate": "y",
                })],
                ..FieldReport::default()
            },
        );
        // Sentences longer than a line: wrapped under a hanging indent, never cut.
        let shape = "`find shop.customers {city: ?string, status: {$in: [?string]}} sort {ts: -1}`";
        r.findings = vec![format!(
            "B is 1.73x slower on {shape} (95% interval 1.50-1.99x): 30% of the workload's time \
             on A, 46% on B"
        )];
        r.warnings = vec![format!(
            "B: 170 of 1,000 requests failed (17.0%): {}",
            "x ".repeat(80)
        )];
        r.load = Some(crate::replay::measure::load::LoadReport {
            other_cores: 1.91,
            disturbed: true,
            ..Default::default()
        });
        let text = r.render_text();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&r.findings[0]), "{text}");
        assert!(text.contains("\n  B is 1.73x slower on"), "{text}");
        assert!(text.contains("\n    "), "a hanging indent: {text}");
        assert!(
            flat.contains("machine: DISTURBED: the figures may be off"),
            "{text}"
        );
        for line in text.lines() {
            assert!(
                line.chars().count() <= 100,
                "{} wide: {line}",
                line.chars().count()
            );
        }
        assert!(
            text.contains("B median") && text.contains("1.23x (1.12x-1.34x)"),
            "{text}"
        );
        assert!(
            text.contains("  cursor.firstBatch[].lastModified: find: \"xxx"),
            "{text}"
        );
        // A ratio clear of 1 that is not a finding is marked, and the text says why.
        assert!(text.contains("1.23x (1.12x-1.34x) ~"), "{text}");
        assert!(
            text.contains("  ~ not a finding: commitTransaction, B: within what A2 shows"),
            "{text}"
        );
    }
}
