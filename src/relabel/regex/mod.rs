//! Go (RE2) regular-expression syntax on top of the Rust `regex-automata` engine.
//!
//! Relabel regexes are written for Go's `regexp` package. The Rust engine implements the same
//! family (RE2: leftmost-first submatches, no backtracking features) but its *syntax* differs in
//! many places (see the table in the [module docs](super)). Feeding the user's string to the
//! Rust parser would silently change meanings (`\d` matching Arabic digits, `[a-z--c]` becoming
//! a set difference, `$01` …) or reject valid configs (`\Q…\E`, octal escapes).
//!
//! So this module is a **Go-syntax front end**: a parser that follows Go's `regexp/syntax`
//! (Perl flags, as `regexp.Compile` uses) decision for decision — what it accepts, what it
//! rejects, with Go's error texts — and produces the regex-syntax `Hir` directly. The Rust
//! parser never sees the pattern; every construct is translated to its Go meaning explicitly:
//!
//! * `\d \s \w \b` and POSIX classes are ASCII (built from explicit ranges);
//! * `(?i)` case folding is applied by us (simple case folding orbits, fold-then-negate, as
//!   Go does) so no flag semantics of the Rust parser are involved;
//! * `.` and `$`/`^` become explicit `Dot`/`Look` nodes according to Go's `s`/`m` flags;
//! * group names are kept in our own table (Go allows duplicate names and names starting with a
//!   digit; the Rust engine gets unnamed groups).
//!
//! The user pattern is wrapped by string concatenation as `^(?s:` + R + `)$` before parsing, like
//! Alloy and Prometheus 3, which keeps the unbalanced-parentheses quirk (`a)|(b`).

use std::fmt;
use std::sync::OnceLock;

use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::{Input, meta};
use regex_syntax::hir::{self, Class, ClassUnicode, ClassUnicodeRange, Dot, Hir, Look, Repetition};

/// Go's limit on `{n,m}` counts (and on their products when nested).
const MAX_REPEAT: u32 = 1000;
/// Go's `maxHeight`: deeper parse trees fail with "expression nests too deeply".
const MAX_HEIGHT: usize = 1000;
/// NFA size limit handed to the Rust engine. Go counts a character class as one instruction
/// whereas the Rust NFA expands it into UTF-8 byte ranges, so `\pL{1000}` needs far more room
/// than the crate's 10 MiB default; patterns beyond this are rejected (see module docs).
const NFA_SIZE_LIMIT: usize = 64 << 20;

/// A regex compile error, worded like Go's `regexp/syntax` errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexError {
    /// Go's error code text, e.g. `missing closing )`.
    pub code: &'static str,
    /// The offending part of the **wrapped** expression, as Go quotes it.
    pub expr: String,
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

impl std::error::Error for RegexError {}

const ERR_INVALID_CHAR_RANGE: &str = "invalid character class range";
const ERR_INVALID_ESCAPE: &str = "invalid escape sequence";
const ERR_INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const ERR_INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const ERR_INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const ERR_INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const ERR_MISSING_BRACKET: &str = "missing closing ]";
const ERR_MISSING_PAREN: &str = "missing closing )";
const ERR_MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const ERR_TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const ERR_UNEXPECTED_PAREN: &str = "unexpected )";
const ERR_NESTING_DEPTH: &str = "expression nests too deeply";
/// Not a Go error: Go would accept the pattern but we cannot guarantee the same meaning.
const ERR_UNSUPPORTED: &str = "unsupported by scraper (the Rust engine cannot reproduce Go)";
/// Not a Go error: the Rust engine's size limit (Go's own limit is different).
const ERR_TOO_LARGE: &str = "expression too large";

/// Parser flags, as in Go's `regexp/syntax` (`OneLine` is stored inverted as `multi_line`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Flags {
    fold_case: bool,
    dot_nl: bool,
    multi_line: bool,
    non_greedy: bool,
}

/// Our parse tree: already carries Go's meaning (classes folded/negated, looks resolved).
#[derive(Debug, Clone)]
enum Node {
    Empty,
    /// One character, matched exactly (case folding already turned it into a class).
    Literal(char),
    /// A character class (may be empty: matches nothing).
    Class(ClassUnicode),
    /// A code point that can never occur in valid UTF-8 (e.g. `\x{D800}`): never matches.
    Never,
    AnyChar,
    AnyCharNotNl,
    Look(Look),
    Capture {
        index: u32,
        sub: Box<Node>,
    },
    Repeat {
        min: u32,
        max: Option<u32>,
        greedy: bool,
        sub: Box<Node>,
    },
    Concat(Vec<Node>),
    Alternate(Vec<Node>),
}

struct Parser<'a> {
    whole: &'a str,
    pos: usize,
    flags: Flags,
    ncap: u32,
    /// `names[i]` is the name of group `i` (`names[0]` is the whole match, unnamed).
    names: Vec<Option<String>>,
    /// Open groups, to fail like Go on absurd nesting before recursion gets deep.
    group_depth: usize,
}

type PResult<T> = Result<T, RegexError>;

