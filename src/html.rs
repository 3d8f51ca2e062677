//! Escaping text for HTML and SVG, shared by the diff report and the status page: both
//! interpolate text that comes from outside (function names, config labels, health messages).

/// `s` with the five characters that are markup in text and in quoted attributes replaced by
/// entities.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_in_text_and_attributes() {
        let cases = [
            ("plain", "plain"),
            ("", ""),
            ("<script>", "&lt;script&gt;"),
            (r#"a "b" & 'c'"#, "a &quot;b&quot; &amp; &#39;c&#39;"),
            ("&amp;", "&amp;amp;"),
            ("main.(*T).f·1 ⇒ ü", "main.(*T).f·1 ⇒ ü"),
        ];
        for (input, want) in cases {
            assert_eq!(escape(input), want, "{input:?}");
        }
    }
}
