//! The A/B report as text: the targets, the comparison per command, the differences, the findings.

use super::report::AbReport;
use super::tables;
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
        out.push_str(&self.errors_text());
        out.push('\n');
        out.push_str("per command (latency p50 / p99 per target; ratios against the control):\n");
        out.push_str(&tables::comparison(self, "command", &self.per_command).render());
        out.push('\n');
        out.push_str("per namespace:\n");
        out.push_str(&tables::comparison(self, "namespace", &self.per_namespace).render());
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
        out.push_str(&self.control_text());
        out
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

    /// With A2: per command, what A2 showed against A and whether the candidate went beyond it.
    fn control_text(&self) -> String {
        let per_command: Vec<_> = self
            .control
            .iter()
            .filter(|c| c.kind == "command")
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
                ", no second baseline: server clock fields ignored, other noise not filtered"
            }
        );
        if d.fields.is_empty() {
            out.push_str("  none\n");
            return out;
        }
        out.push_str(&tables::differences(self).render());
        out
    }
}
