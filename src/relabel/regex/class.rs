//! Character classes and escapes: bracketed classes, Perl (`\d \s \w`) and POSIX
//! (`[:alpha:]`) classes, `\p{…}`, and escape sequences (octal, `\x`, `\x{…}`, punctuation).
//!
//! This is where Go and the Rust syntax disagree most (ASCII-only `\d`, no `--` set
//! difference, octal escapes, fold-then-negate under `(?i)`), so every rule is spelled out here
//! with explicit ranges rather than left to the Rust parser.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use super::error::{
    ERR_INVALID_CHAR_RANGE, ERR_INVALID_ESCAPE, ERR_MISSING_BRACKET, ERR_TRAILING_BACKSLASH,
    ERR_UNSUPPORTED, PResult, err,
};
use super::parse::Parser;
use super::unicode::{UnicodeLookup, unicode_class};

impl Parser<'_> {
    /// `\d \D \s \S \w \W` (ASCII, as in Go), folded under `(?i)` before negation.
    pub(super) fn perl_class(&self, esc: &str) -> Option<ClassUnicode> {
        let (negated, ranges): (bool, &[(char, char)]) = match esc {
            "\\d" => (false, DIGIT),
            "\\D" => (true, DIGIT),
            "\\s" => (false, PERL_SPACE),
            "\\S" => (true, PERL_SPACE),
            "\\w" => (false, WORD),
            "\\W" => (true, WORD),
            _ => return None,
        };
        Some(self.group(ranges, negated))
    }

    /// Go's `appendGroup`: fold (under `(?i)`) then negate.
    fn group(&self, ranges: &[(char, char)], negated: bool) -> ClassUnicode {
        let mut class =
            ClassUnicode::new(ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)));
        if self.flags.fold_case {
            fold(&mut class);
        }
        if negated {
            class.negate();
        }
        class
    }

    /// `\pL`, `\p{Greek}`, `\P{…}`, `\p{^…}` at the start of `s`; returns the class and the
    /// length consumed. Only names Go knows are accepted (see [`unicode_class`]).
    pub(super) fn parse_unicode_class(&self, s: &str) -> PResult<(ClassUnicode, usize)> {
        let mut negated = s.as_bytes()[1] == b'P';
        let after = &s[2..];
        let (seq_len, mut name) = match after.chars().next() {
            Some('{') => {
                let Some(end) = s.find('}') else {
                    return Err(err(ERR_INVALID_CHAR_RANGE, s));
                };
                (end + 1, &s[3..end])
            }
            Some(c) => (2 + c.len_utf8(), &after[..c.len_utf8()]),
            // `\p` at the very end: Go looks up the empty name and fails.
            None => (2, ""),
        };
        let seq = &s[..seq_len];
        if let Some(stripped) = name.strip_prefix('^') {
            negated = !negated;
            name = stripped;
        }
        let mut class = match unicode_class(name) {
            Ok(c) => c,
            Err(UnicodeLookup::Unknown) => return Err(err(ERR_INVALID_CHAR_RANGE, seq)),
            Err(UnicodeLookup::NewerGoOnly) => return Err(err(ERR_UNSUPPORTED, seq)),
        };
        if self.flags.fold_case {
            fold(&mut class);
        }
        if negated {
            class.negate();
        }
        Ok((class, seq_len))
    }

    /// A bracketed class at the current position (Go's `parseClass`).
    pub(super) fn parse_class(&mut self) -> PResult<ClassUnicode> {
        let whole_class = self.rest();
        let mut t = &whole_class[1..];
        let mut negated = false;
        if t.starts_with('^') {
            negated = true;
            t = &t[1..];
        }
        let mut class = ClassUnicode::empty();
        let mut first = true;
        while t.is_empty() || !t.starts_with(']') || first {
            first = false;
            // POSIX [:alnum:]: only when a ":]" follows; otherwise '[' is a plain member.
            if t.len() > 2
                && t.starts_with("[:")
                && let Some(i) = t[2..].find(":]")
            {
                let name = &t[..i + 4];
                let Some((neg, ranges)) = posix_class(name) else {
                    return Err(err(ERR_INVALID_CHAR_RANGE, name));
                };
                class.union(&self.group(ranges, neg));
                t = &t[name.len()..];
                continue;
            }
            if t.len() >= 2 && t.starts_with('\\') {
                let c1 = t.as_bytes()[1];
                if c1 == b'p' || c1 == b'P' {
                    let (c, len) = self.parse_unicode_class(t)?;
                    class.union(&c);
                    t = &t[len..];
                    continue;
                }
                if let Some(c) = t.get(..2).and_then(|esc| self.perl_class(esc)) {
                    class.union(&c);
                    t = &t[2..];
                    continue;
                }
            }
            // A single character or a range.
            let rng = t;
            let (lo, rest) = parse_class_char(t, whole_class)?;
            t = rest;
            let mut hi = lo;
            if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
                let (h, rest) = parse_class_char(&t[1..], whole_class)?;
                t = rest;
                hi = h;
                if hi < lo {
                    return Err(err(ERR_INVALID_CHAR_RANGE, &rng[..rng.len() - t.len()]));
                }
            }
            if let Some(range) = scalar_range(lo, hi) {
                let mut c = ClassUnicode::new([range]);
                if self.flags.fold_case {
                    fold(&mut c);
                }
                class.union(&c);
            }
        }
        // Skip the closing ']'.
        let consumed = whole_class.len() - t.len() + 1;
        self.pos += consumed;
        if negated {
            class.negate();
        }
        Ok(class)
    }
}

