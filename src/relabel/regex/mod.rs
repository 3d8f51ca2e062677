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
//!
//! The front end is split by concept: `parse` (tree shape, groups, flags, repetition),
//! `class` (character classes and escapes), `unicode` (Go's `\p` names), `hir` (lowering
//! to the engine), `fast` (automaton-free engines for common shapes) and `error` (Go's
//! error texts). This file compiles a pattern and runs whichever engine it got.

mod class;
mod error;
mod fast;
mod hir;
mod parse;
mod unicode;

use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::{Input, meta};
use regex_syntax::hir::Look;

pub use error::RegexError;
pub(crate) use unicode::category_class;

use error::{ERR_TOO_LARGE, err};
use fast::{Prefix, Split, fast_engine};
use hir::to_hir;

/// NFA size limit handed to the Rust engine. Go counts a character class as one instruction
/// whereas the Rust NFA expands it into UTF-8 byte ranges, so `\pL{1000}` needs far more room
/// than the crate's 10 MiB default; patterns beyond this are rejected (see module docs).
const NFA_SIZE_LIMIT: usize = 64 << 20;

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
    /// `^(?s:LITERAL(C*))$`-shaped patterns (`__meta_kubernetes_pod_label_(.+)`, `(.+)`): a
    /// prefix test and a scan of the rest. See [`Prefix`].
    Prefix(Box<Prefix>),
    /// General patterns: the full automaton, and one specialised for ASCII haystacks.
    Meta {
        full: meta::Regex,
        ascii: meta::Regex,
    },
}

/// A compiled, anchored Go regex.
#[derive(Debug)]
pub struct GoRegex {
    source: Box<str>,
    engine: Engine,
    /// Names by group index (0 = the whole match, never named).
    names: Box<[Option<Box<str>>]>,
    /// The wrapper's `^` and `$` enclose the whole pattern (no unbalanced-parenthesis quirk),
    /// so a match always spans the whole input.
    anchored: bool,
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
        let (node, names) = parse::parse(&wrapped)?;
        let names: Box<[Option<Box<str>>]> = names
            .into_iter()
            .map(|n| n.map(String::into_boxed_str))
            .collect();
        let anchored = matches!(
            &node,
            parse::Node::Concat(items)
                if matches!(items.first(), Some(parse::Node::Look(Look::Start)))
                    && matches!(items.last(), Some(parse::Node::Look(Look::End)))
        );
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
            anchored,
        })
    }

    /// True when every match spans the whole input: Go's `ReplaceAllString` is then one
    /// expansion of the template, which `labelmap` relies on to skip the second search. False
    /// only for patterns with the unbalanced-parenthesis quirk (`a)|(b`).
    pub fn is_anchored(&self) -> bool {
        self.anchored
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
            Engine::Prefix(p) => p.is_match(hay),
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
            Engine::Prefix(p) => {
                // `^` fails anywhere but at 0.
                if from > 0 || !p.is_match(hay) {
                    return false;
                }
                caps.set(0, 0, hay.len());
                if let Some(g) = p.group() {
                    caps.set(g, p.literal.len(), hay.len());
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

#[cfg(test)]
mod tests;
