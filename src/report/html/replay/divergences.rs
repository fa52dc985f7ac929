//! The replay page's divergences: per command, how many live replies differed from the recorded
//! ones and in which fields, and the examples the report kept, the first of each command unfolded.

use crate::figures::table::Table;
use crate::replay::report::ReplayReport;
use crate::report::html::Page;

pub(super) fn section(mut page: Page, r: &ReplayReport) -> Page {
    if r.divergences.is_empty() {
        return page;
    }
    let rows: Vec<Vec<String>> = r
        .divergences
        .iter()
        .map(|(cmd, d)| {
            let fields: Vec<String> = d.fields.iter().map(|(f, n)| format!("{f} ({n})")).collect();
            vec![cmd.clone(), d.count.to_string(), fields.join(", ")]
        })
        .collect();
    page = page
        .section("Divergences from the recorded replies")
        .paragraph(
            "A live reply diverges when its outcome (ok, error code, documents written or \
             returned, cursor) differs from the recorded reply to the same request.",
        )
        .table(&Table::new(["command", "replies that differed", "fields (times)"]).with_rows(rows));
    for (cmd, d) in &r.divergences {
        for (i, example) in d.examples.iter().enumerate() {
            let fields = example
                .get("fields")
                .and_then(|f| f.as_array())
                .map(|f| {
                    f.iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            let text = serde_json::to_string_pretty(example).unwrap_or_default();
            page = page.details(
                &format!(
                    "{cmd}, example {} of the {} kept ({} differed): {fields}",
                    i + 1,
                    d.examples.len(),
                    d.count
                ),
                &text,
                i == 0,
            );
        }
    }
    page
}
