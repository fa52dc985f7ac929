//! Text cut to fit, with `…` where it was cut: the one rule for every table cell, chart label and
//! line of a report ([`cut`], a width in characters), and for the fields a report bounds in
//! bytes ([`cut_bytes`]: an error's message, a request's body, a plan line). Neither splits a
//! character.

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
    use super::{cut, cut_bytes};

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
}
