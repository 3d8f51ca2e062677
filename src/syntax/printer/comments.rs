//! Comment placement. The AST does not hold comments; like Alloy, the printer splices them in by
//! comparing their source offsets with the (sometimes estimated) position of the next token,
//! and rebuilds the whitespace around them from the source's line breaks.

use super::tokens::{Protect, Ws};
use super::{LineIndex, Pos, Printer};
use crate::syntax::ast::Comment;

/// At most this many line breaks in a row, i.e. at most one blank line.
const MAX_NEWLINES: usize = 2;

impl Printer<'_> {
    fn comment_before(&self, next: Pos) -> bool {
        self.groups
            .get(self.next_group)
            .and_then(|g| self.comments.get(g.start))
            .is_some_and(|c| (c.span.start as usize) <= next.offset)
    }

    pub(super) fn flush(&mut self, next: Pos, eof: bool) {
        if self.comment_before(next) {
            self.inject_comments(next, eof);
        } else if !eof {
            self.write_ws(self.ws.len());
        }
    }

    fn inject_comments(&mut self, next: Pos, eof: bool) {
        let mut last_comment = None;
        while self.comment_before(next) {
            let group = self.groups[self.next_group].clone();
            for idx in group {
                self.comment_prefix(next, idx);
                self.write_comment(idx);
                last_comment = Some(idx);
            }
            self.next_group += 1;
        }
        if let Some(idx) = last_comment {
            self.comment_suffix(next, eof, idx);
        }
    }

    /// Whitespace before a comment: a separator when it trails code on the same line, otherwise
    /// the pending indentation changes and as many line breaks as the source had (at most two).
    fn comment_prefix(&mut self, next: Pos, idx: usize) {
        if self.out.is_empty() {
            return;
        }
        let cline = self.line(self.comments[idx].span.start as usize);
        if self.last.is_some_and(|l| l.line == cline) {
            // A comment between two tokens on one line must be a block comment; a tab there
            // would look odd, so only trailing comments get the aligning tab.
            let sep = if cline == next.line { b' ' } else { b'\t' };
            self.write_byte(sep, 1);
            return;
        }
        // Apply the indentation changes queued ahead of the first real whitespace entry, and drop
        // that entry: the comment brings its own line breaks. Alloy stops at the first entry, so
        // an indent queued after it is applied only after the comment.
        let mut count = 0;
        for i in 0..self.ws.len() {
            match self.ws[i] {
                Ws::Indent | Ws::Unindent => continue,
                Ws::Blank | Ws::VTab | Ws::Newline | Ws::Formfeed => self.ws[i] = Ws::Ignore,
                Ws::Ignore => {}
            }
            count = i;
            break;
        }
        self.write_ws(count);
        if let Some(last) = self.last
            && cline > last.line
        {
            self.write_byte(b'\x0c', (cline - last.line).min(MAX_NEWLINES));
        }
    }

    fn write_comment(&mut self, idx: usize) {
        let comment = &self.comments[idx];
        let start = self.pos_at(comment.span.start as usize);
        let text = comment_text(comment);
        self.write_string(Some(start), &text, Protect::Whole);
    }

    /// Whitespace between the last comment of a run and the next token: the buffered whitespace
    /// loses its blanks and line breaks, which are replaced by the source's line breaks.
    fn comment_suffix(&mut self, next: Pos, eof: bool, last_comment: usize) {
        if eof {
            // Nothing follows, so no blank lines at the end of the file.
            return;
        }
        let comment = &self.comments[last_comment];
        let text = comment_text(comment);
        let end = comment.span.start as usize + text.len().saturating_sub(1);
        if text.starts_with("/*") && next.line == self.line(end) {
            self.write_byte(b' ', 1);
        }
        let newlines = self
            .last
            .map_or(0, |l| next.line.saturating_sub(l.line))
            .min(MAX_NEWLINES);
        let mut dropped_formfeed = false;
        for w in &mut self.ws {
            match *w {
                Ws::Blank | Ws::VTab | Ws::Newline => *w = Ws::Ignore,
                Ws::Formfeed => {
                    dropped_formfeed = true;
                    *w = Ws::Ignore;
                }
                Ws::Indent | Ws::Unindent | Ws::Ignore => {}
            }
        }
        self.write_ws(self.ws.len());
        if newlines > 0 {
            // Keep the alignment run broken if the replaced whitespace broke it.
            let ch = if dropped_formfeed { b'\x0c' } else { b'\n' };
            self.write_byte(ch, newlines);
        }
    }
}

/// Comment text as Alloy keeps it: without carriage returns, and without the line break that ends
/// a line comment.
pub(super) fn comment_text(c: &Comment) -> String {
    let text = c.text.replace('\r', "");
    if text.starts_with("//") {
        text.trim_end_matches('\n').to_string()
    } else {
        text
    }
}

/// Alloy's parser groups comments that follow each other with only whitespace in between and no
/// blank line; the placement logic works group by group.
pub(super) fn group_comments(
    src: &str,
    lines: &LineIndex,
    comments: &[Comment],
) -> Vec<std::ops::Range<usize>> {
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut prev_end: Option<(usize, usize)> = None; // (end offset, end line)
    for (i, c) in comments.iter().enumerate() {
        let start = c.span.start as usize;
        let end = (c.span.end as usize).max(start);
        let joins = prev_end.is_some_and(|(pend, pline)| {
            let between = src.get(pend..start).unwrap_or("x");
            between.bytes().all(|b| b.is_ascii_whitespace()) && lines.line(start) <= pline + 1
        });
        match groups.last_mut() {
            Some(g) if joins => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
        let text = comment_text(c);
        let end_line = lines.line(start) + text.matches('\n').count();
        prev_end = Some((end, end_line));
    }
    groups
}
