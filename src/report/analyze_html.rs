//! `mongotape analyze --html`.

use super::analyze::AnalyzeReport;

pub fn render_html(r: &AnalyzeReport) -> String {
    format!("<!doctype html><title>{}</title>", r.summary.label)
}