/// Go's `parseEscape` for a `\` at the start of `s` (outside `\Q`, `\p`, Perl classes).
/// Returns the code point (which may be a surrogate, as in Go) and the length consumed.
pub(super) fn parse_escape(s: &str) -> PResult<(u32, usize)> {
    let t = &s[1..];
    let Some(c) = t.chars().next() else {
        return Err(err(ERR_TRAILING_BACKSLASH, ""));
    };
    let mut pos = 1 + c.len_utf8();
    let bad = |pos: usize| err(ERR_INVALID_ESCAPE, &s[..pos]);
    let b = s.as_bytes();
    let is_oct = |i: usize| b.get(i).is_some_and(|c| (b'0'..=b'7').contains(c));
    match c {
        '1'..='7' | '0' => {
            // A single non-zero digit would be a backreference, which Go refuses.
            if c != '0' && !is_oct(pos) {
                return Err(bad(pos));
            }
            let mut r = c as u32 - '0' as u32;
            for _ in 1..3 {
                if !is_oct(pos) {
                    break;
                }
                r = r * 8 + u32::from(b[pos] - b'0');
                pos += 1;
            }
            Ok((r, pos))
        }
        'x' => {
            let Some(c) = s[pos..].chars().next() else {
                return Err(bad(pos));
            };
            pos += c.len_utf8();
            if c == '{' {
                let mut r: u32 = 0;
                let mut nhex = 0;
                loop {
                    let Some(c) = s[pos..].chars().next() else {
                        return Err(bad(pos));
                    };
                    pos += c.len_utf8();
                    if c == '}' {
                        break;
                    }
                    let Some(v) = c.to_digit(16) else {
                        return Err(bad(pos));
                    };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return Err(bad(pos));
                    }
                    nhex += 1;
                }
                if nhex == 0 {
                    return Err(bad(pos));
                }
                return Ok((r, pos));
            }
            let x = c.to_digit(16);
            let Some(c2) = s[pos..].chars().next() else {
                return Err(bad(pos));
            };
            pos += c2.len_utf8();
            match (x, c2.to_digit(16)) {
                (Some(x), Some(y)) => Ok((x * 16 + y, pos)),
                _ => Err(bad(pos)),
            }
        }
        'a' => Ok((7, pos)),
        'f' => Ok((12, pos)),
        'n' => Ok((10, pos)),
        'r' => Ok((13, pos)),
        't' => Ok((9, pos)),
        'v' => Ok((11, pos)),
        // Escaped ASCII punctuation (anything not a letter or digit) is itself.
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c as u32, pos)),
        _ => Err(bad(pos)),
    }
}

/// Go's `parseClassChar`: one (possibly escaped) class member at the start of `s`.
fn parse_class_char<'s>(s: &'s str, whole_class: &str) -> PResult<(u32, &'s str)> {
    let Some(c) = s.chars().next() else {
        return Err(err(ERR_MISSING_BRACKET, whole_class));
    };
    if c == '\\' {
        let (r, len) = parse_escape(s)?;
        return Ok((r, &s[len..]));
    }
    Ok((c as u32, &s[c.len_utf8()..]))
}

/// A range of code points as chars, skipping the surrogate gap (which valid UTF-8 never
/// contains, in Go or Rust). `None` if nothing but surrogates remains.
fn scalar_range(lo: u32, hi: u32) -> Option<ClassUnicodeRange> {
    let lo = if (0xD800..=0xDFFF).contains(&lo) {
        0xE000
    } else {
        lo
    };
    let hi = if (0xD800..=0xDFFF).contains(&hi) {
        0xD7FF
    } else {
        hi
    };
    if lo > hi {
        return None;
    }
    Some(ClassUnicodeRange::new(
        char::from_u32(lo)?,
        char::from_u32(hi)?,
    ))
}

/// Simple case folding closure (Go's fold orbits). The tables are compiled in, so this cannot
/// fail; if it ever did, the class is left unfolded rather than aborting the config load.
pub(super) fn fold(class: &mut ClassUnicode) {
    let _ = class.try_case_fold_simple();
}

const DIGIT: &[(char, char)] = &[('0', '9')];
const PERL_SPACE: &[(char, char)] = &[('\t', '\n'), ('\x0c', '\r'), (' ', ' ')];
const WORD: &[(char, char)] = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];

/// POSIX classes Go knows (ASCII only), `[:^name:]` negated.
fn posix_class(name: &str) -> Option<(bool, &'static [(char, char)])> {
    let (neg, bare) = match name.strip_prefix("[:^") {
        Some(rest) => (true, rest),
        None => (false, name.strip_prefix("[:")?),
    };
    let ranges: &'static [(char, char)] = match bare.strip_suffix(":]")? {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\x7f')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\x1f'), ('\x7f', '\x7f')],
        "digit" => DIGIT,
        "graph" => &[('!', '~')],
        "lower" => &[('a', 'z')],
        "print" => &[(' ', '~')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => WORD,
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    };
    Some((neg, ranges))
}
