//! What a capture or a replay says, for people (text tables, HTML) and for machines (JSON).

pub mod analyze;
mod analyze_commands;
mod analyze_conn;
mod analyze_finish;
pub mod analyze_html;
mod analyze_pass;
pub mod analyze_text;
mod analyze_timeline;
pub mod cat;
pub mod compare;
mod compare_html;
mod compare_text;
pub mod html;
mod html_bar_chart;
mod html_chart;
mod html_line_chart;
pub mod html_summary;
pub mod inspect;
pub mod pair;
pub mod phases;
pub mod summary;
pub mod table;
