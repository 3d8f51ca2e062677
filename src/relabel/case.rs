//! Go's `strings.ToLower` / `strings.ToUpper`, used by the `lowercase` / `uppercase` actions.
//!
//! Go maps **one rune to one rune** with the Unicode *simple* case mapping (UnicodeData.txt
//! fields 12/13), without context. Rust's `str::to_lowercase` applies the *full* mapping
//! (SpecialCasing.txt: `ß` → `SS`, `İ` → `i̇`) and the final-sigma rule, so it cannot be used.
//!
//! `char::to_lowercase` / `char::to_uppercase` have no context rules, and yield exactly the
//! simple mapping whenever the full mapping is one character (SpecialCasing's unconditional
//! entries are all multi-character). For the characters whose full mapping is multi-character,
//! the simple mapping is listed below; the list was derived by comparing every code point of
//! Go's `unicode.ToLower/ToUpper` with Rust's `char` methods (103 such code points: all but 25
//! map to themselves).
//!
//! Unicode version: Rust's std tables follow a newer Unicode than Go 1.26's (15.0), so letters
//! added after 15.0 (e.g. U+A7CB..U+A7DC, Garay, Tulu-Tigalari) have mappings here that Alloy
//! does not apply. Such characters do not occur in Kubernetes metadata in practice.

/// Go's `unicode.ToLower` for one rune.
pub fn simple_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    // U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE: full lower is "i\u{307}", simple is "i".
    if c == '\u{130}' {
        return 'i';
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Go's `unicode.ToUpper` for one rune.
pub fn simple_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    // Greek letters with ypogegrammeni: the full upper mapping is two characters (e.g.
    // U+1F80 → U+1F08 U+0399), the simple one is the titlecase-like precomposed letter.
    let simple = match c as u32 {
        0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => Some(c as u32 + 8),
        0x1FB3 => Some(0x1FBC),
        0x1FC3 => Some(0x1FCC),
        0x1FF3 => Some(0x1FFC),
        _ => None,
    };
    if let Some(u) = simple.and_then(char::from_u32) {
        return u;
    }
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `strings.ToLower`.
pub fn to_lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.chars().map(simple_lower).collect()
}

/// Go's `strings.ToUpper`.
pub fn to_upper(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_uppercase();
    }
    s.chars().map(simple_upper).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_go_strings_package() {
        // (input, Go ToLower, Go ToUpper); Go results verified with go1.19 and the spec.
        let cases = [
            ("Hello-World_1", "hello-world_1", "HELLO-WORLD_1"),
            ("ÀÉÎ ΟΔΟΣ", "àéî οδοσ", "ÀÉÎ ΟΔΟΣ"),
            ("İx", "ix", "İX"),
            ("straße", "straße", "STRAßE"),
            ("ﬁx", "ﬁx", "ﬁX"),
            ("ǅ", "ǆ", "Ǆ"),
            ("ᾳ", "ᾳ", "ᾼ"),
            ("ᾀ", "ᾀ", "ᾈ"),
            ("ᾈ", "ᾀ", "ᾈ"),
            ("ŉ", "ŉ", "ŉ"),
            ("K", "k", "K"), // Kelvin sign lowers to ASCII k
            ("ſ", "ſ", "S"),
            ("", "", ""),
        ];
        for (input, lower, upper) in cases {
            assert_eq!(to_lower(input), lower, "lower({input:?})");
            assert_eq!(to_upper(input), upper, "upper({input:?})");
        }
    }

    #[test]
    fn one_rune_to_one_rune() {
        // Every scalar value maps to exactly one scalar value: lengths in chars never change.
        for cp in (0u32..0x3_0000).step_by(7) {
            if let Some(c) = char::from_u32(cp) {
                let _ = (simple_lower(c), simple_upper(c));
            }
        }
        let s = "ßİﬁᾳΣ";
        assert_eq!(to_lower(s).chars().count(), s.chars().count());
        assert_eq!(to_upper(s).chars().count(), s.chars().count());
    }
}
