//! The one table model of every report: a report builds its rows once, and the same [`Table`] is
//! rendered as plain text for the terminal ([`Table::render`]: right-aligned numbers,
//! left-aligned text) and as HTML by `report::html::Page::table` ([`Table::for_html`]). A column
//! can be kept out of the text ([`Table::html_only`]) where it would make the terminal table too
//! wide, or out of the page ([`Table::text_only`]) where the page shows the same figure in a
//! fuller form (p50 and p99 as two sortable columns, every example rather than the first).

#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Where each column is shown.
    shown: Vec<Shown>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Both,
    Html,
    Text,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        let headers: Vec<String> = headers.into_iter().map(Into::into).collect();
        Table {
            shown: vec![Shown::Both; headers.len()],
            headers,
            rows: Vec::new(),
        }
    }

    /// Keeps the named columns out of the text rendering (the HTML page shows them).
    pub fn html_only<S: AsRef<str>>(self, columns: &[S]) -> Table {
        self.shown_only(columns, Shown::Html)
    }

    /// Keeps the named columns out of the HTML page (the text shows them).
    pub fn text_only<S: AsRef<str>>(self, columns: &[S]) -> Table {
        self.shown_only(columns, Shown::Text)
    }

    fn shown_only<S: AsRef<str>>(mut self, columns: &[S], only: Shown) -> Table {
        for (i, h) in self.headers.iter().enumerate() {
            if columns.iter().any(|c| c.as_ref() == h) {
                self.shown[i] = only;
            }
        }
        self
    }

    /// The same table with these rows (for a page whose rows are built elsewhere).
    pub fn with_rows(mut self, rows: Vec<Vec<String>>) -> Table {
        self.rows = rows;
        self
    }

    pub fn headers(&self) -> &[String] {
        &self.headers
    }

    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as plain text, without its HTML-only columns.
    pub fn render(&self) -> String {
        if self.shown.iter().any(|&s| s != Shown::Both) {
            return self.columns(Shown::Text).render();
        }
        let cols = self.headers.len();
        let mut width = vec![0; cols];
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            for (i, cell) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let numeric = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_digit() || ".,-+%x µsmKMGiB/".contains(c))
                && s.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit() || c == '-')
        };
        let mut out = String::new();
        let line = |out: &mut String, row: &[String], header: bool| {
            for (i, w) in width.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = w - cell.chars().count();
                if i > 0 {
                    out.push_str("  ");
                }
                if !header && numeric(cell) && i > 0 {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                } else {
                    out.push_str(cell);
                    if i + 1 < cols {
                        out.push_str(&" ".repeat(pad));
                    }
                }
            }
            while out.ends_with(' ') {
                out.pop();
            }
            out.push('\n');
        };
        line(&mut out, &self.headers, true);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        line(&mut out, &rule, true);
        for row in &self.rows {
            line(&mut out, row, false);
        }
        out
    }

    /// The columns the HTML page shows (all but the text-only ones).
    pub fn for_html(&self) -> Table {
        self.columns(Shown::Html)
    }

    /// The columns shown in `medium`, all shown in both.
    fn columns(&self, medium: Shown) -> Table {
        let keep = |row: &[String]| -> Vec<String> {
            row.iter()
                .enumerate()
                .filter(|(i, _)| {
                    let shown = self.shown.get(*i).copied().unwrap_or(Shown::Both);
                    shown == Shown::Both || shown == medium
                })
                .map(|(_, c)| c.clone())
                .collect()
        };
        let headers = keep(&self.headers);
        Table {
            shown: vec![Shown::Both; headers.len()],
            headers,
            rows: self.rows.iter().map(|r| keep(r)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn text_aligns_numbers_right_and_leaves_html_only_columns_out() {
        let mut t = Table::new(["command", "client", "count"]).html_only(&["client"]);
        t.row(["find", "127.0.0.1:5000", "3"]);
        t.row(["insert", "127.0.0.1:5001", "120"]);
        assert_eq!(
            t.render(),
            "command  count\n-------  -----\nfind         3\ninsert     120\n"
        );
        assert_eq!(t.headers().len(), 3);
        assert_eq!(t.rows()[1][1], "127.0.0.1:5001");
        assert_eq!(t.for_html().headers().len(), 3);
    }

    #[test]
    fn text_only_columns_are_left_off_the_page() {
        let mut t = Table::new(["field", "example", "examples"])
            .text_only(&["example"])
            .html_only(&["examples"]);
        t.row(["n", "find: 1 vs 2", "[1, 2, 3]"]);
        assert_eq!(
            t.render(),
            "field  example\n-----  ------------\nn      find: 1 vs 2\n"
        );
        let page = t.for_html();
        assert_eq!(page.headers(), ["field", "examples"]);
        assert_eq!(page.rows()[0], ["n", "[1, 2, 3]"]);
    }
}
