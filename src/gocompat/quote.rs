//! `strconv.Quote` and its relatives, and `unicode.IsPrint`, which decides what they escape.
//!
//! Go's printable set is the Unicode categories L, M, N, P and S plus U+0020. We take those
//! categories from `regex-syntax`'s Unicode tables (already in the tree for the relabel
//! engine), so the set follows the Unicode version of that crate; Go's follows its own
//! release's (Go 1.19: Unicode 13). Code points assigned since then are printable here and may
//! not be in an older Go; everything Go had assigned agrees (the oracle test checks each).

use std::fmt::Write as _;
use std::sync::OnceLock;

use regex_syntax::hir::{Class, ClassUnicodeRange, HirKind};

/// Sorted, non-overlapping ranges of Go's printable code points outside ASCII.
fn printable_ranges() -> &'static [ClassUnicodeRange] {
    static RANGES: OnceLock<Vec<ClassUnicodeRange>> = OnceLock::new();
    RANGES.get_or_init(|| {
        // A fixed pattern over the crate's own tables: it cannot fail to parse; an empty set
        // (all escaped) would be the safe outcome if it ever did.
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(r"[\p{L}\p{M}\p{N}\p{P}\p{S}]");
        match hir.as_ref().map(|h| h.kind()) {
            Ok(HirKind::Class(Class::Unicode(class))) => class.ranges().to_vec(),
            _ => Vec::new(),
        }
    })
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
pub fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    super::unicode::in_ranges(printable_ranges(), c)
}

/// `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    quote_with(s, '"', false)
}

/// `strconv.QuoteToASCII`: the same with every non-ASCII character escaped.
pub fn quote_ascii(s: &str) -> String {
    quote_with(s, '"', true)
}

/// `strconv.QuoteRune` (or `QuoteRuneToASCII`): a single-quoted Go rune literal.
pub fn quote_rune(c: char, ascii_only: bool) -> String {
    let mut out = String::with_capacity(4);
    out.push('\'');
    push_escaped(&mut out, c, '\'', ascii_only);
    out.push('\'');
    out
}

fn quote_with(s: &str, delimiter: char, ascii_only: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(delimiter);
    for c in s.chars() {
        push_escaped(&mut out, c, delimiter, ascii_only);
    }
    out.push(delimiter);
    out
}

/// One character as `strconv.appendEscapedRune` writes it.
fn push_escaped(out: &mut String, c: char, delimiter: char, ascii_only: bool) {
    if c == delimiter || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    let printable = if ascii_only {
        c.is_ascii() && is_print(c)
    } else {
        is_print(c)
    };
    if printable {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_strconv() {
        // (input, Quote, QuoteToASCII): outputs as Go 1.19 prints them.
        let cases = [
            ("plain", r#""plain""#, r#""plain""#),
            ("a\"b\\c", r#""a\"b\\c""#, r#""a\"b\\c""#),
            (
                "\u{7}\u{8}\u{c}\n\r\t\u{b}",
                r#""\a\b\f\n\r\t\v""#,
                r#""\a\b\f\n\r\t\v""#,
            ),
            ("\u{1}\u{7f}", r#""\x01\x7f""#, r#""\x01\x7f""#),
            ("é☺", "\"é☺\"", r#""\u00e9\u263a""#),
            (
                "\u{a0}\u{200b}\u{feff}",
                r#""\u00a0\u200b\ufeff""#,
                r#""\u00a0\u200b\ufeff""#,
            ),
            (
                "😀\u{e0001}",
                "\"😀\\U000e0001\"",
                r#""\U0001f600\U000e0001""#,
            ),
        ];
        for (input, go, go_ascii) in cases {
            assert_eq!(quote(input), go, "{input:?}");
            assert_eq!(quote_ascii(input), go_ascii, "{input:?}");
        }
        assert_eq!(quote_rune('\'', false), r"'\''");
        assert_eq!(quote_rune('"', false), "'\"'");
        assert_eq!(quote_rune('é', true), r"'\u00e9'");
    }
}
