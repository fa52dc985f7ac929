//! Plans in reports: the short text table (100 columns at most), and an A/B run's plans side by
//! side with the shapes whose plan changed.

use super::PlanEntry;
use crate::figures::table::Table;
use crate::figures::units;

/// Rows of the text table at most; the JSON has them all.
pub const TEXT_ROWS: usize = 20;

/// `text` cut to `width` characters, the last one `…` when cut.
pub fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn count(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| units::count(v as f64))
}

/// The plans table: shape, (target,) plan or error, keys and documents examined, documents
/// returned; shape and plan cut so that a row fits 100 columns.
pub fn table(entries: &[PlanEntry]) -> Table {
    let targets = entries.iter().any(|e| e.target.is_some());
    let (shape_w, plan_w) = if targets { (30, 26) } else { (34, 30) };
    let mut headers = vec!["shape"];
    if targets {
        headers.push("target");
    }
    headers.extend(["plan", "keys", "docs", "returned"]);
    let mut t = Table::new(headers);
    for e in entries.iter().take(TEXT_ROWS) {
        let mut row = vec![cut(&e.shape, shape_w)];
        if targets {
            let changed = if e.plan_changed == Some(true) {
                "*"
            } else {
                ""
            };
            row.push(cut(
                &format!("{}{changed}", e.target.as_deref().unwrap_or("")),
                6,
            ));
        }
        row.push(cut(&e.plan_or_error(), plan_w));
        row.extend([
            count(e.keys_examined),
            count(e.docs_examined),
            count(e.n_returned),
        ]);
        t.row(row);
    }
    t
}

/// The plans section of a text report: a heading, the table, and what was left out.
pub fn text(entries: &[PlanEntry]) -> String {
    let errors = entries.iter().filter(|e| e.error.is_some()).count();
    let mut out = format!(
        "plans ({} explained, {errors} failed; full shapes and plans in the JSON):\n",
        entries.len()
    );
    if entries.is_empty() {
        out.push_str("  none: no request of an explained command was answered\n");
        return out;
    }
    out.push_str(&table(entries).render());
    if entries.iter().any(|e| e.plan_changed == Some(true)) {
        out.push_str("(* the plan differs from the control's)\n");
    }
    if entries.len() > TEXT_ROWS {
        out.push_str(&format!("… and {} more\n", entries.len() - TEXT_ROWS));
    }
    out
}

/// An A/B run's plans: every target's entries (labelled, control first), grouped by shape in
/// the order the shapes were met, each with `plan_changed`: some target's plan line differs
/// from the control's (both explained without an error). Also a finding for each changed shape.
pub fn side_by_side(per_target: Vec<(String, Vec<PlanEntry>)>) -> (Vec<PlanEntry>, Vec<String>) {
    let mut order: Vec<String> = Vec::new();
    let mut by_hash: std::collections::HashMap<String, Vec<PlanEntry>> = Default::default();
    for (label, entries) in per_target {
        for mut e in entries {
            e.target = Some(label.clone());
            if !by_hash.contains_key(&e.hash) {
                order.push(e.hash.clone());
            }
            by_hash.entry(e.hash.clone()).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    let mut findings = Vec::new();
    for hash in order {
        let Some(mut group) = by_hash.remove(&hash) else {
            continue;
        };
        let control = group.first().and_then(|e| e.plan.clone());
        let changed = control.as_ref().is_some_and(|c| {
            group
                .iter()
                .skip(1)
                .any(|e| e.plan.as_ref().is_some_and(|p| p != c))
        });
        if changed {
            let sides: Vec<String> = group
                .iter()
                .map(|e| {
                    format!(
                        "{} on {}",
                        e.plan_or_error(),
                        e.target.as_deref().unwrap_or("?")
                    )
                })
                .collect();
            findings.push(format!(
                "plan changed on `{}`: {}",
                cut(&group[0].shape, 200),
                sides.join(", ")
            ));
        }
        for e in &mut group {
            e.plan_changed = Some(changed);
        }
        out.extend(group);
    }
    (out, findings)
}
