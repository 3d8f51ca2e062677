//! The parse tree and the parser's structure: alternation, concatenation, groups, flags and
//! repetition, following Go's `regexp/syntax` (Perl flags) decision for decision.
//!
//! Kept apart from character classes and escapes ([`super::class`]) because this half decides
//! *shape* (what repeats what, which flags are live, group numbering, nesting limits), which is
//! where Go's quirks (`a(?i)*`, `(?)`, stacked repeats) live. The tree it builds already carries
//! Go's meaning, so later stages never consult flags again.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange, Look};

use super::class::{fold, parse_escape};
use super::error::{
    ERR_INVALID_ESCAPE, ERR_INVALID_NAMED_CAPTURE, ERR_INVALID_PERL_OP, ERR_INVALID_REPEAT_OP,
    ERR_INVALID_REPEAT_SIZE, ERR_MISSING_PAREN, ERR_MISSING_REPEAT_ARGUMENT, ERR_NESTING_DEPTH,
    ERR_UNEXPECTED_PAREN, PResult, err,
};

/// Go's limit on `{n,m}` counts (and on their products when nested).
const MAX_REPEAT: u32 = 1000;
/// Go's `maxHeight`: deeper parse trees fail with "expression nests too deeply".
const MAX_HEIGHT: usize = 1000;

/// Parser flags, as in Go's `regexp/syntax` (`OneLine` is stored inverted as `multi_line`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct Flags {
    pub(super) fold_case: bool,
    dot_nl: bool,
    multi_line: bool,
    non_greedy: bool,
}

/// Our parse tree: already carries Go's meaning (classes folded/negated, looks resolved).
#[derive(Debug, Clone)]
pub(super) enum Node {
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

pub(super) struct Parser<'a> {
    whole: &'a str,
    pub(super) pos: usize,
    pub(super) flags: Flags,
    ncap: u32,
    /// `names[i]` is the name of group `i` (`names[0]` is the whole match, unnamed).
    names: Vec<Option<String>>,
    /// Open groups, to fail like Go on absurd nesting before recursion gets deep.
    group_depth: usize,
}

/// Parses the wrapped pattern (`^(?s:` + R + `)$`) into our tree and the group-name table
/// (`names[0]` is the whole match, unnamed).
pub(super) fn parse(wrapped: &str) -> PResult<(Node, Vec<Option<String>>)> {
    let mut p = Parser {
        whole: wrapped,
        pos: 0,
        flags: Flags::default(),
        ncap: 0,
        names: vec![None],
        group_depth: 0,
    };
    let node = p.parse_alternation()?;
    if p.pos < wrapped.len() {
        // The only thing that stops a top-level alternation early is a stray ')'.
        return Err(err(ERR_UNEXPECTED_PAREN, wrapped));
    }
    if depth(&node) > MAX_HEIGHT {
        return Err(err(ERR_NESTING_DEPTH, wrapped));
    }
    Ok((node, p.names))
}

impl<'a> Parser<'a> {
    pub(super) fn rest(&self) -> &'a str {
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

fn depth(node: &Node) -> usize {
    match node {
        Node::Capture { sub, .. } | Node::Repeat { sub, .. } => 1 + depth(sub),
        Node::Concat(v) | Node::Alternate(v) => 1 + v.iter().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}
