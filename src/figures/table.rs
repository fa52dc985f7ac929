//! The one table model of every report: a report part builds its [`Table`] once, from
//! [`Column`]s (a header, an alignment, where the column is shown, how its text is cut) and rows
//! of cells, and the same table is rendered as plain text for the terminal ([`Table::render`])
//! and as HTML by `report::html::Page::table` ([`Table::for_html`]). A column can be kept out of
//! the text ([`Column::html_only`]) where it would make the terminal table too wide, or out of the
//! page ([`Column::text_only`]) where the page shows the same figure in a fuller form (p50 and p99
//! as two sortable columns, every example rather than the first). The text cuts a column to a
//! width ([`Column::cut`]) or to what the other columns leave of [`TEXT_WIDTH`] ([`Column::fit`]);
//! the page keeps every text whole.
//!
//! [`Table::of`] builds a table from a list of items and a list of [`Field`]s (a column and the
//! cell of an item), so that a column is one line where it is declared.

use super::text::cut;
/// The width of the terminal a text table fits ([`Column::fit`]).
pub use super::text::TEXT_WIDTH;

/// The least a [`Column::fit`] column is given before the table is folded into blocks instead.
pub const FIT_MIN: usize = 24;
/// The least it is given in a block that still cannot leave it more.
const FIT_MIN_BLOCK: usize = 20;

/// How a column's cells stand in their width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// Numbers right, text left, cell by cell (the text) or for the whole column (the page).
    #[default]
    Auto,
    Left,
    Right,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Both,
    Html,
    Text,
}

/// How the text cuts a column's cells (the page keeps them whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Width {
    Whole,
    Cut(usize),
    Fit,
}

/// One column: its header, its alignment, where it is shown and how the text cuts it.
#[derive(Debug, Clone)]
pub struct Column {
    header: String,
    align: Align,
    shown: Shown,
    width: Width,
    /// A folded text table keeps it in the block of the column before it.
    with_previous: bool,
    folded: bool,
}

impl Column {
    pub fn new(header: impl Into<String>) -> Column {
        Column {
            header: header.into(),
            align: Align::Auto,
            shown: Shown::Both,
            width: Width::Whole,
            with_previous: false,
            folded: false,
        }
    }

    /// A text table too wide for the terminal, folded, keeps this column beside the one before
    /// it (a ratio beside its value).
    pub fn with_previous(mut self) -> Column {
        self.with_previous = true;
        self
    }

    pub fn align(mut self, align: Align) -> Column {
        self.align = align;
        self
    }

    /// Kept out of the text rendering (the HTML page shows it).
    pub fn html_only(mut self) -> Column {
        self.shown = Shown::Html;
        self
    }

    /// Kept out of the HTML page (the text shows it).
    pub fn text_only(mut self) -> Column {
        self.shown = Shown::Text;
        self
    }

    /// The text cuts each cell to `width` characters, with `…`.
    pub fn cut(mut self, width: usize) -> Column {
        self.width = Width::Cut(width);
        self
    }

    /// The text cuts each cell to what the other text columns leave of [`TEXT_WIDTH`] (at least
    /// [`FIT_MIN`] characters: a table whose other columns leave less is folded), so that the
    /// table fits the terminal.
    pub fn fit(mut self) -> Column {
        self.width = Width::Fit;
        self
    }

    /// On the page each cell is folded: a line of it shows, the whole text unfolds on a click
    /// (a request's body, examples of a reply); the text is unchanged.
    pub fn folded(mut self) -> Column {
        self.folded = true;
        self
    }

    pub fn is_folded(&self) -> bool {
        self.folded
    }

    pub fn header(&self) -> &str {
        &self.header
    }

    pub fn alignment(&self) -> Align {
        self.align
    }
}

/// A column of a table built from items of type `T` ([`Table::of`]): the column and each item's
/// cell.
pub type Field<T> = (Column, fn(&T) -> String);

