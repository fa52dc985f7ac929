//! A report page's layout as Chromium lays it out at a width, measured by a script run after the
//! page's own ([`probe_layout`]): tables wider than the page and their scroll cue, words of
//! namespace cells broken across lines, the small multiples' captions cut with an ellipsis. And
//! the page's tables read back from the DOM ([`dom_tables`]).

use super::html::{render_at, Rendered};
use std::path::Path;

/// Run after the page's script (which sets the cue): writes what it measured on `<body>`.
const PROBE: &str = r#"<script>(function(){
var b=document.body,wide=0,uncued=0;
document.querySelectorAll('.tw').forEach(function(w){
  if(w.scrollWidth<=w.clientWidth+1)return;wide++;var c=w.previousElementSibling;
  if(!w.classList.contains('scrolls')||!c||!c.classList.contains('cue'))uncued++;});
var broken=[],cells=0;
document.querySelectorAll('table').forEach(function(t){
  t.querySelectorAll('thead th').forEach(function(h,i){
    if(h.textContent.trim()!=='namespace')return;
    Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
      var n=r.cells[i].firstChild;cells++;if(!n||n.nodeType!==3)return;var re=/\S+/g,m;
      while((m=re.exec(n.data))){var g=document.createRange();g.setStart(n,m.index);
        g.setEnd(n,m.index+m[0].length);var tops={};
        Array.prototype.forEach.call(g.getClientRects(),function(x){tops[Math.round(x.top)]=1;});
        if(Object.keys(tops).length>1)broken.push(m[0]);}});});});
var caps=[];
document.querySelectorAll('.grid figcaption').forEach(function(c){var s=getComputedStyle(c);
  caps.push((c.scrollWidth>c.clientWidth?'c':'-')+(s.textOverflow==='ellipsis'?'e':'-')+
    (c.title===c.textContent?'t':'-'));});
b.setAttribute('data-probe',[wide,uncued,cells].join(':'));
b.setAttribute('data-probe-broken',broken.join(' '));
b.setAttribute('data-probe-captions',caps.join(' '));
})();</script>"#;

/// What the probe measured on a page laid out at a width.
pub struct Layout {
    /// Tables wider than the page (`.tw` that scrolls sideways).
    pub wide: usize,
    /// Of those, the ones without their cue (the `scrolls` shade and the line above).
    pub uncued: usize,
    /// Cells of `namespace` columns looked at.
    pub namespace_cells: usize,
    /// Words of those cells laid out on more than one line (broken mid-word).
    pub broken_words: Vec<String>,
    /// Per caption of a small multiple (`.grid figcaption`): cut to its width, drawn with an
    /// ellipsis (`text-overflow`), its title the whole caption.
    pub captions: Vec<(bool, bool, bool)>,
    /// The DOM, with the probe's attributes.
    pub rendered: Rendered,
}

fn attr<'a>(dom: &'a str, name: &str) -> &'a str {
    dom.split(&format!(" {name}=\""))
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("the probe did not run (no {name})"))
}

/// Lays out a copy of `page` (next to it, `.probe.html`) at `width` px with the probe appended.
pub fn probe_layout(page: &Path, width: u32) -> Layout {
    let html = std::fs::read_to_string(page).expect("the page");
    let copy = page.with_extension("probe.html");
    std::fs::write(&copy, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let rendered = render_at(&copy, width);
    let dom = &rendered.dom;
    let n: Vec<usize> = attr(dom, "data-probe")
        .split(':')
        .map(|n| n.parse().expect("a count"))
        .collect();
    let captions = attr(dom, "data-probe-captions")
        .split_whitespace()
        .map(|c| {
            let c = c.as_bytes();
            (c[0] == b'c', c[1] == b'e', c[2] == b't')
        })
        .collect();
    let broken_words = (attr(dom, "data-probe-broken").split_whitespace())
        .map(str::to_owned)
        .collect();
    Layout {
        wide: n[0],
        uncued: n[1],
        namespace_cells: n[2],
        broken_words,
        captions,
        rendered,
    }
}

/// A table of the page, from the DOM: its headers' and cells' text, and each cell's markup.
#[derive(Debug)]
pub struct DomTable {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub raw: Vec<Vec<String>>,
}

impl DomTable {
    /// The column headed `name`.
    pub fn column(&self, name: &str) -> Vec<&str> {
        let i = (self.headers.iter().position(|h| h == name))
            .unwrap_or_else(|| panic!("no column {name:?} in {:?}", self.headers));
        self.rows.iter().map(|r| r[i].as_str()).collect()
    }
}

/// Text with its tags dropped and the DOM's escapes undone.
pub fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out.replace("&lt;", "<").replace("&gt;", ">");
    out.replace("&quot;", "\"").replace("&amp;", "&")
}

/// The inner markup of every `<TAG ...>...</TAG>` in `html` (not nested in each other).
fn elements<'a>(html: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        // `<th` must not match `<thead`.
        if !after.starts_with(['>', ' ']) {
            rest = after;
            continue;
        }
        let start = after.find('>').expect("a tag's end") + 1;
        let end = after.find(&close).expect("a closing tag");
        out.push(&after[start..end]);
        rest = &after[end + close.len()..];
    }
    out
}

/// Every table of the page, in order.
pub fn dom_tables(dom: &str) -> Vec<DomTable> {
    elements(dom, "table")
        .into_iter()
        .map(|t| {
            let headers = elements(t, "th").into_iter().map(text_of).collect();
            let body = t.split("<tbody>").nth(1).unwrap_or("");
            let raw: Vec<Vec<String>> = elements(body, "tr")
                .into_iter()
                .map(|r| elements(r, "td").into_iter().map(str::to_owned).collect())
                .collect();
            let rows = (raw.iter())
                .map(|r| r.iter().map(|c| text_of(c)).collect())
                .collect();
            DomTable { headers, rows, raw }
        })
        .collect()
}

/// Pixels of the screenshot `png` at or right of column `x` that are not the background (the
/// screenshot's commonest colour): what the page draws past that edge.
pub fn ink_beyond(png: &Path, x: u32) -> u64 {
    let (buf, info) = super::html::decode(png);
    let step = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks_exact(step).collect();
    let mut counts = std::collections::HashMap::<&[u8], u64>::new();
    for px in &pixels {
        *counts.entry(*px).or_default() += 1;
    }
    let background = counts.into_iter().max_by_key(|(_, n)| *n).map(|(px, _)| px);
    let width = info.width as usize;
    (pixels.iter().enumerate())
        .filter(|(i, px)| i % width >= x as usize && Some(**px) != background)
        .count() as u64
}
