//! Go's `Regexp.Expand` template language (`replacement`, and `target_label` of `replace`), and
//! Go's `ReplaceAllString` (used by `labelmap`).
//!
//! Rules, as Go implements them (the Rust crate's `Captures::expand` differs, hence our own):
//! * `$$` is a literal `$`;
//! * `$name` takes the **longest** run of Unicode letters (category L), Unicode decimal digits
//!   (Nd) and `_`, so `$1x` names the group `1x` (usually empty), not group 1 then `x`;
//! * `${name}` delimits the name, which must be a non-empty run of the same characters;
//! * a name of ASCII digits without a leading zero (or `0`) is a group number, anything else
//!   (including `01`) a group name; numbers ≥ 1e8 are treated as names;
//! * an unknown name, a number beyond the group count, or a group that did not participate
//!   expands to nothing; with duplicate names the first group of that name that participated;
//! * a malformed reference (`$` at the end, `$-`, `${1`, `${a-b}`) copies the `$` literally
//!   and continues right after it.
//!
//! Templates are compiled once per rule against the rule's regex, so names are resolved to group
//! indices at load time and expansion is a walk over literal pieces and capture ranges.

use std::sync::OnceLock;

use regex_syntax::hir::ClassUnicode;

use super::regex::{Captures, GoRegex};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(Box<str>),
    /// A group by number.
    Group(usize),
    /// Groups sharing one name, in order: the first that participated is used.
    Named(Box<[usize]>),
}

/// A compiled expansion template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    segments: Box<[Segment]>,
    /// Number of leading groups the template reads (0 when it reads none).
    groups_needed: usize,
}

impl Template {
    /// Compiles `template` against `re`'s groups.
    pub fn compile(template: &str, re: &GoRegex) -> Template {
        let mut segments: Vec<Segment> = Vec::new();
        let mut lit = String::new();
        let mut groups_needed = 0;
        let mut rest = template;
        while let Some(i) = rest.find('$') {
            lit.push_str(&rest[..i]);
            rest = &rest[i + 1..];
            if let Some(after) = rest.strip_prefix('$') {
                lit.push('$');
                rest = after;
                continue;
            }
            let Some((name, after)) = extract(rest) else {
                // Malformed: the '$' is text, scanning resumes right after it.
                lit.push('$');
                continue;
            };
            rest = after;
            let seg = match group_number(name) {
                Some(n) if n < re.group_len() => Some(Segment::Group(n)),
                Some(_) => None,
                None => {
                    let idx = re.groups_named(name);
                    (!idx.is_empty()).then(|| Segment::Named(idx.into_boxed_slice()))
                }
            };
            if let Some(seg) = seg {
                groups_needed = groups_needed.max(match &seg {
                    Segment::Group(n) => n + 1,
                    Segment::Named(v) => v.iter().max().map_or(0, |m| m + 1),
                    Segment::Literal(_) => 0,
                });
                if !lit.is_empty() {
                    segments.push(Segment::Literal(std::mem::take(&mut lit).into_boxed_str()));
                }
                segments.push(seg);
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            segments.push(Segment::Literal(lit.into_boxed_str()));
        }
        Template {
            segments: segments.into_boxed_slice(),
            groups_needed,
        }
    }

    /// Number of leading groups a match must report for [`expand`](Self::expand).
    pub fn groups_needed(&self) -> usize {
        self.groups_needed
    }

    /// The expansion when it does not depend on the match (no group references).
    pub fn as_literal(&self) -> Option<&str> {
        match &*self.segments {
            [] => Some(""),
            [Segment::Literal(s)] => Some(s),
            _ => None,
        }
    }

    /// When the template is exactly one group reference, that group's index (lets callers
    /// reuse an existing value instead of copying it).
    pub fn single_group(&self) -> Option<usize> {
        match &*self.segments {
            [Segment::Group(g)] => Some(*g),
            _ => None,
        }
    }

    /// Appends the expansion for a match of `hay` to `out`.
    pub fn expand_into(&self, hay: &str, caps: &Captures, out: &mut String) {
        for seg in &*self.segments {
            match seg {
                Segment::Literal(s) => out.push_str(s),
                Segment::Group(g) => {
                    if let Some((a, b)) = caps.get(*g) {
                        out.push_str(&hay[a..b]);
                    }
                }
                Segment::Named(groups) => {
                    if let Some((a, b)) = groups.iter().find_map(|g| caps.get(*g)) {
                        out.push_str(&hay[a..b]);
                    }
                }
            }
        }
    }

    /// The expansion for a match of `hay`.
    pub fn expand(&self, hay: &str, caps: &Captures) -> String {
        let mut out = String::new();
        self.expand_into(hay, caps, &mut out);
        out
    }
}

/// Go's `extract`: the name after a `$` (already removed), braced or not, and the rest.
fn extract(s: &str) -> Option<(&str, &str)> {
    let (braced, body) = match s.strip_prefix('{') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let end = body
        .char_indices()
        .find(|&(_, c)| !(c == '_' || is_go_letter(c) || is_go_digit(c)))
        .map_or(body.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    let name = &body[..end];
    if braced {
        let after = body[end..].strip_prefix('}')?;
        return Some((name, after));
    }
    Some((name, &body[end..]))
}

/// Go's number rule for a reference name: ASCII digits, no leading zero, below 1e8.
fn group_number(name: &str) -> Option<usize> {
    let b = name.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    let mut n: usize = 0;
    for &c in b {
        if n >= 100_000_000 {
            return None;
        }
        n = n * 10 + usize::from(c - b'0');
    }
    Some(n)
}

fn in_class(class: &ClassUnicode, c: char) -> bool {
    crate::gocompat::unicode::in_ranges(class.ranges(), c)
}

/// Go's `unicode.IsLetter` (general category L). `char::is_alphabetic` is the broader
/// Alphabetic property (it includes Nl and combining marks), so the category table is used.
fn is_go_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    static L: OnceLock<ClassUnicode> = OnceLock::new();
    in_class(L.get_or_init(|| super::regex::category_class("L")), c)
}

/// Go's `unicode.IsDigit` (category Nd). `char::is_numeric` is all of N, hence the table.
fn is_go_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    static ND: OnceLock<ClassUnicode> = OnceLock::new();
    in_class(ND.get_or_init(|| super::regex::category_class("Nd")), c)
}

