//! Text cut to fit, with `…` where it was cut: the one rule for every table cell, chart label and
//! line of a report ([`cut`], a width in characters), and for the fields a report bounds in
//! bytes ([`cut_bytes`]: an error's message, a request's body, a plan line). Neither splits a
//! character. Sentences (findings, hints, warnings) are not cut but wrapped to [`TEXT_WIDTH`]
//! with a hanging indent ([`wrap`]).

/// The width of the terminal every text report fits: its tables (`figures::table`) and its
/// sentences ([`wrap`]).
pub const TEXT_WIDTH: usize = 100;

/// `text` as lines of at most [`TEXT_WIDTH`] characters, each ending in `\n`: broken at spaces,
/// every line after a paragraph's first indented by `indent` spaces (a hanging indent). Each line
/// of `text` is a paragraph; its own leading spaces and the spaces between its words are kept
/// where no break falls. A word longer than a line is broken inside (nothing is cut away).
pub fn wrap(text: &str, indent: usize) -> String {
    wrap_at(text, TEXT_WIDTH, indent)
}

/// `text` with each line wider than [`TEXT_WIDTH`] wrapped ([`wrap`]), hanging two spaces deeper
/// than the line's own indent; the lines that fit are left as they are. Every text report passes
/// through it last, so that no sentence is wider than the terminal (its tables fit already:
/// `figures::table` folds a wide one).
pub fn fit_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        if bare.chars().count() <= TEXT_WIDTH {
            out.push_str(line);
            continue;
        }
        let indent = bare.len() - bare.trim_start_matches(' ').len();
        let wrapped = wrap(bare, indent + 2);
        match line.ends_with('\n') {
            true => out.push_str(&wrapped),
            false => out.push_str(wrapped.trim_end_matches('\n')),
        }
    }
    out
}

/// [`wrap`] at `width` columns.
pub fn wrap_at(text: &str, width: usize, indent: usize) -> String {
    let width = width.max(2);
    let indent = indent.min(width / 2);
    let mut out = String::with_capacity(text.len() + text.len() / width * (indent + 1) + 1);
    for paragraph in text.lines() {
        wrap_paragraph(&mut out, paragraph, width, indent);
    }
    out
}

/// One paragraph of [`wrap_at`], appended to `out`.
fn wrap_paragraph(out: &mut String, paragraph: &str, width: usize, indent: usize) {
    let mut used = 0;
    // Whether the current line holds a word (a break before the next one helps).
    let mut has_word = false;
    let new_line = |out: &mut String, used: &mut usize| {
        while out.ends_with(' ') {
            out.pop();
        }
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', indent));
        *used = indent;
    };
    let mut rest = paragraph;
    loop {
        let after_gap = rest.trim_start_matches(' ');
        let gap = rest.len() - after_gap.len();
        if after_gap.is_empty() {
            break;
        }
        let end = after_gap.find(' ').unwrap_or(after_gap.len());
        let (mut word, next) = after_gap.split_at(end);
        rest = next;
        let chars = word.chars().count();
        if has_word && used + gap + chars > width {
            new_line(out, &mut used);
        } else {
            out.extend(std::iter::repeat_n(' ', gap));
            used += gap;
        }
        while used + word.chars().count() > width {
            let room = width.saturating_sub(used);
            if room == 0 {
                new_line(out, &mut used);
                continue;
            }
            let at = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
            out.push_str(&word[..at]);
            word = &word[at..];
            new_line(out, &mut used);
        }
        out.push_str(word);
        used += word.chars().count();
        has_word = true;
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out.push('\n');
}

/// `text` in at most `width` characters: whole when it fits, else its first `width - 1`
/// characters and `…`.
pub fn cut(text: &str, width: usize) -> String {
    if text.char_indices().nth(width).is_none() {
        return text.to_owned();
    }
    let end = text
        .char_indices()
        .nth(width.saturating_sub(1))
        .map_or(text.len(), |(at, _)| at);
    format!("{}…", &text[..end])
}

/// `text` whole when it has at most `max` bytes, else its longest prefix of at most `max` bytes
/// that ends on a character boundary, and `…`.
pub fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::{cut, cut_bytes, fit_lines, wrap, wrap_at, TEXT_WIDTH};

    #[test]
    fn a_cut_counts_characters_and_ends_in_an_ellipsis() {
        assert_eq!(cut("find", 4), "find");
        assert_eq!(cut("aggregate", 4), "agg…");
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(cut("ab", 0), "…");
        assert_eq!(cut("", 0), "");
    }

    #[test]
    fn a_byte_bound_never_splits_a_character() {
        assert_eq!(cut_bytes("ééé", 3), "é…");
        assert_eq!(cut_bytes("abc", 3), "abc");
        assert_eq!(cut_bytes("abcd", 3), "abc…");
    }

    #[test]
    fn a_wrapped_sentence_breaks_at_spaces_with_a_hanging_indent() {
        assert_eq!(wrap_at("machine: quiet", 20, 2), "machine: quiet\n");
        assert_eq!(
            wrap_at("  B is 38% faster on find shop.customers", 16, 4),
            "  B is 38%\n    faster on\n    find\n    shop.custome\n    rs\n"
        );
        // The spaces of an aligned label stay; a break swallows the gap it falls in.
        assert_eq!(
            wrap_at("WARNING    one two three", 14, 11),
            "WARNING    one\n       two\n       three\n"
        );
        assert_eq!(wrap_at("a\nb c", 3, 1), "a\nb c\n");
        assert_eq!(wrap_at("", 10, 2), "");
        // Every line within the width, nothing lost, even in characters of several bytes.
        let long = format!("é{} {}", "x".repeat(250), "word ".repeat(60));
        let wrapped = wrap(&long, 6);
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= TEXT_WIDTH),
            "{wrapped}"
        );
        let words = |s: &str| s.split_whitespace().collect::<String>();
        assert_eq!(words(&wrapped), words(&long));
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("      ")));
    }

    #[test]
    fn only_the_lines_wider_than_the_terminal_are_wrapped() {
        let long = format!("  {}", "finding ".repeat(20));
        let text = format!("short\n{long}\nlast");
        let fitted = fit_lines(&text);
        assert!(fitted.starts_with("short\n  finding"), "{fitted}");
        assert!(fitted.ends_with("\nlast"), "{fitted}");
        let lines: Vec<&str> = fitted.lines().collect();
        assert_eq!(lines.len(), 4, "{fitted}");
        assert!(lines[2].starts_with("    finding"), "{fitted}");
        assert!(lines.iter().all(|l| l.chars().count() <= TEXT_WIDTH));
        assert_eq!(fit_lines("a\n\nb\n"), "a\n\nb\n");
    }
}
