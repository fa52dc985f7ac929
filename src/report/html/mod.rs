//! Self-contained HTML reports: one file, inline CSS, charts as inline SVG drawn here, a few lines
//! of inline JavaScript for sortable tables. Nothing is fetched from the network.
//!
//! Any report builds a page the same way:
//!
//! ```
//! use mongotape::figures::table::Table;
//! use mongotape::report::html::{BarChart, LineChart, Page};
//! let html = Page::new("replay of bench.mtape")
//!     .facts(&[("ops/s", "1,234".into())])
//!     .section("Latency")
//!     .bar_chart(BarChart::new("p50 per command", "µs").categories(["find", "insert"]).series("p50", [210.0, 330.0]))
//!     .line_chart(LineChart::new("Throughput", "s", "ops/s").series("ops/s", vec![(0.0, 10.0), (1.0, 12.0)]))
//!     .table(&Table::new(["command", "count"]).with_rows(vec![vec!["find".into(), "3".into()]]))
//!     .render();
//! assert!(html.contains("<svg"));
//! ```
//!
//! Every string is escaped; every number is checked finite before it reaches the SVG.
//!
//! This file is the page builder; [`BarChart`] and [`LineChart`] (with what they share in `chart`)
//! draw the charts. The pages: [`analyze`], [`compare`] and [`replay`]; the sections more than one
//! page shows: [`summary`] (any report's summary), [`phases`] (per step marker) and `why` (errors
//! by code, the slowest requests, the query plans).
//!
//! Layers, bottom up: distribution escape < chart < bar_chart line_chart < mod.rs < compare phases summary why < ab analyze replay shadow

pub mod ab;
pub mod analyze;
mod bar_chart;
mod chart;
pub mod compare;
pub mod distribution;
mod escape;
mod line_chart;
pub mod phases;
pub mod replay;
pub mod shadow;
pub mod summary;
mod why;

use crate::figures::table::{Align, Table};
pub use bar_chart::BarChart;
pub use escape::esc;
pub use line_chart::LineChart;

/// An HTML report under construction.
#[derive(Debug, Clone, Default)]
pub struct Page {
    title: String,
    subtitle: Vec<String>,
    body: String,
    charts: usize,
}

impl Page {
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_owned(),
            ..Default::default()
        }
    }

    /// A line of small print under the title.
    pub fn subtitle(mut self, text: &str) -> Page {
        self.subtitle.push(text.to_owned());
        self
    }

    /// Headline figures as cards: `(name, value)`.
    pub fn facts(mut self, facts: &[(&str, String)]) -> Page {
        self.body.push_str("<div class=\"facts\">");
        for (name, value) in facts {
            self.body.push_str(&format!(
                "<div class=\"fact\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>",
                esc(value),
                esc(name)
            ));
        }
        self.body.push_str("</div>\n");
        self
    }

    pub fn section(mut self, heading: &str) -> Page {
        self.body.push_str(&format!("<h2>{}</h2>\n", esc(heading)));
        self
    }

    pub fn subsection(mut self, heading: &str) -> Page {
        self.body.push_str(&format!("<h3>{}</h3>\n", esc(heading)));
        self
    }

    pub fn paragraph(mut self, text: &str) -> Page {
        self.body.push_str(&format!("<p>{}</p>\n", esc(text)));
        self
    }

    pub fn bar_chart(mut self, chart: BarChart) -> Page {
        self.charts += 1;
        self.body.push_str(&chart.render_svg());
        self
    }

    pub fn line_chart(mut self, chart: LineChart) -> Page {
        self.charts += 1;
        self.body.push_str(&chart.render_svg());
        self
    }

    /// Charts side by side, two or three to a row: small multiples (see [`LineChart::small`]).
    pub fn grid(mut self, charts: impl IntoIterator<Item = LineChart>) -> Page {
        self.body.push_str("<div class=\"grid\">");
        for chart in charts {
            self.charts += 1;
            self.body.push_str(&chart.render_svg());
        }
        self.body.push_str("</div>\n");
        self
    }

    /// Text kept as written (JSON, say) under a one-line summary, unfolded when `open`.
    pub fn details(mut self, summary: &str, text: &str, open: bool) -> Page {
        self.body.push_str(&format!(
            "<details{}><summary>{}</summary><pre>{}</pre></details>\n",
            if open { " open" } else { "" },
            esc(summary),
            esc(text)
        ));
        self
    }

    /// A table (the same model the text reports render), every cell whole. A column aligned
    /// [`Align::Auto`] is right-aligned when all its cells look numeric. Click a header to sort.
    pub fn table(mut self, table: &Table) -> Page {
        self.body.push_str(&table_html(table));
        self
    }

    /// A table folded under a one-line summary (closed until clicked): detail a reader may want,
    /// that would otherwise push the rest of the page down.
    pub fn folded_table(mut self, summary: &str, table: &Table) -> Page {
        self.body.push_str(&format!(
            "<details class=\"table\"><summary>{}</summary>{}</details>\n",
            esc(summary),
            table_html(table)
        ));
        self
    }

    /// The whole document.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(self.body.len() + 8192);
        s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        s.push_str(&format!(
            "<title>{}</title><style>{CSS}</style></head>\n<body>",
            esc(&self.title)
        ));
        s.push_str(&format!("<h1>{}</h1>\n", esc(&self.title)));
        for line in &self.subtitle {
            s.push_str(&format!("<div class=\"sub\">{}</div>\n", esc(line)));
        }
        s.push_str(&self.body);
        s.push_str(&format!(
            "<footer data-charts=\"{}\">mongotape {}</footer>\n",
            self.charts,
            env!("CARGO_PKG_VERSION"),
        ));
        s.push_str(&format!("<script>{JS}</script>\n</body></html>\n"));
        s
    }
}

