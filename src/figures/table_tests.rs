use super::{Align, Column, Field, Table};

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

#[test]
fn one_list_of_fields_gives_both_renderings_cut_and_aligned_as_declared() {
    let items = [("find shop.orders {a: 1, b: 2}", 3u64), ("insert", 120)];
    let fields: [Field<(&str, u64)>; 3] = [
        (Column::new("shape").fit(), |i| i.0.to_string()),
        (Column::new("code").cut(4).align(Align::Right), |i| {
            format!("c{}", i.1)
        }),
        (Column::new("count").html_only(), |i| i.1.to_string()),
    ];
    let t = Table::of(&fields, &items);
    assert_eq!(t.render(), "shape                          code\n-----------------------------  ----\nfind shop.orders {a: 1, b: 2}    c3\ninsert                         c120\n");
    assert_eq!(t.for_html().headers(), ["shape", "code", "count"]);
    assert_eq!(
        t.for_html().rows()[0][0],
        items[0].0,
        "the page keeps the text whole"
    );
    let mut long = Table::with_columns([Column::new("shape").fit(), Column::new("n")]);
    long.row(["x".repeat(120), "1".into()]);
    let text = long.render();
    assert_eq!(text.lines().nth(2).map(|l| l.chars().count()), Some(100));
    assert!(text.contains("x…  1"));
}

#[test]
fn a_table_wider_than_the_terminal_is_folded_under_its_first_column() {
    let headers: Vec<String> = std::iter::once("metric".to_owned())
        .chain((1..=8).map(|i| format!("report-{i}")))
        .collect();
    let mut t = Table::new(headers);
    t.row(std::iter::once("p99".to_owned()).chain((1..=8).map(|i| format!("{i}23.4ms (1.0-9.9)"))));
    let text = t.render();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let blocks: Vec<&str> = text.split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "{text}");
    for b in &blocks {
        assert!(b.starts_with("metric "), "{b}");
        assert!(
            b.lines().nth(2).is_some_and(|l| l.starts_with("p99 ")),
            "{b}"
        );
    }
    for i in 1..=8 {
        assert_eq!(text.matches(&format!("report-{i}")).count(), 1, "{text}");
        assert!(text.contains(&format!("{i}23.4ms (1.0-9.9)")), "{text}");
    }
    // A ratio stays beside its value.
    let mut cols = vec![Column::new("metric")];
    for i in 1..=5 {
        cols.push(Column::new(format!("run-{i}-with-a-long-label")));
        cols.push(Column::new(format!("vs {i}")).with_previous());
    }
    let mut t = Table::with_columns(cols);
    t.row(std::iter::once("p50".to_owned()).chain((1..=10).map(|i| format!("{i}.00x"))));
    let text = t.render();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    for block in text.split("\n\n") {
        let header = block.lines().next().unwrap();
        let runs = header.matches("run-").count();
        assert_eq!(runs, header.matches("vs ").count(), "{text}");
    }
    // A table that fits stays one block.
    let mut narrow = Table::new(["a", "b", "c"]);
    narrow.row(["1", "2", "3"]);
    assert_eq!(narrow.render(), "a  b  c\n-  -  -\n1  2  3\n");
}

#[test]
fn a_fit_column_the_others_would_squeeze_below_its_minimum_gets_a_block_of_its_own_width() {
    // Nine figure columns of 9 leave 100 - 9 * 11 = 1 for the shape: folded instead, the shape
    // is cut to what each block leaves, never below FIT_MIN.
    let mut cols = vec![Column::new("shape").fit()];
    cols.extend((1..=9).map(|i| Column::new(format!("figure {i}"))));
    let mut t = Table::with_columns(cols);
    let shape = format!("find shop.orders {{{}}}", "field: ?string, ".repeat(10));
    t.row(std::iter::once(shape.clone()).chain((1..=9).map(|i| format!("{i}.5ms"))));
    let text = t.render();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let blocks: Vec<&str> = text.split("\n\n").collect();
    assert!(blocks.len() >= 2, "{text}");
    for b in &blocks {
        let row = b.lines().nth(2).unwrap_or_default();
        let cell = row.split("  ").next().unwrap_or_default();
        assert!(cell.chars().count() >= super::FIT_MIN, "{b}");
    }
    for i in 1..=9 {
        assert!(text.contains(&format!("{i}.5ms")), "{text}");
    }
}
