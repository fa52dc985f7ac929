//! The "why" sections every page shares: errors by command and code, the slowest requests and the
//! query plans, each a table with the whole text (the text output cuts it to fit 100 columns).

use super::Page;
use crate::figures::errors::ErrorsReport;
use crate::figures::slowest::SlowRequest;
use crate::figures::table::Table;
use crate::figures::units;
use crate::plan::PlanEntry;

/// Errors by command and code, with an example message and the shapes they came from.
pub fn errors(page: Page, e: &ErrorsReport) -> Page {
    if e.errors_by_code.is_empty() {
        return page;
    }
    let rows: Vec<Vec<String>> = e
        .errors_by_code
        .iter()
        .map(|x| {
            let code = match (x.code, &x.code_name) {
                (Some(c), Some(n)) => format!("{n} ({c})"),
                (Some(c), None) => c.to_string(),
                (None, Some(n)) => n.clone(),
                (None, None) => "-".into(),
            };
            let shapes: Vec<&str> = x.shapes.iter().map(|s| s.shape.as_str()).collect();
            vec![
                x.command.clone(),
                code,
                if x.write_error {
                    "write error"
                } else {
                    "reply"
                }
                .into(),
                units::count(x.count as f64),
                x.errmsg.clone().unwrap_or_default(),
                shapes.join("; "),
            ]
        })
        .collect();
    let mut page = page
        .section("Errors by command and code")
        .table(&Table::new(["command", "code", "as", "count", "errmsg", "shapes"]).with_rows(rows));
    if e.errors_by_code_other > 0 {
        page = page.paragraph(&format!(
            "{} more errors of other commands and codes (past the bound on distinct entries).",
            e.errors_by_code_other
        ));
    }
    page
}

/// The slowest requests, slowest first, with their bodies.
pub fn slowest(page: Page, slow: &[SlowRequest]) -> Page {
    if slow.is_empty() {
        return page;
    }
    let us = |v: Option<f64>| v.map_or("-".into(), units::duration_us);
    let rows: Vec<Vec<String>> = slow
        .iter()
        .map(|s| {
            vec![
                format!("{:.3} s", s.at_s),
                s.connection.to_string(),
                s.application.clone().unwrap_or_default(),
                s.shape.clone().unwrap_or_else(|| s.command.clone()),
                us(s.recorded_us),
                us(s.replayed_us),
                s.body.clone(),
            ]
        })
        .collect();
    page.section(&format!("The {} slowest requests", slow.len()))
        .table(
            &Table::new([
                "at",
                "connection",
                "application",
                "shape",
                "recorded",
                "replayed",
                "request",
            ])
            .with_rows(rows),
        )
}

/// The plans of the explained shapes (`--explain`), per target in an A/B run.
pub fn plans(page: Page, plans: Option<&[PlanEntry]>) -> Page {
    let Some(plans) = plans.filter(|p| !p.is_empty()) else {
        return page;
    };
    let n = |v: Option<u64>| v.map_or("-".into(), |v| units::count(v as f64));
    let rows: Vec<Vec<String>> = plans
        .iter()
        .map(|p| {
            vec![
                p.shape.clone(),
                p.target.clone().unwrap_or_default(),
                p.plan_or_error(),
                n(p.keys_examined),
                n(p.docs_examined),
                n(p.n_returned),
                match p.plan_changed {
                    Some(true) => "changed".into(),
                    _ => String::new(),
                },
            ]
        })
        .collect();
    page.section("Query plans (explain, executionStats)").table(
        &Table::new(["shape", "target", "plan", "keys", "docs", "returned", ""]).with_rows(rows),
    )
}

/// All three, in that order.
pub fn sections(
    page: Page,
    e: &ErrorsReport,
    slow: &[SlowRequest],
    plan_entries: Option<&[PlanEntry]>,
) -> Page {
    let page = errors(page, e);
    let page = plans(page, plan_entries);
    slowest(page, slow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::errors::{ErrorByCode, ErrorShape};

    #[test]
    fn errors_plans_and_the_slowest_are_tables_with_their_whole_text() {
        let e = ErrorsReport {
            errors_by_code: vec![ErrorByCode {
                command: "insert".into(),
                code: Some(11000),
                code_name: Some("DuplicateKey".into()),
                write_error: true,
                count: 30,
                statements: 30,
                errmsg: Some("E11000 duplicate key error <b>".into()),
                shapes: vec![ErrorShape {
                    hash: "0123456789abcdef".into(),
                    shape: "insert shop.orders".into(),
                }],
            }],
            errors_by_code_other: 2,
        };
        let slow = vec![SlowRequest {
            at_s: 1.5,
            connection: 7,
            command: "find".into(),
            shape: Some("find shop.orders {status: ?string}".into()),
            recorded_us: Some(1500.0),
            body: r#"{"find": "orders", "filter": {"status": "A"}}"#.into(),
            ..SlowRequest::default()
        }];
        let mut plan = PlanEntry::of_shape(
            "0123",
            "find shop.orders {a: ?number}",
            "find",
            "shop.orders",
        );
        plan.plan = Some("IXSCAN {a: 1} -> FETCH".into());
        plan.keys_examined = Some(15);
        plan.plan_changed = Some(true);
        let html = sections(Page::new("t"), &e, &slow, Some(&[plan])).render();
        for needle in [
            "Errors by command and code",
            "DuplicateKey (11000)",
            "E11000 duplicate key error &lt;b&gt;",
            "insert shop.orders",
            "2 more errors",
            "The 1 slowest requests",
            "find shop.orders {status: ?string}",
            "1.50ms",
            "IXSCAN {a: 1} -&gt; FETCH",
            "changed",
        ] {
            assert!(html.contains(needle), "{needle} missing");
        }
        let empty = sections(Page::new("t"), &ErrorsReport::default(), &[], None).render();
        assert!(!empty.contains("Errors by command"));
        assert!(!empty.contains("slowest"));
        assert!(!empty.contains("Query plans"));
    }
}