#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table of columns with these headers, aligned by their cells.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table::with_columns(headers.into_iter().map(Column::new))
    }

    pub fn with_columns(columns: impl IntoIterator<Item = Column>) -> Table {
        Table {
            columns: columns.into_iter().collect(),
            rows: Vec::new(),
        }
    }

    /// A table with a row per item, each field filling its column.
    pub fn of<'a, T: 'a>(fields: &[Field<T>], items: impl IntoIterator<Item = &'a T>) -> Table {
        let mut t = Table::with_columns(fields.iter().map(|(c, _)| c.clone()));
        for item in items {
            t.row(fields.iter().map(|(_, cell)| cell(item)));
        }
        t
    }

    /// Keeps the named columns out of the text rendering (the HTML page shows them).
    pub fn html_only<S: AsRef<str>>(self, columns: &[S]) -> Table {
        self.shown_only(columns, Shown::Html)
    }

    /// Folds the named columns' cells on the page ([`Column::folded`]).
    pub fn folded<S: AsRef<str>>(mut self, columns: &[S]) -> Table {
        for c in &mut self.columns {
            if columns.iter().any(|n| n.as_ref() == c.header) {
                c.folded = true;
            }
        }
        self
    }

    /// Keeps the named columns out of the HTML page (the text shows them).
    pub fn text_only<S: AsRef<str>>(self, columns: &[S]) -> Table {
        self.shown_only(columns, Shown::Text)
    }

    fn shown_only<S: AsRef<str>>(mut self, names: &[S], only: Shown) -> Table {
        for c in &mut self.columns {
            if names.iter().any(|n| n.as_ref() == c.header) {
                c.shown = only;
            }
        }
        self
    }

    /// The same table with these rows (for a page whose rows are built elsewhere).
    pub fn with_rows(mut self, rows: Vec<Vec<String>>) -> Table {
        self.rows = rows;
        self
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub fn headers(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.header.as_str()).collect()
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

    /// The table as plain text, without its HTML-only columns, cut where its columns say; a table
    /// still wider than [`TEXT_WIDTH`] is folded ([`Table::blocks`]). A [`Column::fit`] column
    /// is given what the other columns leave, at least [`FIT_MIN`]: when they leave less, the
    /// table is folded first and the column fits each block.
    pub fn render(&self) -> String {
        let mut t = self.shown_in(Shown::Text);
        t.cut_fixed();
        let fit = t.columns.iter().position(|c| c.width == Width::Fit);
        let mut planned = t.clone();
        if let Some(fit) = fit {
            planned.cut_column(fit, planned.left_for(fit).max(FIT_MIN));
        }
        let blocks: Vec<String> = planned
            .blocks()
            .iter()
            .map(|cols| {
                let mut block = t.select(cols);
                if let Some(at) = fit.and_then(|f| cols.iter().position(|&c| c == f)) {
                    block.cut_column(at, block.left_for(at).max(FIT_MIN_BLOCK));
                }
                block.render_text()
            })
            .collect();
        blocks.join("\n")
    }

    /// The table's columns by index when the table fits [`TEXT_WIDTH`], else in blocks that do,
    /// one under the other, each led by the first column (what names the row), a column marked
    /// [`Column::with_previous`] never parted from the one before it: a comparison of many
    /// reports, a table of wide figures. Only a first column and one group of columns wider than
    /// the terminal together can still overflow.
    fn blocks(&self) -> Vec<Vec<usize>> {
        let width = self.widths();
        let total = width.iter().sum::<usize>() + 2 * width.len().saturating_sub(1);
        if total <= TEXT_WIDTH || width.len() < 3 {
            return vec![(0..width.len()).collect()];
        }
        // Columns that stay together: each with the ones after it that go with it.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for i in 1..width.len() {
            match groups.last_mut() {
                Some(g) if self.columns[i].with_previous => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let mut block = vec![0];
        let mut used = width[0];
        for group in groups {
            let w: usize = group.iter().map(|&i| width[i] + 2).sum();
            if block.len() > 1 && used + w > TEXT_WIDTH {
                blocks.push(std::mem::replace(&mut block, vec![0]));
                used = width[0];
            }
            block.extend(group);
            used += w;
        }
        blocks.push(block);
        blocks
    }

    /// These columns of the table, in this order.
    fn select(&self, cols: &[usize]) -> Table {
        Table {
            columns: cols.iter().map(|&i| self.columns[i].clone()).collect(),
            rows: (self.rows.iter())
                .map(|r| {
                    cols.iter()
                        .map(|&i| r.get(i).cloned().unwrap_or_default())
                        .collect()
                })
                .collect(),
        }
    }

    /// The columns the HTML page shows (all but the text-only ones), every cell whole.
    pub fn for_html(&self) -> Table {
        self.shown_in(Shown::Html)
    }

    /// Cuts the cells of the columns with a fixed width ([`Column::cut`]).
    fn cut_fixed(&mut self) {
        let widths: Vec<Width> = self.columns.iter().map(|c| c.width).collect();
        for (i, w) in widths.iter().enumerate() {
            if let Width::Cut(w) = *w {
                self.cut_column(i, w);
            }
        }
    }

    fn cut_column(&mut self, i: usize, width: usize) {
        for row in &mut self.rows {
            if let Some(c) = row.get_mut(i) {
                *c = cut(c, width);
            }
        }
    }

    /// What the other columns (and the spaces between columns) leave of [`TEXT_WIDTH`] for
    /// column `i`.
    fn left_for(&self, i: usize) -> usize {
        let others: usize = (self.widths().iter().enumerate())
            .filter(|(j, _)| *j != i)
            .map(|(_, w)| w + 2)
            .sum();
        TEXT_WIDTH.saturating_sub(others)
    }

    /// Each column's width in characters, its header's included.
    fn widths(&self) -> Vec<usize> {
        let mut width: Vec<usize> = self
            .columns
            .iter()
            .map(|c| c.header.chars().count())
            .collect();
        for row in &self.rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        width
    }

    fn render_text(&self) -> String {
        let width = self.widths();
        let cols = width.len();
        let mut out = String::new();
        let line = |out: &mut String, row: &[&str], header: bool| {
            for (i, w) in width.iter().enumerate() {
                let cell = row.get(i).copied().unwrap_or("");
                let pad = w - cell.chars().count();
                if i > 0 {
                    out.push_str("  ");
                }
                let right = match self.columns[i].align {
                    Align::Auto => i > 0 && looks_numeric(cell),
                    Align::Left => false,
                    Align::Right => true,
                };
                if !header && right {
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
        line(&mut out, &self.headers(), true);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        line(
            &mut out,
            &rule.iter().map(String::as_str).collect::<Vec<_>>(),
            true,
        );
        for row in &self.rows {
            line(
                &mut out,
                &row.iter().map(String::as_str).collect::<Vec<_>>(),
                false,
            );
        }
        out
    }

    /// The columns shown in `medium`, all shown in both.
    fn shown_in(&self, medium: Shown) -> Table {
        let keep: Vec<bool> = self
            .columns
            .iter()
            .map(|c| c.shown == Shown::Both || c.shown == medium)
            .collect();
        let kept = |row: &[String]| -> Vec<String> {
            row.iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(c, _)| c.clone())
                .collect()
        };
        Table {
            columns: self
                .columns
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(c, _)| Column {
                    shown: Shown::Both,
                    ..c.clone()
                })
                .collect(),
            rows: self.rows.iter().map(|r| kept(r)).collect(),
        }
    }
}

/// A cell the text right-aligns in an [`Align::Auto`] column: a number, a duration, a size, a
/// share, a ratio, or `-`.
fn looks_numeric(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || ".,-+%x µsmKMGiB/".contains(c))
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