/// A table as HTML: the columns the page shows, every cell whole (folded where its column
/// says), numeric columns right-aligned, sortable.
fn table_html(table: &Table) -> String {
    let table = table.for_html();
    let rows = table.rows();
    let numeric: Vec<bool> = (table.columns().iter().enumerate())
        .map(|(i, c)| match c.alignment() {
            Align::Left => false,
            Align::Right => true,
            Align::Auto => rows
                .iter()
                .filter_map(|r| r.get(i))
                .all(|c| c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-')),
        })
        .collect();
    let class = |i: usize| if numeric[i] { " class=\"num\"" } else { "" };
    let folded: Vec<bool> = table.columns().iter().map(|c| c.is_folded()).collect();
    let mut t = String::from("<div class=\"tw\"><table class=\"sortable\"><thead><tr>");
    for (i, h) in table.headers().iter().enumerate() {
        t.push_str(&format!("<th{}>{}</th>", class(i), esc(h)));
    }
    t.push_str("</tr></thead><tbody>");
    for row in rows {
        t.push_str("<tr>");
        for (i, cell) in row.iter().enumerate().take(numeric.len()) {
            let text = if folded[i] { fold(cell) } else { esc(cell) };
            t.push_str(&format!("<td{}>{text}</td>", class(i)));
        }
        t.push_str("</tr>");
    }
    t.push_str("</tbody></table></div>\n");
    t
}

/// A folded cell: its first words on one line, the whole text under them on a click.
fn fold(cell: &str) -> String {
    if cell.is_empty() {
        return String::new();
    }
    let line: String = cell.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "<details class=\"cell\"><summary>{}</summary><pre>{}</pre></details>",
        esc(&crate::figures::text::cut(&line, FOLDED_LINE)),
        esc(cell)
    )
}

/// Characters of a folded cell shown before it is unfolded.
const FOLDED_LINE: usize = 48;

