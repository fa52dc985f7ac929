//! Plain-text tables for terminal reports: right-aligned numbers, left-aligned text.

pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
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
}
