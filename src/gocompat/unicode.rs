//! Membership in a set of Unicode ranges, the way Go's `unicode.Is` looks a rune up in a
//! category table: the one lookup behind `IsPrint`, the relabel engine's classes and its
//! template's `IsLetter`.

use regex_syntax::hir::ClassUnicodeRange;

/// Whether `c` is in `ranges` (sorted and non-overlapping, as `regex-syntax` keeps a class).
pub fn in_ranges(ranges: &[ClassUnicodeRange], c: char) -> bool {
    ranges
        .binary_search_by(|r| {
            if r.end() < c {
                std::cmp::Ordering::Less
            } else if r.start() > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_char_in_sorted_ranges() {
        let ranges = [
            ClassUnicodeRange::new('a', 'c'),
            ClassUnicodeRange::new('x', 'x'),
            ClassUnicodeRange::new('é', 'ê'),
        ];
        for (c, want) in [
            ('a', true),
            ('c', true),
            ('d', false),
            ('x', true),
            ('ê', true),
        ] {
            assert_eq!(in_ranges(&ranges, c), want, "{c}");
        }
        assert!(!in_ranges(&[], 'a'));
    }
}