/// Go's `Regexp.ReplaceAllString(hay, template)`: every non-overlapping match replaced by the
/// expansion, unmatched text copied, empty matches right after a match skipped, the search
/// advancing by at least one character. Anchors keep referring to the whole `hay`, which is
/// why an anchored relabel regex matches at most once (except with the unbalanced-parenthesis
/// quirk, where this loop matters).
pub fn replace_all(re: &GoRegex, hay: &str, template: &Template, caps: &mut Captures) -> String {
    let mut out = String::new();
    let mut last_end = 0;
    let mut search = 0;
    let groups = template.groups_needed().max(1);
    while search <= hay.len() {
        if !re.captures_at(hay, search, groups, caps) {
            break;
        }
        let Some((start, end)) = caps.get(0) else {
            break;
        };
        out.push_str(&hay[last_end..start]);
        if end > last_end || start == 0 {
            template.expand_into(hay, caps, &mut out);
        }
        last_end = end;
        let width = hay[search..].chars().next().map_or(0, char::len_utf8);
        if search + width > end {
            search += width;
        } else if search + 1 > end {
            // Only at the end of the input, where there is no next character.
            search += 1;
        } else {
            search = end;
        }
    }
    out.push_str(&hay[last_end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(regex: &str, input: &str, template: &str) -> Option<String> {
        let re = GoRegex::new(regex).unwrap();
        let t = Template::compile(template, &re);
        let mut caps = Captures::default();
        re.captures_at(input, 0, re.group_len(), &mut caps)
            .then(|| t.expand(input, &caps))
    }

    #[test]
    fn go_expand_rules() {
        // (template, expansion) with regex (.*) on "v" (group 1 = "v"). Go results from the
        // spec's table (verified through Prometheus).
        let cases = [
            ("$1", "v"),
            ("${1}", "v"),
            ("$1x", ""),
            ("${1}x", "vx"),
            ("$$1", "$1"),
            ("$$1=$1", "$1=v"),
            ("cost$", "cost$"),
            ("$-$.$1", "$-$.v"),
            ("${1", "${1"),
            ("${a-b}$1", "${a-b}v"),
            ("<$01>", "<>"),
            ("[$1é]", "[]"),
            ("a$2b${7}c${nope}d", "acd"),
            ("pre-$1_suf", "pre-"),
            ("$0", "v"),
            ("${0}", "v"),
            ("$", "$"),
            ("$$", "$"),
            ("$$$1", "$v"),
            ("${}", "${}"),
            ("$1٣", ""),   // Arabic-Indic digit is Nd: part of the name
            ("$1ⅷ", "vⅷ"), // Roman numeral is Nl, not Nd: ends the name
            ("x${1}y${1}z", "xvyvz"),
            ("$100000000", ""),
        ];
        for (tpl, want) in cases {
            assert_eq!(
                expand("(.*)", "v", tpl).as_deref(),
                Some(want),
                "template {tpl:?}"
            );
        }
    }

    #[test]
    fn named_groups() {
        let cases = [
            (
                r"(?P<host>[^:]+):(?P<port>\d+)",
                "h:80",
                "$host-$port",
                "h-80",
            ),
            (
                r"(?P<host>[^:]+):(?P<port>\d+)",
                "h:80",
                "${port}_$1",
                "80_h",
            ),
            (r"(?P<1x>a)(b)", "ab", "$1x", "a"), // a group really named 1x
            (r"(?P<n>a)|(?P<n>b)", "b", "$n", "b"), // first *participating* group named n
            (r"(?P<n>a)|(?P<n>b)", "a", "$n", "a"),
            (r"(?P<01>a)", "a", "$01", "a"), // "01" is a name, and this group has it
            (r"(a)|(b)", "b", "[$1][$2]", "[][b]"),
        ];
        for (re, input, tpl, want) in cases {
            assert_eq!(
                expand(re, input, tpl).as_deref(),
                Some(want),
                "{re} on {input} with {tpl}"
            );
        }
    }

    #[test]
    fn literal_and_single_group_detection() {
        let re = GoRegex::new("(.*)").unwrap();
        assert_eq!(Template::compile("abc", &re).as_literal(), Some("abc"));
        assert_eq!(Template::compile("a$$b", &re).as_literal(), Some("a$b"));
        assert_eq!(Template::compile("$5", &re).as_literal(), Some(""));
        assert_eq!(Template::compile("$1", &re).single_group(), Some(1));
        assert_eq!(Template::compile("${1}", &re).groups_needed(), 2);
        assert_eq!(Template::compile("$0", &re).groups_needed(), 1);
    }

    #[test]
    fn replace_all_like_go() {
        // (regex, input, template, Go's ReplaceAllString result)
        let cases = [
            (
                "__meta_kubernetes_pod_label_(.+)",
                "__meta_kubernetes_pod_label_app",
                "$1",
                "app",
            ),
            ("(.*)", "abc", "x_$1", "x_abc"),
            ("(.*)", "", "x_$1", "x_"),
            // Unbalanced-parenthesis quirk: `^(?s:a)|(b)$` finds "b" at the end only.
            ("a)|(b", "xb", "<$1>", "x<b>"),
            ("a)|(b", "axb", "<$1>", "<>x<b>"),
            ("a)|(b", "ab", "<$1>", "<><b>"),
        ];
        for (re, input, tpl, want) in cases {
            let r = GoRegex::new(re).unwrap();
            let t = Template::compile(tpl, &r);
            let mut caps = Captures::default();
            assert_eq!(
                replace_all(&r, input, &t, &mut caps),
                want,
                "{re} on {input}"
            );
        }
    }
}