const CSS: &str = r#"
:root{--fg:#1d2330;--muted:#667085;--line:#e4e7ec;--bg:#fff;--card:#f7f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h3{font-size:14.5px;margin:18px 0 4px}
h2{font-size:17px;margin:28px 0 8px;padding-top:8px;border-top:1px solid var(--line)}
.sub{color:var(--muted);font-size:12.5px}
p{max-width:80ch}
.facts{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.fact{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:120px}
.fact .v{font-size:19px;font-weight:600;font-variant-numeric:tabular-nums}
.fact .k{color:var(--muted);font-size:12px}
figure{margin:12px 0 18px}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart{width:100%;height:auto;display:block;font-size:11px}
svg.chart text{fill:#344054}
svg.chart .grid{stroke:#eaecf0}
svg.chart .axis{stroke:#98a2b3}
svg.chart .mark:hover{opacity:.75}
svg.chart .na{fill:#98a2b3;font-style:italic}
svg.chart polyline{fill:none;stroke-width:1.8}
.tw{overflow-x:auto}
table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
td:not(.num){white-space:normal;overflow-wrap:break-word;min-width:8ch;max-width:40ch}
td details.cell summary{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11.5px;overflow-wrap:anywhere}
td details.cell pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0;min-width:36ch}
.tw.scrolls{box-shadow:inset -16px 0 12px -12px rgba(16,24,40,.35)}
.cue{color:#b54708;font-size:12px;margin:8px 0 -4px}
th{background:var(--card);cursor:pointer;user-select:none;white-space:normal;vertical-align:bottom}
th.num,td.num{text-align:right}
th.asc:after{content:" \25B2"}th.desc:after{content:" \25BC"}
footer{color:var(--muted);font-size:11.5px;margin-top:32px}
.empty{color:var(--muted);font-style:italic}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(400px,1fr));gap:0 20px}
.grid figure{margin:8px 0;min-width:0}
.grid figcaption{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
details{margin:6px 0}
summary{cursor:pointer}
pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px;font-size:12px;overflow-x:auto;max-height:360px}
"#;

/// Sortable tables; then marks the page as rendered (`data-rendered` on the body, for a headless
/// check), with the number of charts and data marks seen: nothing a reader needs to see.
const JS: &str = r#"
(function(){
  function key(t){var s=t.replace(/[,\s]/g,'');var m=s.match(/^(-?[0-9.]+)(ns|µs|ms|s|%|x|B|KiB|MiB|GiB)?$/);
    if(!m)return null;var v=parseFloat(m[1]);var u={ns:1e-9,'µs':1e-6,ms:1e-3,s:1,KiB:1024,MiB:1048576,GiB:1073741824}[m[2]];return u?v*u:v;}
  document.querySelectorAll('table.sortable').forEach(function(table){
    table.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('asc');
        table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){var x=a.cells[i].textContent,y=b.cells[i].textContent;var kx=key(x),ky=key(y);
          var c=(kx!==null&&ky!==null)?kx-ky:x.localeCompare(y);return asc?c:-c;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  // A table wider than the page says so above it, and shades its right edge.
  function cue(){
    document.querySelectorAll('.tw').forEach(function(w){
      var wide=w.scrollWidth>w.clientWidth+1;w.classList.toggle('scrolls',wide);
      var c=w.previousElementSibling;var has=c&&c.classList.contains('cue');
      if(wide&&!has){c=document.createElement('div');c.className='cue';
        c.textContent='\u2194 Wider than the page: scroll the table sideways for its right-hand columns.';
        w.parentNode.insertBefore(c,w);}
      if(!wide&&has)c.parentNode.removeChild(c);
    });
  }
  cue();window.addEventListener('resize',cue);
  var charts=document.querySelectorAll('svg.chart').length;
  var marks=document.querySelectorAll('svg.chart .mark, svg.chart polyline').length;
  document.body.setAttribute('data-rendered',charts+':'+marks);
  // Tables wider than the page (a reader would have to scroll sideways), for a headless check.
  var clipped=Array.prototype.filter.call(document.querySelectorAll('.tw'),function(w){
    return w.scrollWidth>w.clientWidth+1;}).length;
  document.body.setAttribute('data-clipped-tables',clipped);
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_from_a_capture() {
        let html = Page::new("<script>alert(1)</script>")
            .table(&Table::new(["cmd"]).with_rows(vec![vec!["</td><script>x</script>".into()]]))
            .bar_chart(
                BarChart::new("t\"", "µs")
                    .categories(["<b>"])
                    .series("s'", [f64::NAN]),
            )
            .render();
        assert!(!html.contains("<script>alert"));
        assert!(!html.contains("<b>"));
        assert_eq!(html.matches("<script>").count(), 1, "only our own script");
        assert!(!html.contains("NaN"));
    }
}
