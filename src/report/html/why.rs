//! The "why" sections every page shares: errors by command and code, the slowest requests and the
//! query plans, each a table with the whole text (the text output cuts it to fit 100 columns).

use super::Page;
use crate::figures::errors::ErrorsReport;
use crate::figures::slowest::SlowRequest;
use crate::plan::PlanEntry;

/// Errors by command and code, with an example message and the shapes they came from, and
/// what a majority of DuplicateKey usually means (restore a snapshot), as the text says it.
pub fn errors(page: Page, e: &ErrorsReport) -> Page {
    if e.errors_by_code.is_empty() {
        return page;
    }
    let mut page = page.section("Errors by command and code").table(&e.table());
    if e.errors_by_code_other > 0 {
        page = page.paragraph(&format!(
            "{} more errors of other commands and codes (past the bound on distinct entries).",
            e.errors_by_code_other
        ));
    }
    if let Some(hint) = e.duplicate_key_hint() {
        page = page.paragraph(&format!("{}{}.", hint[..1].to_uppercase(), &hint[1..]));
    }
    page
}

/// The slowest requests, slowest first, with their bodies.
pub fn slowest(page: Page, slow: &[SlowRequest]) -> Page {
    if slow.is_empty() {
        return page;
    }
    page.section(&format!("The {} slowest requests", slow.len()))
        .table(&crate::figures::slowest::table(slow))
}

/// The plans of the explained shapes (`--explain`), per target in an A/B run.
pub fn plans(page: Page, plans: Option<&[PlanEntry]>) -> Page {
    let Some(plans) = plans.filter(|p| !p.is_empty()) else {
        return page;
    };
    page.section("Query plans (explain, executionStats)")
        .table(&crate::plan::text::table(plans))
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
        plan.docs_examined = Some(15);
        plan.count_requests(3_000);
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
            "run docs",
            "45k",
            "Most errors are DuplicateKey (11000)",
            "restore a snapshot",
        ] {
            assert!(html.contains(needle), "{needle} missing");
        }
        let empty = sections(Page::new("t"), &ErrorsReport::default(), &[], None).render();
        assert!(!empty.contains("Errors by command"));
        assert!(!empty.contains("slowest"));
        assert!(!empty.contains("Query plans"));
    }
}
