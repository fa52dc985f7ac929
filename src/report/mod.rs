//! What a capture or a replay says, for people (text tables, HTML) and for machines (JSON).

pub mod analyze;
mod analyze_conn;
pub mod analyze_html;
mod analyze_pass;
pub mod analyze_text;
mod analyze_timeline;
pub mod cat;
pub mod compare;
pub mod html;
mod html_chart;
pub mod html_summary;
pub mod inspect;
pub mod pair;
pub mod phases;
pub mod summary;
pub mod table;
