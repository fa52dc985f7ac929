//! The one table model of every report: a report builds its rows once, and the same [`Table`] is
//! rendered as plain text for the terminal ([`Table::render`]: right-aligned numbers,
//! left-aligned text) and as HTML by `report::html::Page::table`. A column can be kept out of the
//! text ([`Table::html_only`]) where it would make the terminal table too wide.

#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns left out of the text rendering.
    html_only: Vec<bool>,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        let headers: Vec<String> = headers.into_iter().map(Into::into).collect();
        Table {
            html_only: vec![false; headers.len()],
            headers,
            rows: Vec::new(),
        }
    }

    /// Keeps the named columns out of the text rendering (the HTML page shows them).
    pub fn html_only(mut self, columns: &[&str]) -> Table {
        for (i, h) in self.headers.iter().enumerate() {
            if columns.contains(&h.as_str()) {
                self.html_only[i] = true;
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
        if self.html_only.iter().any(|&h| h) {
            return self.text_columns().render();
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

    fn text_columns(&self) -> Table {
        let keep = |row: &[String]| -> Vec<String> {
            row.iter()
                .enumerate()
                .filter(|(i, _)| !self.html_only.get(*i).copied().unwrap_or(false))
                .map(|(_, c)| c.clone())
                .collect()
        };
        let headers = keep(&self.headers);
        Table {
            html_only: vec![false; headers.len()],
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
    }
}
