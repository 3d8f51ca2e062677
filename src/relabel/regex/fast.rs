//! Fast paths: engines for the common relabel regex shapes that need no automaton.
//!
//! Most relabel regexes are a plain literal, the default `(.*)`, `(C+)LITERAL(C+)` (split a
//! `host:port`-like value) or `LITERAL(C+)` (a prefix: `labelmap`'s
//! `__meta_kubernetes_pod_label_(.+)`, run on every label of every target). Recognising these on the parse tree and matching them directly is
//! much cheaper than running the automaton per label, and [`Split`] documents why the result
//! is exactly what Go's leftmost-first semantics give. Anything else falls back to the general
//! engine.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange, Look};

use super::Engine;
use super::parse::Node;

/// A set of characters with an ASCII lookup table (membership is checked per character of the
/// haystack in [`Split`] matching).
#[derive(Debug)]
struct CharSet {
    ascii: [bool; 128],
    class: ClassUnicode,
    /// Every character (`.` under the wrapper's `(?s)`): membership needs no look at all.
    any: bool,
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
        let any = class.ranges().first().is_some_and(|r| r.start() == '\0')
            && class.ranges().last().is_some_and(|r| r.end() == char::MAX)
            && class.ranges().windows(2).all(|w| {
                w[0].end() as u32 + 1 >= w[1].start() as u32
                    || w[0].end() == '\u{D7FF}' && w[1].start() == '\u{E000}'
            });
        CharSet { ascii, class, any }
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
pub(super) struct Part {
    set: CharSet,
    min: u32,
    greedy: bool,
    pub(super) group: Option<usize>,
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
pub(super) struct Split {
    pub(super) first: Part,
    pub(super) literal: Box<str>,
    pub(super) second: Part,
}

impl Split {
    /// Byte offset where the literal starts in the match, if `hay` matches.
    pub(super) fn find(&self, hay: &str) -> Option<usize> {
        let lit = self.literal.as_bytes();
        if hay.len() < lit.len() {
            return None;
        }
        // P1 can only cover the leading run of its characters.
        let run = if self.first.set.any {
            hay.len()
        } else {
            hay.char_indices()
                .find(|&(_, c)| !self.first.set.contains(c))
                .map_or(hay.len(), |(i, _)| i)
        };
        let last = run.min(hay.len() - lit.len());
        let ok = |q: usize| {
            hay.as_bytes()[q..].starts_with(lit)
                && count_at_least(&hay[..q], self.first.min)
                && self.all_second(&hay[q + lit.len()..])
        };
        // A one-character literal (`:`, `@`) cannot overlap itself, so its occurrences, found
        // by the library's search, are every candidate: no test at each position.
        if self.literal.chars().nth(1).is_none() {
            let at = |(q, _): (usize, &str)| (q <= last && ok(q)).then_some(q);
            return if self.first.greedy {
                hay.rmatch_indices(&*self.literal).find_map(at)
            } else {
                hay.match_indices(&*self.literal).find_map(at)
            };
        }
        if self.first.greedy {
            (0..=last).rev().find(|&q| ok(q))
        } else {
            (0..=last).find(|&q| ok(q))
        }
    }

    fn all_second(&self, rest: &str) -> bool {
        self.second.covers(rest)
    }
}

impl Part {
    /// True when `s` is all this part's characters, at least `min` of them.
    fn covers(&self, s: &str) -> bool {
        if self.set.any {
            // `.+` after a prefix (`labelmap`'s usual regex): only the count matters.
            return count_at_least(s, self.min);
        }
        if s.is_ascii() {
            // The common case (label names, most values): a table lookup per byte.
            return s.len() >= self.min as usize && s.bytes().all(|b| self.set.ascii[b as usize]);
        }
        let mut n: u32 = 0;
        for c in s.chars() {
            if !self.set.contains(c) {
                return false;
            }
            n = n.saturating_add(1);
        }
        n >= self.min
    }
}

/// `^(?s:LITERAL P)$` where P is an unbounded repetition of one character class, optionally
/// captured, and LITERAL may be empty (`(.+)`). Exact for the same reason as [`Split`], more
/// simply: the literal must sit at 0 and P must cover the rest, so there is one way to match.
#[derive(Debug)]
pub(super) struct Prefix {
    pub(super) literal: Box<str>,
    pub(super) part: Part,
}

impl Prefix {
    pub(super) fn is_match(&self, hay: &str) -> bool {
        hay.strip_prefix(&*self.literal)
            .is_some_and(|rest| self.part.covers(rest))
    }

    /// The capturing group the part after the literal belongs to, if any: on a match it
    /// spans the whole input after the literal.
    pub(super) fn group(&self) -> Option<usize> {
        self.part.group
    }
}

/// True when `s` has at least `min` characters.
fn count_at_least(s: &str, min: u32) -> bool {
    min == 0 || s.chars().take(min as usize).count() >= min as usize
}

/// Recognises `^(?s:LITERAL)$` and `^(?s:(.*))$` / `^(?s:.*)$` shapes (only when the wrapper's
/// group is intact, i.e. no unbalanced-parenthesis quirk).
pub(super) fn fast_engine(node: &Node, groups: usize) -> Option<Engine> {
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
    split_engine(&inner, groups).or_else(|| prefix_engine(&inner, groups))
}

/// Recognises `LITERAL P` (see [`Prefix`]); the only group, if any, must be P's.
fn prefix_engine(inner: &[&Node], groups: usize) -> Option<Engine> {
    let [middle @ .., last] = inner else {
        return None;
    };
    let mut literal = String::new();
    for n in middle {
        match n {
            Node::Literal(c) => literal.push(*c),
            Node::Empty => {}
            _ => return None,
        }
    }
    let part = split_part(last)?;
    let expected: Vec<usize> = (1..groups).collect();
    let found: Vec<usize> = part.group.into_iter().collect();
    if found != expected {
        return None;
    }
    Some(Engine::Prefix(Box::new(Prefix {
        literal: literal.into_boxed_str(),
        part,
    })))
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
