//! The canonical formatter, byte-compatible with Grafana Alloy's `alloy fmt`.
//!
//! Alloy's output is defined by its implementation rather than by a written spec: a walker emits
//! tokens and abstract whitespace, comments are spliced in by comparing source offsets (some of
//! them estimated rather than exact), and the result goes through an elastic-tabstop column
//! aligner (Go's `text/tabwriter`) and a trailing-blank trimmer. Every one of those stages shapes
//! real output (the alignment of `=` and of trailing comments, where a comment lands, how many
//! blank lines survive), so this module reproduces the same three stages rather than
//! approximating their combined effect with ad-hoc rules.
//!
//! Deliberate differences from Alloy, all chosen so that formatting never changes meaning and is
//! idempotent in a single pass:
//!
//! * String literals and quoted object keys are printed exactly as written. Alloy feeds literal
//!   text to the aligner unprotected, so a tab inside a string becomes padding spaces and
//!   trailing blanks on the lines of a multi-line raw string are trimmed; it also re-quotes
//!   object keys with Go's `%q` without unescaping them first, which doubles backslashes.
//! * Whether a statement or object field "spans several lines" (which ends a run of aligned `=`)
//!   is decided on the printed form, not on the source. Alloy uses the source, so an empty
//!   `{`/`}` written over two lines collapses to `{}` and only gets aligned on a second run.
//! * A call with no arguments whose `)` sits on a later line prints as `f()`; Alloy emits a
//!   stray comma there (`f(,` newline `)`), which does not parse.
//! * A block with an empty label (`b "" {}`) keeps it; Alloy drops empty labels.
//!
//! # Layout
//!
//! Stage 1 is the `Printer`: `walk` decides which tokens and whitespace each construct
//! produces (with `breaks` judging whether a construct prints over several lines), `tokens`
//! buffers the whitespace and writes the output, and `comments` splices the comments in. Stage 2
//! is `align`, stage 3 `trim`.

mod align;
mod breaks;
mod comments;
mod tokens;
mod trim;
mod walk;

use super::ast::{Comment, File};
use align::align_columns;
use comments::group_comments;
use tokens::{Last, WS_CAPACITY, Ws};
use trim::trim_blanks;

/// Formats a parsed file. `src` must be the text `file` was parsed from: line numbers and blank
/// lines are read from it through the spans.
///
/// The result ends with exactly one newline, like `alloy fmt`.
pub fn format_file(file: &File, src: &str) -> String {
    let mut printer = Printer::new(src, &file.comments);
    printer.stmts(&file.body.stmts);
    printer.finish();
    let aligned = align_columns(&printer.out);
    let mut text = trim_blanks(&aligned);
    text.push('\n');
    text
}

/// A position in source space. Only the offset and the line matter to the layout decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pos {
    offset: usize,
    line: usize,
}

impl Pos {
    /// Sorts after every real position, so that flushing at it emits every remaining comment.
    const EOF: Pos = Pos {
        offset: usize::MAX,
        line: usize::MAX,
    };
}

struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(src: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based line of a byte offset.
    fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).max(1)
    }
}

/// Marks text the aligner and the trimmer must pass through untouched (the same byte Go's
/// tabwriter uses; it never occurs in UTF-8).
const ESCAPE: u8 = 0xff;

/// The state of stage 1, shared by the walker, the token output and the comment placement.
struct Printer<'a> {
    src: &'a str,
    lines: LineIndex,
    comments: &'a [Comment],
    /// Runs of comments with nothing but whitespace between them and no blank line; a run is
    /// placed as a unit, keyed on its first comment.
    groups: Vec<std::ops::Range<usize>>,
    next_group: usize,

    out: Vec<u8>,
    indent: usize,
    last_tok: Last,
    ws: Vec<Ws>,
    /// Source position of the next token to be written. Tokens the AST has no position for (`.`,
    /// `,`, `=`, call parentheses) get the end of the previous token, as in Alloy; comment
    /// placement depends on that estimate.
    pos: Pos,
    /// Source position just after the last token or comment written.
    last: Option<Pos>,
    /// Output column (1-based); indentation is written when text starts at column 1.
    out_col: usize,
}

impl<'a> Printer<'a> {
    fn new(src: &'a str, comments: &'a [Comment]) -> Self {
        let lines = LineIndex::new(src);
        let groups = group_comments(src, &lines, comments);
        Printer {
            src,
            lines,
            comments,
            groups,
            next_group: 0,
            out: Vec::with_capacity(src.len() + src.len() / 4),
            indent: 0,
            last_tok: Last::Space,
            ws: Vec::with_capacity(WS_CAPACITY),
            pos: Pos { offset: 0, line: 1 },
            last: None,
            out_col: 1,
        }
    }

    fn pos_at(&self, offset: usize) -> Pos {
        Pos {
            offset,
            line: self.lines.line(offset),
        }
    }

    fn line(&self, offset: usize) -> usize {
        self.lines.line(offset)
    }

    /// Writes every comment not yet placed.
    fn finish(&mut self) {
        self.flush(Pos::EOF, true);
    }
}

#[cfg(test)]
mod tests;