fn err(code: &'static str, expr: impl Into<String>) -> RegexError {
    RegexError {
        code,
        expr: expr.into(),
    }
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.whole[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_byte_at(&self, offset: usize) -> Option<u8> {
        self.whole.as_bytes().get(self.pos + offset).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Alternation: `concat ( '|' concat )*`, stopping at `)` or the end.
    fn parse_alternation(&mut self) -> PResult<Node> {
        let mut branches = vec![self.parse_concat()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            branches.push(self.parse_concat()?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alternate(branches)
        })
    }

    /// A concatenation, up to `|`, `)` or the end. Mirrors the token loop of Go's `parse`,
    /// including its rule that a repetition applies to the last item pushed (a flag group such
    /// as `(?i)` pushes nothing, so `a(?i)*` repeats `a`).
    fn parse_concat(&mut self) -> PResult<Node> {
        let mut items: Vec<Node> = Vec::new();
        // Start offset of the previous token when it was a repetition operator.
        let mut last_repeat: Option<usize> = None;
        while let Some(c) = self.peek() {
            let mut this_repeat = None;
            match c {
                '|' | ')' => break,
                '(' => {
                    if self.peek_byte_at(1) == Some(b'?') {
                        if let Some(node) = self.parse_perl_group()? {
                            items.push(node);
                        }
                    } else {
                        self.pos += 1;
                        self.ncap += 1;
                        let index = self.ncap;
                        self.names.push(None);
                        let sub = self.parse_group_body()?;
                        items.push(Node::Capture {
                            index,
                            sub: Box::new(sub),
                        });
                    }
                }
                '^' => {
                    self.pos += 1;
                    items.push(Node::Look(if self.flags.multi_line {
                        Look::StartLF
                    } else {
                        Look::Start
                    }));
                }
                '$' => {
                    self.pos += 1;
                    items.push(Node::Look(if self.flags.multi_line {
                        Look::EndLF
                    } else {
                        Look::End
                    }));
                }
                '.' => {
                    self.pos += 1;
                    items.push(if self.flags.dot_nl {
                        Node::AnyChar
                    } else {
                        Node::AnyCharNotNl
                    });
                }
                '[' => {
                    let class = self.parse_class()?;
                    items.push(Node::Class(class));
                }
                '*' | '+' | '?' => {
                    let start = self.pos;
                    self.pos += 1;
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    self.repeat(&mut items, min, max, start, last_repeat, false)?;
                    this_repeat = Some(start);
                }
                '{' => {
                    let start = self.pos;
                    match parse_repeat_braces(self.rest()) {
                        None => {
                            // Not of the form {n}, {n,} or {n,m}: a literal '{'.
                            self.pos += 1;
                            items.push(self.literal('{'));
                        }
                        Some((min, max, len)) => {
                            self.pos += len;
                            let bad = match (min, max) {
                                (None, _) => true,
                                (Some(lo), Some(Some(hi))) => {
                                    lo > MAX_REPEAT || hi > MAX_REPEAT || lo > hi
                                }
                                (Some(lo), Some(None)) => lo > MAX_REPEAT,
                                (Some(_), None) => true,
                            };
                            let (Some(lo), Some(hi), false) = (min, max, bad) else {
                                return Err(err(
                                    ERR_INVALID_REPEAT_SIZE,
                                    &self.whole[start..self.pos],
                                ));
                            };
                            self.repeat(&mut items, lo, hi, start, last_repeat, true)?;
                            this_repeat = Some(start);
                        }
                    }
                }
                '\\' => self.parse_backslash(&mut items)?,
                _ => {
                    self.bump();
                    items.push(self.literal(c));
                }
            }
            last_repeat = this_repeat;
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    /// Applies a repetition operator to the last item (Go's `parser.repeat`).
    fn repeat(
        &mut self,
        items: &mut Vec<Node>,
        min: u32,
        max: Option<u32>,
        start: usize,
        last_repeat: Option<usize>,
        counted: bool,
    ) -> PResult<()> {
        let mut greedy = !self.flags.non_greedy;
        if self.peek() == Some('?') {
            self.pos += 1;
            greedy = !greedy;
        }
        if let Some(prev) = last_repeat {
            // Go (Perl mode) refuses stacked operators: `a**`, `a+*`, `a{2}{3}`, `a*+`.
            return Err(err(ERR_INVALID_REPEAT_OP, &self.whole[prev..self.pos]));
        }
        let Some(sub) = items.pop() else {
            return Err(err(
                ERR_MISSING_REPEAT_ARGUMENT,
                &self.whole[start..self.pos],
            ));
        };
        let node = Node::Repeat {
            min,
            max,
            greedy,
            sub: Box::new(sub),
        };
        if counted
            && (min >= 2 || max.is_some_and(|m| m >= 2))
            && !repeat_is_valid(&node, MAX_REPEAT)
        {
            return Err(err(ERR_INVALID_REPEAT_SIZE, &self.whole[start..self.pos]));
        }
        items.push(node);
        Ok(())
    }

    /// After an opening `(` (or `(?:`, `(?P<n>`…): the group body and its `)`. Flags changed
    /// inside the group are restored at its end, as Go does.
    fn parse_group_body(&mut self) -> PResult<Node> {
        self.group_depth += 1;
        if self.group_depth > MAX_HEIGHT {
            return Err(err(ERR_NESTING_DEPTH, self.whole));
        }
        let saved = self.flags;
        let node = self.parse_alternation()?;
        if self.peek() != Some(')') {
            // Only the end of the input stops an alternation other than ')'.
            return Err(err(ERR_MISSING_PAREN, self.whole));
        }
        self.pos += 1;
        self.flags = saved;
        self.group_depth -= 1;
        Ok(node)
    }

    /// `(?` constructs: named captures, flag groups `(?i)`, non-capturing `(?i:…)`.
    /// Returns the node to push, or `None` for a bare flag change.
    fn parse_perl_group(&mut self) -> PResult<Option<Node>> {
        let s = self.rest();
        let b = s.as_bytes();
        // Named capture: (?P<name>re), and (?<name>re) since Go 1.22 (Alloy's Go).
        let named_begin = if b.len() > 4 && b[2] == b'P' && b[3] == b'<' {
            Some(4)
        } else if b.len() > 3 && b[2] == b'<' {
            Some(3)
        } else {
            None
        };
        if let Some(begin) = named_begin {
            let Some(end) = s.find('>') else {
                return Err(err(ERR_INVALID_NAMED_CAPTURE, s));
            };
            let capture = &s[..end + 1];
            let name = &s[begin..end];
            if name.is_empty() || !name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric()) {
                return Err(err(ERR_INVALID_NAMED_CAPTURE, capture));
            }
            self.pos += end + 1;
            self.ncap += 1;
            let index = self.ncap;
            self.names.push(Some(name.to_owned()));
            let sub = self.parse_group_body()?;
            return Ok(Some(Node::Capture {
                index,
                sub: Box::new(sub),
            }));
        }

        // Flags, possibly opening a non-capturing group. Go's state machine, including its
        // acceptance of `(?)` and rejection of `(?-)` / `(?i-)`.
        let mut flags = self.flags;
        let mut negate = false;
        let mut saw_flag = false;
        let mut chars = s[2..].char_indices();
        loop {
            let Some((i, c)) = chars.next() else {
                return Err(err(ERR_INVALID_PERL_OP, s));
            };
            let consumed = 2 + i + c.len_utf8();
            let set = |f: &mut bool| *f = !negate;
            match c {
                'i' => {
                    set(&mut flags.fold_case);
                    saw_flag = true;
                }
                'm' => {
                    set(&mut flags.multi_line);
                    saw_flag = true;
                }
                's' => {
                    set(&mut flags.dot_nl);
                    saw_flag = true;
                }
                'U' => {
                    set(&mut flags.non_greedy);
                    saw_flag = true;
                }
                '-' => {
                    if negate {
                        return Err(err(ERR_INVALID_PERL_OP, &s[..consumed]));
                    }
                    negate = true;
                    saw_flag = false;
                }
                ':' | ')' => {
                    if negate && !saw_flag {
                        return Err(err(ERR_INVALID_PERL_OP, &s[..consumed]));
                    }
                    self.pos += consumed;
                    if c == ')' {
                        self.flags = flags;
                        return Ok(None);
                    }
                    // Non-capturing group: new flags inside, old flags restored after.
                    self.group_depth += 1;
                    if self.group_depth > MAX_HEIGHT {
                        return Err(err(ERR_NESTING_DEPTH, self.whole));
                    }
                    let saved = self.flags;
                    self.flags = flags;
                    let node = self.parse_alternation()?;
                    if self.peek() != Some(')') {
                        return Err(err(ERR_MISSING_PAREN, self.whole));
                    }
                    self.pos += 1;
                    self.flags = saved;
                    self.group_depth -= 1;
                    return Ok(Some(node));
                }
                _ => return Err(err(ERR_INVALID_PERL_OP, &s[..consumed])),
            }
        }
    }

    /// A `\` outside a class.
    fn parse_backslash(&mut self, items: &mut Vec<Node>) -> PResult<()> {
        let s = self.rest();
        if let Some(&c1) = s.as_bytes().get(1) {
            let look = match c1 {
                b'A' => Some(Look::Start),
                b'z' => Some(Look::End),
                // Go's \b is an ASCII word boundary.
                b'b' => Some(Look::WordAscii),
                b'B' => Some(Look::WordAsciiNegate),
                _ => None,
            };
            if let Some(look) = look {
                self.pos += 2;
                items.push(Node::Look(look));
                return Ok(());
            }
            if c1 == b'C' {
                return Err(err(ERR_INVALID_ESCAPE, &s[..2]));
            }
            if c1 == b'Q' {
                // \Q…\E: literal text up to \E or the end of the pattern.
                let body = &s[2..];
                let (lit, consumed) = match body.find("\\E") {
                    Some(i) => (&body[..i], 2 + i + 2),
                    None => (body, s.len()),
                };
                for ch in lit.chars() {
                    items.push(self.literal(ch));
                }
                self.pos += consumed;
                return Ok(());
            }
            if c1 == b'p' || c1 == b'P' {
                let (class, len) = self.parse_unicode_class(s)?;
                self.pos += len;
                items.push(Node::Class(class));
                return Ok(());
            }
            if let Some(class) = s.get(..2).and_then(|esc| self.perl_class(esc)) {
                self.pos += 2;
                items.push(Node::Class(class));
                return Ok(());
            }
        }
        let (r, len) = parse_escape(s)?;
        self.pos += len;
        items.push(match char::from_u32(r) {
            Some(ch) => self.literal(ch),
            None => Node::Never,
        });
        Ok(())
    }

    /// A literal under the current flags: with `(?i)` it matches its simple-fold orbit.
    fn literal(&self, c: char) -> Node {
        if !self.flags.fold_case {
            return Node::Literal(c);
        }
        let mut class = ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
        fold(&mut class);
        let ranges = class.ranges();
        if ranges.len() == 1 && ranges[0].start() == ranges[0].end() {
            Node::Literal(c)
        } else {
            Node::Class(class)
        }
    }

    /// `\d \D \s \S \w \W` (ASCII, as in Go), folded under `(?i)` before negation.
    fn perl_class(&self, esc: &str) -> Option<ClassUnicode> {
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
    fn parse_unicode_class(&self, s: &str) -> PResult<(ClassUnicode, usize)> {
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
    fn parse_class(&mut self) -> PResult<ClassUnicode> {
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

/// `{n}`, `{n,}`, `{n,m}` at the start of `s` (Go's `parseRepeat`). `None` when `s` is not of
/// that form (then `{` is a literal). Counts too large to parse come back as `None` inside, so
/// the caller reports "invalid repeat count". Returns (min, max (None = unbounded), length).
#[allow(clippy::type_complexity)]
fn parse_repeat_braces(s: &str) -> Option<(Option<u32>, Option<Option<u32>>, usize)> {
    let b = s.as_bytes();
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut i = 1;
    let (min, n) = parse_int(&b[i..])?;
    i += n;
    let max;
    match b.get(i)? {
        b',' => {
            i += 1;
            match b.get(i)? {
                b'}' => max = Some(None),
                _ => {
                    let (m, n) = parse_int(&b[i..])?;
                    i += n;
                    max = m.map(Some);
                }
            }
        }
        _ => max = Some(min),
    }
    if b.get(i) != Some(&b'}') {
        return None;
    }
    // A too-large max with a valid min still has to fail: signal through min = None.
    let min = if max.is_none() { None } else { min };
    Some((min, max, i + 1))
}

/// Go's `parseInt`: decimal digits without a leading zero (except `0` itself). Returns the value
/// (`None` when ≥ 1e8, Go's overflow guard) and the digit count.
fn parse_int(b: &[u8]) -> Option<(Option<u32>, usize)> {
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || (n >= 2 && b[0] == b'0') {
        return None;
    }
    let mut v: u32 = 0;
    for &c in &b[..n] {
        if v >= 100_000_000 {
            return Some((None, n));
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some((Some(v), n))
}

/// Go's `repeatIsValid`: nested counted repetitions may not multiply beyond `n` copies.
fn repeat_is_valid(node: &Node, mut n: u32) -> bool {
    if let Node::Repeat { min, max, .. } = node {
        let m = match max {
            Some(0) => return true,
            Some(m) => *m,
            None => *min,
        };
        if m > n {
            return false;
        }
        // m == 0 (`x{0,}`-like with min 0 as the bound) leaves the budget unchanged.
        n = n.checked_div(m).unwrap_or(n);
    }
    match node {
        Node::Capture { sub, .. } | Node::Repeat { sub, .. } => repeat_is_valid(sub, n),
        Node::Concat(v) | Node::Alternate(v) => v.iter().all(|s| repeat_is_valid(s, n)),
        _ => true,
    }
}

/// Go's `parseEscape` for a `\` at the start of `s` (outside `\Q`, `\p`, Perl classes).
/// Returns the code point (which may be a surrogate, as in Go) and the length consumed.
fn parse_escape(s: &str) -> PResult<(u32, usize)> {
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
fn fold(class: &mut ClassUnicode) {
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

/// Go's `unicode.Categories` keys (identical in Go 1.19 and 1.26).
const GO_CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// Go 1.26's `unicode.Scripts` keys (Unicode 15.0).
const GO_SCRIPTS: &[&str] = &[
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cypro_Minoan",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Kawi",
    "Katakana",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nag_Mundari",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Old_Uyghur",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangsa",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Toto",
    "Ugaritic",
    "Vai",
    "Vithkuqi",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
];

enum UnicodeLookup {
    /// Go rejects the name.
    Unknown,
    /// Only Go ≥ 1.25 accepts it (aliases, loose matching, `Cn`, `LC`, …): refused by us because
    /// Go versions disagree and we cannot promise Alloy's exact set.
    NewerGoOnly,
}

/// The class for a Go Unicode class name, built from regex-syntax's tables. Go's `C` lacks
/// unassigned code points (`Cn`), which the Unicode/Rust `C` includes, so it is assembled from
/// its parts.
fn unicode_class(name: &str) -> Result<ClassUnicode, UnicodeLookup> {
    if name == "Any" {
        return Ok(ClassUnicode::new([ClassUnicodeRange::new('\0', char::MAX)]));
    }
    let parts: Vec<&str> = if name == "C" {
        vec!["Cc", "Cf", "Co", "Cs"]
    } else if GO_CATEGORIES.contains(&name) || GO_SCRIPTS.contains(&name) {
        vec![name]
    } else if looks_like_newer_go_name(name) {
        return Err(UnicodeLookup::NewerGoOnly);
    } else {
        return Err(UnicodeLookup::Unknown);
    };
    let mut out = ClassUnicode::empty();
    for part in parts {
        out.union(&rust_unicode_class(part).ok_or(UnicodeLookup::Unknown)?);
    }
    Ok(out)
}

/// The class of a Go category or script name (empty if unknown); used by the template
/// expander for Go's `unicode.IsLetter` / `IsDigit`.
pub(crate) fn category_class(name: &str) -> ClassUnicode {
    unicode_class(name).unwrap_or_else(|_| ClassUnicode::empty())
}

/// Names Go ≥ 1.25 accepts beyond the exact category/script keys: any spelling that matches a
/// category or script case-insensitively ignoring `_`, `-` and spaces, plus the long category
/// aliases and a few extra properties.
fn looks_like_newer_go_name(name: &str) -> bool {
    let loose = |s: &str| {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let n = loose(name);
    if n.is_empty() {
        return false;
    }
    const EXTRA: &[&str] = &[
        "cn",
        "lc",
        "ascii",
        "assigned",
        "letter",
        "casedletter",
        "uppercaseletter",
        "lowercaseletter",
        "titlecaseletter",
        "modifierletter",
        "otherletter",
        "mark",
        "spacingmark",
        "enclosingmark",
        "nonspacingmark",
        "number",
        "decimalnumber",
        "letternumber",
        "othernumber",
        "punctuation",
        "connectorpunctuation",
        "dashpunctuation",
        "closepunctuation",
        "finalpunctuation",
        "initialpunctuation",
        "otherpunctuation",
        "openpunctuation",
        "symbol",
        "currencysymbol",
        "modifiersymbol",
        "mathsymbol",
        "othersymbol",
        "separator",
        "lineseparator",
        "paragraphseparator",
        "spaceseparator",
        "other",
        "control",
        "format",
        "privateuse",
        "surrogate",
        "unassigned",
    ];
    EXTRA.contains(&n.as_str())
        || GO_CATEGORIES
            .iter()
            .chain(GO_SCRIPTS)
            .any(|k| loose(k) == n)
}

/// The class regex-syntax has for a Unicode general category or script name.
fn rust_unicode_class(name: &str) -> Option<ClassUnicode> {
    static CACHE: OnceLock<std::sync::Mutex<std::collections::HashMap<String, ClassUnicode>>> =
        OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Ok(map) = cache.lock()
        && let Some(c) = map.get(name)
    {
        return Some(c.clone());
    }
    if name == "Cs" {
        // Surrogates: not scalar values, so they never occur in a `str` (nor in valid UTF-8
        // for Go), and regex-syntax has no usable class for them.
        return Some(ClassUnicode::empty());
    }
    // Scripts are asked for explicitly (`sc=`) so a script name can never be taken for a
    // property or category of the same loose spelling; categories with `gc=`.
    let query = if GO_CATEGORIES.contains(&name) {
        format!(r"\p{{gc={name}}}")
    } else {
        format!(r"\p{{sc={name}}}")
    };
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&query)
        .ok()?;
    let class = match hir.kind() {
        hir::HirKind::Class(Class::Unicode(c)) => c.clone(),
        // An empty class (Cs: surrogates are not scalar values) compiles to a fail node.
        _ => ClassUnicode::empty(),
    };
    if let Ok(mut map) = cache.lock() {
        map.insert(name.to_owned(), class.clone());
    }
    Some(class)
}

fn depth(node: &Node) -> usize {
    match node {
        Node::Capture { sub, .. } | Node::Repeat { sub, .. } => 1 + depth(sub),
        Node::Concat(v) | Node::Alternate(v) => 1 + v.iter().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

/// Builds the engine's HIR. With `ascii`, the HIR is specialised for haystacks known to be
/// ASCII: every class is intersected with ASCII, `.` becomes an ASCII class and non-ASCII
/// literals can never match. On an ASCII haystack it matches exactly like the full HIR (a
/// character outside ASCII cannot occur there), but compiles to single-byte transitions
/// instead of UTF-8 sequence automata, which makes submatch extraction several times cheaper.
/// Label names and most values (addresses, ports, Kubernetes names) are ASCII.
fn to_hir(node: &Node, ascii: bool) -> Hir {
    let ascii_class = |mut c: ClassUnicode| {
        if ascii {
            c.intersect(&ClassUnicode::new([ClassUnicodeRange::new('\0', '\x7f')]));
        }
        Hir::class(Class::Unicode(c))
    };
    match node {
        Node::Empty => Hir::empty(),
        Node::Literal(c) if ascii && !c.is_ascii() => Hir::fail(),
        Node::Literal(c) => {
            let mut buf = [0u8; 4];
            Hir::literal(c.encode_utf8(&mut buf).as_bytes())
        }
        Node::Class(c) => ascii_class(c.clone()),
        Node::Never => Hir::fail(),
        Node::AnyChar if ascii => {
            ascii_class(ClassUnicode::new([ClassUnicodeRange::new('\0', '\x7f')]))
        }
        Node::AnyChar => Hir::dot(Dot::AnyChar),
        Node::AnyCharNotNl if ascii => ascii_class(ClassUnicode::new([
            ClassUnicodeRange::new('\0', '\x09'),
            ClassUnicodeRange::new('\x0b', '\x7f'),
        ])),
        Node::AnyCharNotNl => Hir::dot(Dot::AnyCharExceptLF),
        Node::Look(l) => Hir::look(*l),
        Node::Capture { index, sub } => Hir::capture(hir::Capture {
            index: *index,
            name: None,
            sub: Box::new(to_hir(sub, ascii)),
        }),
        Node::Repeat {
            min,
            max,
            greedy,
            sub,
        } => Hir::repetition(Repetition {
            min: *min,
            max: *max,
            greedy: *greedy,
            sub: Box::new(to_hir(sub, ascii)),
        }),
        Node::Concat(v) => Hir::concat(v.iter().map(|n| to_hir(n, ascii)).collect()),
        Node::Alternate(v) => Hir::alternation(v.iter().map(|n| to_hir(n, ascii)).collect()),
    }
}

/// How a compiled regex matches: most relabel regexes are a plain literal or the default
/// `(.*)`, which need no automaton at all.
#[derive(Debug)]
enum Engine {
    /// The anchored pattern is a literal: matches iff the input equals it. No groups.
    Exact(Box<str>),
    /// Matches every input; group 1 (when `capture_all`) is the whole input, like `(.*)`.
    All { capture_all: bool },
    /// `^(?s:(C1*)LITERAL(C2*))$`-shaped patterns (`(.+):(\d+)`, `(.*)@(.*)`, …), matched by
    /// searching the literal instead of running an automaton. See [`Split`].
    Split(Box<Split>),
    /// General patterns: the full automaton, and one specialised for ASCII haystacks.
    Meta {
        full: meta::Regex,
        ascii: meta::Regex,
    },
}

/// A set of characters with an ASCII lookup table (membership is checked per character of the
/// haystack in [`Split`] matching).
#[derive(Debug)]
struct CharSet {
    ascii: [bool; 128],
    class: ClassUnicode,
}

impl CharSet {
    fn new(class: ClassUnicode) -> CharSet {
        let mut ascii = [false; 128];
        for r in class.ranges() {
            let (lo, hi) = (r.start() as u32, r.end() as u32);
            for b in lo..=hi.min(127) {
                ascii[b as usize] = true;
            }
        }
        CharSet { ascii, class }
    }

    fn contains(&self, c: char) -> bool {
        if c.is_ascii() {
            return self.ascii[c as usize];
        }
        crate::gocompat::unicode::in_ranges(self.class.ranges(), c)
    }
}

/// One side of a [`Split`]: `C{min,}` (greedy or lazy), optionally captured.
#[derive(Debug)]
struct Part {
    set: CharSet,
    min: u32,
    greedy: bool,
    group: Option<usize>,
}

/// `^(?s:P1 LITERAL P2)$` where P1 and P2 are unbounded repetitions of one character class.
///
/// Why this is exact: the match must start at 0 and end at the end (anchors), P2 must consume
/// everything after the literal, so the only choice is where P1 ends. Go's leftmost-first
/// (backtracking-priority) semantics try P1's lengths longest-first when greedy and
/// shortest-first when lazy; the first length that lets `LITERAL P2 $` match wins. So the
/// answer is the rightmost (greedy) or leftmost (lazy) occurrence `q` of the literal such that
/// `hay[..q]` is all P1 characters (at least `min`) and `hay[q+len..]` all P2 characters (at
/// least `min`). The seed config's `(.+):(\d+)`, `(.+)@(\d+)` and `(.*)@(.*)` have this shape;
/// tests compare every such engine with the general automaton.
#[derive(Debug)]
struct Split {
    first: Part,
    literal: Box<str>,
    second: Part,
}

impl Split {
    /// Byte offset where the literal starts in the match, if `hay` matches.
    fn find(&self, hay: &str) -> Option<usize> {
        let lit = self.literal.as_bytes();
        if hay.len() < lit.len() {
            return None;
        }
        // P1 can only cover the leading run of its characters.
        let run = hay
            .char_indices()
            .find(|&(_, c)| !self.first.set.contains(c))
            .map_or(hay.len(), |(i, _)| i);
        let last = run.min(hay.len() - lit.len());
        let ok = |q: usize| {
            hay.as_bytes()[q..].starts_with(lit)
                && count_at_least(&hay[..q], self.first.min)
                && self.all_second(&hay[q + lit.len()..])
        };
        if self.first.greedy {
            (0..=last).rev().find(|&q| ok(q))
        } else {
            (0..=last).find(|&q| ok(q))
        }
    }

    fn all_second(&self, rest: &str) -> bool {
        let mut n: u32 = 0;
        for c in rest.chars() {
            if !self.second.set.contains(c) {
                return false;
            }
            n = n.saturating_add(1);
        }
        n >= self.second.min
    }
}

/// True when `s` has at least `min` characters.
fn count_at_least(s: &str, min: u32) -> bool {
    min == 0 || s.chars().take(min as usize).count() >= min as usize
}

/// A compiled, anchored Go regex.
#[derive(Debug)]
pub struct GoRegex {
    source: Box<str>,
    engine: Engine,
    /// Names by group index (0 = the whole match, never named).
    names: Box<[Option<Box<str>>]>,
}

/// Submatch positions of one match: `get(i)` is group `i`'s byte range, if it took part.
#[derive(Debug, Default, Clone)]
pub struct Captures {
    slots: Vec<Option<NonMaxUsize>>,
}

impl Captures {
    /// Byte range of group `i` in the haystack, if the group participated.
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        let s = self.slots.get(2 * i)?.as_ref()?.get();
        let e = self.slots.get(2 * i + 1)?.as_ref()?.get();
        Some((s, e))
    }

    fn reset(&mut self, groups: usize) {
        self.slots.clear();
        self.slots.resize(2 * groups, None);
    }

    fn set(&mut self, i: usize, s: usize, e: usize) {
        if let (Some(s), Some(e)) = (NonMaxUsize::new(s), NonMaxUsize::new(e))
            && 2 * i + 1 < self.slots.len()
        {
            self.slots[2 * i] = Some(s);
            self.slots[2 * i + 1] = Some(e);
        }
    }
}

impl GoRegex {
    /// Compiles a relabel regex: wraps it as `^(?s:` + `pattern` + `)$` and parses it with Go's
    /// syntax rules.
    pub fn new(pattern: &str) -> Result<Self, RegexError> {
        // Parsing, HIR building and the engine's compiler all recurse per nesting level. Go
        // accepts up to 1000 levels; to get there (and to fail cleanly beyond) without
        // overflowing a small thread stack, deeply nested patterns compile on a thread with a
        // large stack. Config load is rare, so the thread costs nothing that matters.
        let opens = pattern.bytes().filter(|&b| b == b'(').count();
        if opens > 64 {
            let owned = pattern.to_owned();
            let spawned = std::thread::Builder::new()
                .stack_size(512 << 20)
                .spawn(move || Self::compile(&owned));
            if let Ok(handle) = spawned
                && let Ok(result) = handle.join()
            {
                return result;
            }
        }
        Self::compile(pattern)
    }

    fn compile(pattern: &str) -> Result<Self, RegexError> {
        Self::compile_with(pattern, true)
    }

    fn compile_with(pattern: &str, allow_fast: bool) -> Result<Self, RegexError> {
        let wrapped = format!("^(?s:{pattern})$");
        let mut p = Parser {
            whole: &wrapped,
            pos: 0,
            flags: Flags::default(),
            ncap: 0,
            names: vec![None],
            group_depth: 0,
        };
        let node = p.parse_alternation()?;
        if p.pos < wrapped.len() {
            // The only thing that stops a top-level alternation early is a stray ')'.
            return Err(err(ERR_UNEXPECTED_PAREN, wrapped.as_str()));
        }
        if depth(&node) > MAX_HEIGHT {
            return Err(err(ERR_NESTING_DEPTH, wrapped.as_str()));
        }
        let names: Box<[Option<Box<str>>]> = p
            .names
            .into_iter()
            .map(|n| n.map(String::into_boxed_str))
            .collect();
        let fast = if allow_fast {
            fast_engine(&node, names.len())
        } else {
            None
        };
        let engine = match fast {
            Some(e) => e,
            None => {
                let build = |ascii: bool| {
                    let config = meta::Config::new()
                        .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                        .onepass_size_limit(Some(NFA_SIZE_LIMIT));
                    meta::Regex::builder()
                        .configure(config)
                        .build_from_hir(&to_hir(&node, ascii))
                        .map_err(|e| err(ERR_TOO_LARGE, format!("{wrapped} ({e})")))
                };
                Engine::Meta {
                    full: build(false)?,
                    ascii: build(true)?,
                }
            }
        };
        Ok(GoRegex {
            source: pattern.into(),
            engine,
            names,
        })
    }

    /// The pattern as the user wrote it (without the anchoring wrapper).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Number of groups including group 0.
    pub fn group_len(&self) -> usize {
        self.names.len()
    }

    /// Indices of the groups named `name`, in order (Go allows duplicates; expansion uses the
    /// first that participated).
    pub fn groups_named(&self, name: &str) -> Vec<usize> {
        self.names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.as_deref() == Some(name))
            .map(|(i, _)| i)
            .collect()
    }

    /// True when the whole input matches (the pattern is anchored).
    pub fn is_match(&self, hay: &str) -> bool {
        match &self.engine {
            Engine::Exact(lit) => **lit == *hay,
            Engine::All { .. } => true,
            Engine::Split(sp) => sp.find(hay).is_some(),
            Engine::Meta { full, ascii } => {
                if hay.is_ascii() {
                    ascii.is_match(hay)
                } else {
                    full.is_match(hay)
                }
            }
        }
    }

    /// Finds the leftmost-first match in `hay[from..]` (anchors still refer to the whole
    /// `hay`, as in Go) and records the first `groups` groups in `caps`. Returns false on no
    /// match.
    pub fn captures_at(&self, hay: &str, from: usize, groups: usize, caps: &mut Captures) -> bool {
        let groups = groups.clamp(1, self.names.len());
        caps.reset(groups);
        match &self.engine {
            Engine::Exact(lit) => {
                if from == 0 && **lit == *hay {
                    caps.set(0, 0, hay.len());
                    true
                } else {
                    // An exact pattern is anchored at the text start; no later match exists.
                    false
                }
            }
            Engine::All { capture_all } => {
                if from > 0 {
                    // `^` fails anywhere but at 0.
                    return false;
                }
                caps.set(0, 0, hay.len());
                if *capture_all {
                    caps.set(1, 0, hay.len());
                }
                true
            }
            Engine::Split(sp) => {
                if from > 0 {
                    // `^` fails anywhere but at 0.
                    return false;
                }
                let Some(q) = sp.find(hay) else {
                    return false;
                };
                caps.set(0, 0, hay.len());
                if let Some(g) = sp.first.group {
                    caps.set(g, 0, q);
                }
                if let Some(g) = sp.second.group {
                    caps.set(g, q + sp.literal.len(), hay.len());
                }
                true
            }
            Engine::Meta { full, ascii } => {
                let re = if hay.is_ascii() { ascii } else { full };
                let input = Input::new(hay).range(from..);
                re.search_slots(&input, &mut caps.slots).is_some()
            }
        }
    }
}

/// Recognises `^(?s:LITERAL)$` and `^(?s:(.*))$` / `^(?s:.*)$` shapes (only when the wrapper's
/// group is intact, i.e. no unbalanced-parenthesis quirk).
fn fast_engine(node: &Node, groups: usize) -> Option<Engine> {
    let Node::Concat(items) = node else {
        return None;
    };
    let [Node::Look(Look::Start), inner @ .., Node::Look(Look::End)] = items.as_slice() else {
        return None;
    };
    let inner: Vec<&Node> = match inner {
        [Node::Concat(v)] => v.iter().collect(),
        v => v.iter().collect(),
    };
    // A literal: every item a plain character.
    let mut lit = String::new();
    if inner.iter().all(|n| match n {
        Node::Literal(c) => {
            lit.push(*c);
            true
        }
        Node::Empty => true,
        _ => false,
    }) {
        return (groups == 1).then(|| Engine::Exact(lit.into_boxed_str()));
    }
    let any_star = |n: &Node| matches!(n, Node::Repeat { min: 0, max: None, sub, .. } if matches!(**sub, Node::AnyChar));
    match inner.as_slice() {
        [n] if any_star(n) && groups == 1 => return Some(Engine::All { capture_all: false }),
        [Node::Capture { index: 1, sub }] if any_star(sub) && groups == 2 => {
            return Some(Engine::All { capture_all: true });
        }
        _ => {}
    }
    split_engine(&inner, groups)
}

/// A `Part` from `C{min,}` or `(C{min,})`.
fn split_part(node: &Node) -> Option<Part> {
    let (group, rep) = match node {
        Node::Capture { index, sub } => (Some(*index as usize), &**sub),
        n => (None, n),
    };
    let Node::Repeat {
        min,
        max: None,
        greedy,
        sub,
    } = rep
    else {
        return None;
    };
    let class = match &**sub {
        Node::AnyChar => ClassUnicode::new([ClassUnicodeRange::new('\0', char::MAX)]),
        Node::AnyCharNotNl => ClassUnicode::new([
            ClassUnicodeRange::new('\0', '\x09'),
            ClassUnicodeRange::new('\x0b', char::MAX),
        ]),
        Node::Class(c) => c.clone(),
        _ => return None,
    };
    Some(Part {
        set: CharSet::new(class),
        min: *min,
        greedy: *greedy,
        group,
    })
}

/// Recognises `P1 LITERAL P2` (see [`Split`]); the groups must be exactly P1's and P2's.
fn split_engine(inner: &[&Node], groups: usize) -> Option<Engine> {
    let [first, middle @ .., second] = inner else {
        return None;
    };
    let mut literal = String::new();
    for n in middle {
        let Node::Literal(c) = n else {
            return None;
        };
        literal.push(*c);
    }
    if literal.is_empty() {
        return None;
    }
    let first = split_part(first)?;
    let second = split_part(second)?;
    let expected: Vec<usize> = (1..groups).collect();
    let found: Vec<usize> = [first.group, second.group].into_iter().flatten().collect();
    if found != expected {
        return None;
    }
    Some(Engine::Split(Box::new(Split {
        first,
        literal: literal.into_boxed_str(),
        second,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(p: &str) -> Result<GoRegex, String> {
        GoRegex::new(p).map_err(|e| e.to_string())
    }

    fn matches(p: &str, s: &str) -> bool {
        compile(p)
            .unwrap_or_else(|e| panic!("{p:?}: {e}"))
            .is_match(s)
    }

    /// Group 1 of the match of `p` on `s`.
    fn group1(p: &str, s: &str) -> Option<String> {
        let re = compile(p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        let mut caps = Captures::default();
        if !re.captures_at(s, 0, 2, &mut caps) {
            return None;
        }
        caps.get(1).map(|(a, b)| s[a..b].to_owned())
    }

    #[test]
    fn go_semantics_that_differ_from_rust_syntax() {
        // (pattern, input, Go's answer). Each row is a place where handing the pattern to the
        // Rust parser would have answered differently (or failed to compile).
        let cases: &[(&str, &str, bool)] = &[
            // \d \w \s are ASCII in Go.
            (r"\d+", "123", true),
            (r"\d+", "١٢٣", false),
            (r"\w+", "é", false),
            (r"\w+", "a_Z9", true),
            (r"\s", "\u{b}", false), // \v is not in Go's \s
            (r"\s", "\t", true),
            (r"[[:space:]]", "\u{b}", true), // but it is in [:space:]
            (r"\D", "٣", true),
            (r"\W", "é", true),
            // \b is an ASCII word boundary.
            (r".*\bb", "éb", true),
            (r"a\b.*", "aé", true),
            // \Q…\E and octal escapes.
            (r"\Qa.b\E", "a.b", true),
            (r"\Qa.b\E", "axb", false),
            (r"\101", "A", true),
            (r"\0", "\0", true),
            (r"\08", "\u{0}8", true),
            (r"\x41\x{1F600}", "A😀", true),
            // Class syntax: no set operations, '[' and '&' and '~' are plain members.
            (r"[a-z&&[^c]]", "c]", true),
            (r"[a-z&&[^c]]", "&]", true),
            (r"[a-z--c]", "-", true),
            (r"[a~~b]", "~", true),
            (r"[[a]]", "a]", true),
            (r"[[a]]", "a", false),
            (r"[]a]", "]", true),
            (r"[^]a]", "b", true),
            (r"[a-]", "-", true),
            (r"[a-c-e]", "-", true),
            (r"[a-c-e]", "d", false),
            // '{' that is not a repeat is a literal.
            (r"a{", "a{", true),
            (r"a{,5}", "a{,5}", true),
            (r"a{x}", "a{x}", true),
            (r"a{01}", "a{01}", true),
            (r"a{2}", "aa", true),
            (r"a{2,}", "aaaa", true),
            (r"a{1,2}", "aaa", false),
            // (?s) is on by default through the wrapper; (?-s) turns it off.
            (r".*", "a\nb", true),
            (r"(?-s).*", "a\nb", false),
            // $ is end of text (no trailing-newline allowance), (?m) makes it per line.
            (r"a$", "a", true),
            (r"(?m)a$\n.*", "a\nb", true),
            (r"(?m:^b)", "b", true),
            // Case folding: Unicode simple folding, fold-then-negate.
            (r"(?i)k", "K", true), // Kelvin sign
            (r"(?i)s", "ſ", true),
            (r"(?i)[^k]", "K", false),
            (r"(?i)[k]", "K", true),
            (r"(?i)\w", "K", true),
            (r"(?i)\W", "K", false),
            (r"(?i)[[:upper:]]", "a", true),
            (r"(?i)\p{Lu}", "a", true),
            (r"(?i)\P{Lu}", "a", false),
            // Flags scope: to the end of the enclosing group, across '|'.
            (r"(?i)a|b", "B", true),
            (r"(?:(?i)a)b", "AB", false),
            (r"(?i:a)b", "Ab", true),
            (r"(?)a", "a", true),
            // Unicode classes: Go names only, Go's C excludes unassigned code points.
            (r"\pL+", "héllo", true),
            (r"\p{Greek}+", "αβγ", true),
            (r"\p{^Greek}", "a", true),
            (r"\PL", "1", true),
            (r"\pC", "\u{378}", false), // unassigned
            (r"\pC", "\u{7}", true),
            (r"\p{Any}", "\n", true),
            (r"[\p{Nd}x]+", "x٣", true),
            // Group names: Go allows a leading digit and duplicates.
            (r"(?P<1x>a)", "a", true),
            (r"(?P<n>a)(?P<n>b)", "ab", true),
            (r"(?<n>a)", "a", true),
            // Repetition of an assertion and a repeat after a flag group.
            (r"^*a", "a", true),
            (r"a(?i)*", "aaa", true),
            (r"a*(?i)*", "aaa", true),
            // The unbalanced-parenthesis quirk.
            (r"api)|(web", "api-gateway", true),
            (r"api)|(web", "my-web", true),
            (r"api)|(web", "x", false),
            // Surrogate escapes never match.
            (r"\x{D800}|a", "a", true),
            (r"[\x{D7FF}-\x{E000}]", "\u{E000}", true),
            // Empty regex matches only the empty string.
            ("", "", true),
            ("", "a", false),
        ];
        for (p, s, want) in cases {
            assert_eq!(matches(p, s), *want, "pattern {p:?} on {s:?}");
        }
    }

    #[test]
    fn errors_like_go() {
        // (pattern, Go's error text, wrapped pattern as Go quotes it)
        let cases: &[(&str, &str)] = &[
            ("(", "error parsing regexp: missing closing ): `^(?s:()$`"),
            ("a)", "error parsing regexp: unexpected ): `^(?s:a))$`"),
            ("[a", "error parsing regexp: missing closing ]: `[a)$`"),
            (
                "*a",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "a|*",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "(*)",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "a**",
                "error parsing regexp: invalid nested repetition operator: `**`",
            ),
            (
                "a*+",
                "error parsing regexp: invalid nested repetition operator: `*+`",
            ),
            (
                "a+?*",
                "error parsing regexp: invalid nested repetition operator: `+?*`",
            ),
            (
                "a{2}{3}",
                "error parsing regexp: invalid nested repetition operator: `{2}{3}`",
            ),
            (
                "a{1001}",
                "error parsing regexp: invalid repeat count: `{1001}`",
            ),
            (
                "a{2,1}",
                "error parsing regexp: invalid repeat count: `{2,1}`",
            ),
            (
                "(a{100}){100}",
                "error parsing regexp: invalid repeat count: `{100}`",
            ),
            (
                "a{100000000}",
                "error parsing regexp: invalid repeat count: `{100000000}`",
            ),
            (
                r"\Z",
                "error parsing regexp: invalid escape sequence: `\\Z`",
            ),
            (
                r"\C",
                "error parsing regexp: invalid escape sequence: `\\C`",
            ),
            (
                r"(a)\1",
                "error parsing regexp: invalid escape sequence: `\\1`",
            ),
            (
                r"\8",
                "error parsing regexp: invalid escape sequence: `\\8`",
            ),
            (
                r"\é",
                "error parsing regexp: invalid escape sequence: `\\é`",
            ),
            (
                r"\xZZ",
                "error parsing regexp: invalid escape sequence: `\\xZZ`",
            ),
            (
                r"\x{}",
                "error parsing regexp: invalid escape sequence: `\\x{}`",
            ),
            (
                r"\x{110000}",
                "error parsing regexp: invalid escape sequence: `\\x{110000`",
            ),
            (
                r"[\b]",
                "error parsing regexp: invalid escape sequence: `\\b`",
            ),
            (
                r"(?=a)",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
            ),
            (
                r"(?!a)",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
            ),
            (
                r"(?<=a)",
                "error parsing regexp: invalid named capture: `(?<=a))$`",
            ),
            (
                r"(?<!a)",
                "error parsing regexp: invalid named capture: `(?<!a))$`",
            ),
            (
                r"(?P=n)",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?P`",
            ),
            (
                r"(?P<n",
                "error parsing regexp: invalid named capture: `(?P<n)$`",
            ),
            (
                r"(?P<a-b>x)",
                "error parsing regexp: invalid named capture: `(?P<a-b>`",
            ),
            (
                r"(?x)a",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?x`",
            ),
            (
                r"(?-)a",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?-)`",
            ),
            (
                r"(?i-)a",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`",
            ),
            (
                r"(?i--s)a",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?i--`",
            ),
            (
                r"[z-a]",
                "error parsing regexp: invalid character class range: `z-a`",
            ),
            (
                r"[[:foo:]]",
                "error parsing regexp: invalid character class range: `[:foo:]`",
            ),
            (
                r"\p{Foo}",
                "error parsing regexp: invalid character class range: `\\p{Foo}`",
            ),
            (
                r"\pX",
                "error parsing regexp: invalid character class range: `\\pX`",
            ),
            (
                r"\p{L",
                "error parsing regexp: invalid character class range: `\\p{L)$`",
            ),
            (
                r"a\",
                "error parsing regexp: missing closing ): `^(?s:a\\)$`",
            ),
            (
                r"\Qa.b",
                "error parsing regexp: missing closing ): `^(?s:\\Qa.b)$`",
            ),
            (
                r"\p",
                "error parsing regexp: invalid character class range: `\\p)`",
            ),
            (
                r"[\p",
                "error parsing regexp: invalid character class range: `\\p)`",
            ),
            (
                r"(?P<>a)",
                "error parsing regexp: invalid named capture: `(?P<>`",
            ),
            (
                r"(?i)(?-i)*",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                r"a++",
                "error parsing regexp: invalid nested repetition operator: `++`",
            ),
        ];
        for (p, want) in cases {
            match compile(p) {
                Ok(_) => panic!("{p:?} compiled, Go says {want}"),
                Err(got) => assert_eq!(&got, want, "pattern {p:?}"),
            }
        }
    }

    #[test]
    fn newer_go_unicode_names_are_refused_with_a_reason() {
        for p in [
            r"\p{Letter}",
            r"\p{greek}",
            r"\p{Cn}",
            r"\p{LC}",
            r"\p{ASCII}",
        ] {
            let e = compile(p).unwrap_err();
            assert!(e.contains("unsupported by scraper"), "{p}: {e}");
        }
    }

    #[test]
    fn every_go_unicode_name_is_known_to_the_rust_tables() {
        for name in GO_CATEGORIES.iter().chain(GO_SCRIPTS) {
            assert!(
                unicode_class(name).is_ok(),
                "Go's \\p{{{name}}} has no regex-syntax table"
            );
        }
        // Spot checks that names resolve to the right table.
        assert!(matches(r"\p{Han}", "中"));
        assert!(matches(r"\p{Common}", "1"));
        assert!(matches(r"\p{Inherited}", "\u{300}"));
        assert!(matches(r"\p{Lt}", "ǅ"));
        assert!(!matches(r"\p{Latin}", "α"));
    }

    #[test]
    fn submatches_are_leftmost_first() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (r"(.+):(\d+)", "10.0.0.1:8080", Some("10.0.0.1")),
            (
                r"(.+?)(?::\d+)?;(\d+)",
                "10.0.0.5:8080;6060",
                Some("10.0.0.5"),
            ),
            (r"(a|ab)(c|bcd)(d*)", "abcd", Some("a")),
            (r"(a*)+", "b", None), // no match at all: anchored
            (r"(a*)*", "", Some("")),
            (r"(a)|b", "b", None), // group 1 did not participate
            (r"(.*)", "x\ny", Some("x\ny")),
            (r"(.*)", "", Some("")),
        ];
        for (p, s, want) in cases {
            assert_eq!(group1(p, s).as_deref(), *want, "{p:?} on {s:?}");
        }
    }

    #[test]
    fn fast_paths_agree_with_the_engine() {
        // Literal and match-all shapes take a shortcut; the general engine must agree.
        for (p, s) in [
            ("abc", "abc"),
            ("abc", "abcd"),
            ("(.*)", "any\nthing"),
            (".*", ""),
        ] {
            let fast = compile(p).unwrap();
            assert!(!matches!(fast.engine, Engine::Meta { .. }), "{p} not fast");
            let slow = GoRegex::compile_with(p, false).unwrap();
            assert!(matches!(slow.engine, Engine::Meta { .. }));
            assert_eq!(fast.is_match(s), slow.is_match(s), "{p:?} on {s:?}");
        }
        // (?i) literals and quirk shapes are not literal fast paths.
        assert!(matches!(
            compile("(?i)abc").unwrap().engine,
            Engine::Meta { .. }
        ));
        assert!(matches!(
            compile("a)|(b").unwrap().engine,
            Engine::Meta { .. }
        ));
    }

    #[test]
    fn ascii_engine_agrees_with_full_engine_on_ascii_input() {
        let patterns = [
            r"(.+):(\d+)",
            "(.*)@(.*)",
            r"(?i)K|é(x)",
            r"[^a]+",
            r"(?-s)(.*)",
            r"\pL+(\d)?",
            r"(?i)[[:upper:]]+",
            r"\W+",
            "api)|(web",
            r"(.)é|(.)",
            r"[\x00-\x{10FFFF}]+",
        ];
        let inputs = [
            "10.0.0.1:8080",
            "a@b",
            "K",
            "k",
            "bbb",
            "x\ny",
            "abc1",
            "",
            "~!",
            "my-web",
        ];
        for p in patterns {
            let re = GoRegex::compile_with(p, false).unwrap();
            let Engine::Meta { full, ascii } = &re.engine else {
                panic!("{p} should use the general engine");
            };
            for s in inputs {
                assert_eq!(full.is_match(s), ascii.is_match(s), "{p} on {s:?}");
                let mut a = vec![None; 2 * re.group_len()];
                let mut b = vec![None; 2 * re.group_len()];
                let ma = full.search_slots(&Input::new(s), &mut a);
                let mb = ascii.search_slots(&Input::new(s), &mut b);
                assert_eq!(ma, mb, "{p} on {s:?}");
                // Slots are unspecified after a failed search.
                if ma.is_some() {
                    assert_eq!(a, b, "{p} on {s:?}");
                }
            }
        }
    }

    #[test]
    fn split_engine_agrees_with_the_automaton() {
        let patterns = [
            r"(.+):(\d+)",
            r"(.+)@(\d+)",
            "(.*)@(.*)",
            "(.*);(.*)",
            r"(.+?):(\d+)",
            r"(.*?)ab(.*)",
            r"([a-z]*)--(.+)",
            r"(?-s)(.*):(.*)",
            r"\w+:(\d*)",
            r"(.*):\d+",
            "(.+)é(.+?)",
            "(.*)aa(.*)",
            "(.{2,})a(.*)",
        ];
        // Every string up to length 5 over a small alphabet, plus some longer ones.
        let alphabet = ['a', 'b', ':', '1', '@', ';', '-', 'é', '\n'];
        let mut inputs: Vec<String> = vec![String::new()];
        let mut frontier = inputs.clone();
        for _ in 0..5 {
            let mut next = Vec::new();
            for s in &frontier {
                for c in alphabet {
                    next.push(format!("{s}{c}"));
                }
            }
            inputs.extend(next.iter().cloned());
            frontier = next;
        }
        inputs.extend(
            ["10.0.0.1:8080", "[fd00::2]:1777", "a@b@1", "x--y--z", "aaa"].map(String::from),
        );
        for p in patterns {
            let fast = compile(p).unwrap();
            assert!(
                matches!(fast.engine, Engine::Split(_)),
                "{p} should use the split engine"
            );
            let slow = GoRegex::compile_with(p, false).unwrap();
            let n = fast.group_len();
            for s in &inputs {
                let (mut a, mut b) = (Captures::default(), Captures::default());
                let ma = fast.captures_at(s, 0, n, &mut a);
                let mb = slow.captures_at(s, 0, n, &mut b);
                assert_eq!(ma, mb, "{p} on {s:?}");
                if ma {
                    for g in 0..n {
                        assert_eq!(a.get(g), b.get(g), "{p} group {g} on {s:?}");
                    }
                }
            }
        }
        // Shapes that must not take the split path.
        for p in [
            "(?i)(.*)a(.*)",
            "(.*)(.*)",
            "a)|(b:(.*)",
            "(.*):(.*)$x",
            "(.{2,5})x(.*)",
        ] {
            let re = compile(p).unwrap();
            assert!(
                !matches!(re.engine, Engine::Split(_)),
                "{p} must not use the split engine"
            );
        }
    }

    #[test]
    fn group_names() {
        let re = compile(r"(?P<a>x)(y)(?<a>z)").unwrap();
        assert_eq!(re.group_len(), 4);
        assert_eq!(re.groups_named("a"), vec![1, 3]);
        assert!(re.groups_named("b").is_empty());
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowing() {
        let deep = "(".repeat(2000) + &")".repeat(2000);
        let e = compile(&deep).unwrap_err();
        assert!(e.contains("nests too deeply"), "{e}");
        let ok = "(".repeat(100) + "a" + &")".repeat(100);
        assert!(matches(&ok, "a"));
    }
}
