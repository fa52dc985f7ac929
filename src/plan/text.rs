//! Plans in reports: the short text table (100 columns at most), and an A/B run's plans side by
//! side with the shapes whose plan changed.

use super::PlanEntry;
use crate::figures::table::{Column, Table};
use crate::figures::text::cut;
use crate::figures::units;

/// Rows of the text table at most; the JSON has them all.
pub const TEXT_ROWS: usize = 20;

fn count(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| units::count(v as f64))
}

/// The plans table, for the text and the page: shape, target, plan or error, keys and documents
/// examined, documents returned, documents examined over the run (documents examined per
/// request times the shape's requests). The text cuts the shape, and the plan to what the other
/// columns leave, so that a row fits 100 columns; it
/// shows a target column only in an A/B run (its label, `*` when the plan changed); the page
/// keeps every text whole, with the target's label and `changed` in a column of its own.
pub fn table(entries: &[PlanEntry]) -> Table {
    let targets = entries.iter().any(|e| e.target.is_some());
    let shape_w = if targets { 28 } else { 34 };
    let mut columns = vec![Column::new("shape").cut(shape_w)];
    if targets {
        columns.push(Column::new("target").cut(6).text_only());
    }
    columns.extend([
        Column::new("target").html_only(),
        Column::new("plan").fit(),
        Column::new("keys"),
        Column::new("docs"),
        Column::new("returned"),
        Column::new("run docs"),
        Column::new("").html_only(),
    ]);
    let mut t = Table::with_columns(columns);
    for e in entries {
        let changed = e.plan_changed == Some(true);
        let label = e.target.clone().unwrap_or_default();
        let mut row = vec![e.shape.clone()];
        if targets {
            row.push(format!("{label}{}", if changed { "*" } else { "" }));
        }
        row.extend([
            label,
            e.plan_or_error(),
            count(e.keys_examined),
            count(e.docs_examined),
            count(e.n_returned),
            count(e.docs_examined_run),
            if changed { "changed" } else { "" }.into(),
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
    out.push_str(&table(&entries[..entries.len().min(TEXT_ROWS)]).render());
    if entries.iter().any(|e| e.plan_changed == Some(true)) {
        out.push_str("(* this target's plan differs from the control's)\n");
    }
    if entries.len() > TEXT_ROWS {
        out.push_str(&format!(
            "… and {} more rows (every row in the JSON and on the page)\n",
            entries.len() - TEXT_ROWS
        ));
    }
    out
}

/// An A/B run's plans: every target's entries (labelled, control first), grouped by shape in
/// the order the shapes were met, each with `plan_changed`: this target's plan line differs
/// from the control's (both explained without an error; the control's own entry is never
/// marked). Also a finding for each shape whose plan changed on some target.
pub fn side_by_side(per_target: Vec<(String, Vec<PlanEntry>)>) -> (Vec<PlanEntry>, Vec<String>) {
    let first = per_target.first().map(|(label, _)| label.clone());
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
        // The control's entry is the reference; a shape the control did not explain has none.
        let control = group
            .iter()
            .find(|e| e.target.as_deref() == first.as_deref())
            .and_then(|e| e.plan.clone());
        let control_at = group
            .iter()
            .find(|e| e.target.as_deref() == first.as_deref())
            .map(|e| e.schema_changes);
        for e in &mut group {
            // Plans explained at another point of the capture's schema changes (an index made
            // between the two explains) are not compared.
            let differs = e.target.as_deref() != first.as_deref()
                && control.is_some()
                && e.plan.is_some()
                && e.plan != control
                && e.schema_changes.is_some()
                && control_at == Some(e.schema_changes);
            e.plan_changed = Some(differs);
        }
        if group.iter().any(|e| e.plan_changed == Some(true)) {
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
        out.extend(group);
    }
    (out, findings)
}
