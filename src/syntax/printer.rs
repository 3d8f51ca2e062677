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

use super::ast::{Attribute, Block, Comment, Expr, ExprKind, Field, File, LiteralValue, Stmt};

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

// ---------------------------------------------------------------------------------------------
// Source positions

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

// ---------------------------------------------------------------------------------------------
// Stage 1: token stream with abstract whitespace and comment placement

/// Abstract whitespace, buffered until the next token so that comments can be slotted in front of
/// it and so that nothing is emitted after the last token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ws {
    /// A buffered entry cancelled by comment placement.
    Ignore,
    Blank,
    /// Column separator: text before it is aligned with the same column on adjacent lines.
    VTab,
    /// Line break that keeps the current alignment run going.
    Newline,
    /// Line break that ends the alignment run (and is printed as a plain newline).
    Formfeed,
    Indent,
    Unindent,
}

impl Ws {
    fn byte(self) -> Option<u8> {
        match self {
            Ws::Blank => Some(b' '),
            Ws::VTab => Some(b'\x0b'),
            Ws::Newline => Some(b'\n'),
            Ws::Formfeed => Some(b'\x0c'),
            Ws::Ignore | Ws::Indent | Ws::Unindent => None,
        }
    }
}

/// What was written last; only needed to keep `1` `.` and `/` `*` from fusing when re-scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Last {
    Space,
    Integer,
    Div,
    Other,
}

/// How text is protected from the column aligner and the trimmer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protect {
    /// Punctuation and identifiers: nothing to protect.
    None,
    /// String literals: each line is protected, the line breaks stay visible to the aligner so it
    /// lays out the surrounding lines exactly as Alloy does.
    Lines,
    /// Comments: protected as a whole, as Alloy does.
    Whole,
}

/// Marks text the aligner and the trimmer must pass through untouched (the same byte Go's
/// tabwriter uses; it never occurs in UTF-8).
const ESCAPE: u8 = 0xff;

/// Alloy's whitespace buffer has a fixed capacity and is force-flushed when full.
const WS_CAPACITY: usize = 16;

/// At most this many line breaks in a row, i.e. at most one blank line.
const MAX_NEWLINES: usize = 2;

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

    // --- the token interface used by the walker ---

    fn ws(&mut self, w: Ws) {
        if w == Ws::Ignore {
            return;
        }
        if self.ws.len() == WS_CAPACITY {
            self.write_ws(WS_CAPACITY);
        }
        self.ws.push(w);
        self.last_tok = Last::Space;
    }

    /// Pins the position of the next token to a real source offset.
    fn at(&mut self, offset: usize) {
        self.pos = self.pos_at(offset);
    }

    /// Punctuation or an operator.
    fn punct(&mut self, text: &str) {
        let first = text.as_bytes().first().copied().unwrap_or(b' ');
        let fuses = matches!(
            (self.last_tok, first),
            (Last::Integer, b'.') | (Last::Div, b'*')
        );
        if fuses && !self.ws.iter().any(|w| w.byte().is_some()) {
            self.ws.push(Ws::Blank);
        }
        self.last_tok = if text == "/" { Last::Div } else { Last::Other };
        self.emit(text, Protect::None);
    }

    fn word(&mut self, text: &str, kind: Last, protect: Protect) {
        self.last_tok = kind;
        self.emit(text, protect);
    }

    fn emit(&mut self, text: &str, protect: Protect) {
        let next = self.pos;
        self.flush(next, false);
        self.write_string(Some(next), text, protect);
    }

    // --- comment placement ---

    fn comment_before(&self, next: Pos) -> bool {
        self.groups
            .get(self.next_group)
            .and_then(|g| self.comments.get(g.start))
            .is_some_and(|c| (c.span.start as usize) <= next.offset)
    }

    fn flush(&mut self, next: Pos, eof: bool) {
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

    // --- raw output ---

    fn write_ws(&mut self, n: usize) {
        let n = n.min(self.ws.len());
        for i in 0..n {
            match self.ws[i] {
                Ws::Ignore => {}
                Ws::Indent => self.indent += 1,
                Ws::Unindent => self.indent = self.indent.saturating_sub(1),
                w => {
                    if let Some(b) = w.byte() {
                        self.write_byte(b, 1);
                    }
                }
            }
        }
        self.ws.drain(..n);
    }

    fn write_indent(&mut self) {
        let depth = self.indent;
        self.out.extend(std::iter::repeat_n(b'\t', depth));
        self.pos.offset += depth;
        self.out_col += depth;
    }

    fn write_byte(&mut self, ch: u8, n: usize) {
        if self.out_col == 1 {
            self.write_indent();
        }
        self.out.extend(std::iter::repeat_n(ch, n));
        self.pos.offset += n;
        if ch == b'\n' || ch == b'\x0c' {
            self.pos.line += n;
            self.out_col = 1;
        } else {
            self.out_col += n;
        }
    }

    fn write_string(&mut self, pos: Option<Pos>, s: &str, protect: Protect) {
        if self.out_col == 1 {
            self.write_indent();
        }
        if let Some(pos) = pos {
            self.pos = pos;
        }
        match protect {
            Protect::None => self.out.extend_from_slice(s.as_bytes()),
            Protect::Whole => {
                self.out.push(ESCAPE);
                self.out.extend_from_slice(s.as_bytes());
                self.out.push(ESCAPE);
            }
            Protect::Lines => {
                for (i, line) in s.split('\n').enumerate() {
                    if i > 0 {
                        self.out.push(b'\n');
                    }
                    if !line.is_empty() {
                        self.out.push(ESCAPE);
                        self.out.extend_from_slice(line.as_bytes());
                        self.out.push(ESCAPE);
                    }
                }
            }
        }
        // Only `\n` counts: the lexer numbers source lines by it, and a form feed inside a
        // comment or raw string is protected text, not a tabwriter line break. Counting it
        // made the next line look already broken, so it was joined onto a `//` comment.
        let bytes = s.as_bytes();
        let breaks = bytes.iter().filter(|&&b| b == b'\n').count();
        self.pos.offset += bytes.len();
        if breaks > 0 {
            let last_break = bytes.iter().rposition(|&b| b == b'\n').unwrap_or(0);
            self.pos.line += breaks;
            self.out_col = bytes.len() - last_break;
        } else {
            self.out_col += bytes.len();
        }
        self.last = Some(self.pos);
    }
}

/// Comment text as Alloy keeps it: without carriage returns, and without the line break that ends
/// a line comment.
fn comment_text(c: &Comment) -> String {
    let text = c.text.replace('\r', "");
    if text.starts_with("//") {
        text.trim_end_matches('\n').to_string()
    } else {
        text
    }
}

/// Alloy's parser groups comments that follow each other with only whitespace in between and no
/// blank line; the placement logic works group by group.
fn group_comments(
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

// ---------------------------------------------------------------------------------------------
// The walker: which tokens and whitespace each construct produces

impl Printer<'_> {
    fn stmts(&mut self, stmts: &[Stmt]) {
        for (i, stmt) in stmts.iter().enumerate() {
            if i > 0 {
                // Blocks are always set apart by a blank line; other statements only keep the
                // blank line the source had.
                let blank = match stmt {
                    Stmt::Block(_) => true,
                    Stmt::Attribute(_) => {
                        let prev_end = self.line(end_offset(stmts[i - 1].span()));
                        let cur_start = self.line(stmt.span().start as usize);
                        cur_start > prev_end + 1
                    }
                };
                if blank {
                    self.ws(Ws::Formfeed);
                }
            }
            match stmt {
                Stmt::Attribute(a) => self.attribute(a),
                Stmt::Block(b) => self.block(b),
            }
            // A statement printed over several lines ends the alignment run.
            if self.stmt_breaks(stmt) {
                self.ws(Ws::Formfeed);
            } else {
                self.ws(Ws::Newline);
            }
        }
    }

    fn attribute(&mut self, a: &Attribute) {
        self.at(a.name.span.start as usize);
        self.word(&a.name.name, Last::Other, Protect::None);
        self.ws(Ws::VTab);
        self.punct("=");
        self.ws(Ws::Blank);
        self.expr(&a.value);
    }

    fn block(&mut self, b: &Block) {
        let header = b.header_span();
        self.comments_inside_name(b);
        self.at(header.start as usize);
        self.word(&b.full_name(), Last::Other, Protect::None);
        if let Some(label) = &b.label {
            self.ws(Ws::Blank);
            self.at(label.span.start as usize);
            self.word(&go_quote(&label.value), Last::Other, Protect::None);
        }
        self.ws(Ws::Blank);
        let lcurly = self.next_token(header.end as usize);
        self.at(lcurly);
        self.punct("{");
        self.ws(Ws::Indent);
        if b.body.stmts.is_empty() {
            self.ws(Ws::Blank);
        } else {
            self.ws(Ws::Formfeed);
            self.stmts(&b.body.stmts);
        }
        self.ws(Ws::Unindent);
        self.at(b.rbrace.start as usize);
        self.punct("}");
    }

    /// A dotted block name is written as one word, so a comment between its parts
    /// (`a.// c` newline `b {}`, found by the syntax fuzz target) cannot stay there: written
    /// after the name it would end the statement before the label or `{`. Such comments go
    /// above the block instead, in order, the name starting on the line after them.
    fn comments_inside_name(&mut self, b: &Block) {
        let (Some(first), Some(last)) = (b.name.first(), b.name.last()) else {
            return;
        };
        let (start, end) = (first.span.start as usize, last.span.end as usize);
        let inside = self
            .comments
            .iter()
            .filter(|c| (c.span.start as usize) > start && (c.span.start as usize) < end)
            .map(|c| self.line(c.span.start as usize + comment_text(c).len().saturating_sub(1)))
            .max();
        if let Some(last_line) = inside {
            let name = self.pos_at(start);
            let next = Pos {
                offset: end,
                line: name.line.max(last_line + 1),
            };
            self.flush(next, false);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Literal(lit) => {
                self.at(e.span.start as usize);
                let (kind, protect) = match lit.value {
                    LiteralValue::String(_) => (Last::Other, Protect::Lines),
                    LiteralValue::Number if lit.raw.bytes().all(|b| b.is_ascii_digit()) => {
                        (Last::Integer, Protect::None)
                    }
                    _ => (Last::Other, Protect::None),
                };
                self.word(&lit.raw, kind, protect);
            }
            ExprKind::Ident(name) => {
                self.at(e.span.start as usize);
                self.word(name, Last::Other, Protect::None);
            }
            ExprKind::Array(items) => self.array(e, items),
            ExprKind::Object(fields) => self.object(e, fields),
            ExprKind::Access { value, name } => {
                self.expr(value);
                self.punct(".");
                // Positioned (Alloy estimates it from the `.`), so that a comment between the
                // `.` and the name is written before the name and ends with its line break,
                // instead of swallowing the rest of the chain.
                self.at(name.span.start as usize);
                self.word(&name.name, Last::Other, Protect::None);
            }
            ExprKind::Index { value, index } => {
                self.expr(value);
                let lbrack = self.next_token(value.span.end as usize);
                self.at(lbrack);
                self.punct("[");
                self.expr(index);
                self.at(end_offset(e.span));
                self.punct("]");
            }
            ExprKind::Call { func, args } => self.call(e, func, args),
            ExprKind::Unary { op, expr } => {
                self.at(e.span.start as usize);
                self.punct(op.as_str());
                self.expr(expr);
            }
            ExprKind::Binary { op, lhs, rhs } => {
                self.expr(lhs);
                self.ws(Ws::Blank);
                let op_at = self.next_token(lhs.span.end as usize);
                self.at(op_at);
                self.punct(op.as_str());
                self.ws(Ws::Blank);
                self.expr(rhs);
            }
            ExprKind::Paren(inner) => {
                // Both parentheses get their source positions, as a call's `)` does.
                self.at(e.span.start as usize);
                self.punct("(");
                self.expr(inner);
                self.at(end_offset(e.span));
                self.punct(")");
            }
        }
    }

    /// Elements keep the line breaks the source had between them; a break before the closing
    /// bracket adds a trailing comma.
    fn array(&mut self, e: &Expr, items: &[Expr]) {
        let lbrack = e.span.start as usize;
        let rbrack = end_offset(e.span);
        self.at(lbrack);
        self.punct("[");
        let mut prev_line = self.line(lbrack);
        for (i, item) in items.iter().enumerate() {
            let broke = prev_line != self.line(item.span.start as usize);
            if broke {
                // Indent before the break so that comments placed at the break are indented.
                self.ws(Ws::Indent);
                self.ws(Ws::Formfeed);
            } else if i > 0 {
                self.ws(Ws::Blank);
            }
            prev_line = self.line(end_offset(item.span));
            self.expr(item);
            if i + 1 < items.len() {
                self.punct(",");
            }
            if broke {
                self.ws(Ws::Unindent);
            }
        }
        if !items.is_empty() && prev_line != self.line(rbrack) {
            self.punct(",");
            self.ws(Ws::Indent);
            self.ws(Ws::Formfeed);
            self.ws(Ws::Unindent);
        }
        self.at(rbrack);
        self.punct("]");
    }

    /// Like arrays, but line breaks are judged from key to key, and `=` is aligned across fields
    /// on consecutive lines until a field's value spans several lines.
    fn object(&mut self, e: &Expr, fields: &[Field]) {
        let lcurly = e.span.start as usize;
        let rcurly = end_offset(e.span);
        self.at(lcurly);
        self.punct("{");
        self.ws(Ws::Indent);
        let mut prev_line = self.line(lcurly);
        for (i, field) in fields.iter().enumerate() {
            let key_start = field.key_span.start as usize;
            if prev_line != self.line(key_start) {
                if i > 0 && !self.expr_breaks(&fields[i - 1].value) {
                    self.ws(Ws::Newline);
                } else {
                    self.ws(Ws::Formfeed);
                }
            } else if i > 0 {
                self.ws(Ws::Blank);
            }
            // Alloy measures the key by its unquoted name; only the line matters and keys never
            // span lines, so the key's start line is the same thing.
            prev_line = self.line(key_start);
            self.at(key_start);
            if field.quoted {
                let key = format!("\"{}\"", field.key);
                self.word(&key, Last::Other, Protect::Lines);
            } else {
                self.word(&field.key, Last::Other, Protect::None);
            }
            self.ws(Ws::VTab);
            self.punct("=");
            self.ws(Ws::Blank);
            self.expr(&field.value);
            if i + 1 < fields.len() {
                self.punct(",");
            }
        }
        if !fields.is_empty() && prev_line != self.line(rcurly) {
            self.punct(",");
            self.ws(Ws::Formfeed);
        }
        self.ws(Ws::Unindent);
        self.at(rcurly);
        self.punct("}");
    }

    fn call(&mut self, e: &Expr, func: &Expr, args: &[Expr]) {
        self.expr(func);
        // Alloy writes the parentheses without source positions; they get estimated ones.
        self.punct("(");
        let mut prev_line = self.line(self.next_token(func.span.end as usize));
        for (i, arg) in args.iter().enumerate() {
            let broke = prev_line != self.line(arg.span.start as usize);
            if broke {
                self.ws(Ws::Formfeed);
                self.ws(Ws::Indent);
            }
            self.expr(arg);
            prev_line = self.line(end_offset(arg.span));
            if i + 1 < args.len() {
                self.punct(",");
                self.ws(Ws::Blank);
            }
            if broke {
                self.ws(Ws::Unindent);
            }
        }
        let rparen = end_offset(e.span);
        if !args.is_empty() && prev_line != self.line(rparen) {
            self.punct(",");
            self.ws(Ws::Formfeed);
        }
        // Alloy estimates the position of `)` from the previous token, which places a comment
        // after the last argument behind the `)` and moves it again on the next run. The real
        // offset keeps such a comment where it was, so formatting stays idempotent.
        self.at(rparen);
        self.punct(")");
    }

    /// The offset of the first token at or after `from`, skipping whitespace and comments. Used
    /// for the few token positions the AST does not record (`{` of a block, `[` of an index,
    /// `(` of a call, binary operators).
    fn next_token(&self, from: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut i = from;
        while i < bytes.len() {
            match bytes[i] {
                b' ' | b'\t' | b'\r' | b'\n' => i += 1,
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    i = self.src[i..].find('\n').map_or(bytes.len(), |n| i + n);
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i = self.src[i + 2..]
                        .find("*/")
                        .map_or(bytes.len(), |n| i + 2 + n + 2);
                }
                _ => return i,
            }
        }
        from.min(bytes.len())
    }

    // --- does a construct print over several lines? ---

    fn spans_lines(&self, span: super::ast::Span) -> bool {
        self.line(span.start as usize) != self.line(end_offset(span))
    }

    fn has_comment_in(&self, span: super::ast::Span) -> bool {
        let first = self.comments.partition_point(|c| c.span.start < span.start);
        self.comments
            .get(first)
            .is_some_and(|c| c.span.end <= span.end)
    }

    fn stmt_breaks(&self, stmt: &Stmt) -> bool {
        let span = stmt.span();
        if !self.spans_lines(span) {
            return false;
        }
        if self.has_comment_in(span) {
            return true;
        }
        match stmt {
            Stmt::Attribute(a) => self.expr_breaks(&a.value),
            Stmt::Block(b) => !b.body.stmts.is_empty(),
        }
    }

    /// Whether the printed expression contains a line break. A single-line source always prints
    /// on one line; a multi-line one can collapse, e.g. an empty `{` newline `}` becomes `{}`.
    fn expr_breaks(&self, e: &Expr) -> bool {
        if !self.spans_lines(e.span) {
            return false;
        }
        if self.has_comment_in(e.span) {
            return true;
        }
        let differ = |a: usize, b: usize| self.line(a) != self.line(b);
        match &e.kind {
            ExprKind::Literal(lit) => lit.raw.contains('\n'),
            ExprKind::Ident(_) => false,
            ExprKind::Array(items) => {
                let mut prev = e.span.start as usize;
                for item in items {
                    if differ(prev, item.span.start as usize) || self.expr_breaks(item) {
                        return true;
                    }
                    prev = end_offset(item.span);
                }
                !items.is_empty() && differ(prev, end_offset(e.span))
            }
            ExprKind::Object(fields) => {
                let mut prev = e.span.start as usize;
                for f in fields {
                    if differ(prev, f.key_span.start as usize) || self.expr_breaks(&f.value) {
                        return true;
                    }
                    prev = f.key_span.start as usize;
                }
                !fields.is_empty() && differ(prev, end_offset(e.span))
            }
            ExprKind::Call { func, args } => {
                if self.expr_breaks(func) {
                    return true;
                }
                let mut prev = self.next_token(func.span.end as usize);
                for arg in args {
                    if differ(prev, arg.span.start as usize) || self.expr_breaks(arg) {
                        return true;
                    }
                    prev = end_offset(arg.span);
                }
                !args.is_empty() && differ(prev, end_offset(e.span))
            }
            ExprKind::Access { value, .. } => self.expr_breaks(value),
            ExprKind::Index { value, index } => self.expr_breaks(value) || self.expr_breaks(index),
            ExprKind::Unary { expr, .. } => self.expr_breaks(expr),
            ExprKind::Binary { lhs, rhs, .. } => self.expr_breaks(lhs) || self.expr_breaks(rhs),
            ExprKind::Paren(inner) => self.expr_breaks(inner),
        }
    }
}

/// Offset of the last byte of a span (Alloy positions nodes by their first and last character).
fn end_offset(span: super::ast::Span) -> usize {
    (span.end as usize)
        .saturating_sub(1)
        .max(span.start as usize)
}

/// Go's `strconv.Quote`, which Alloy uses to print block labels.
use crate::gocompat::quote as go_quote;

// ---------------------------------------------------------------------------------------------
// Stage 2: elastic tabstops (Go's text/tabwriter with minwidth 0, tabwidth 8, padding 1,
// padchar ' ', DiscardEmptyColumns | TabIndent, escape characters passed through)

const TAB_WIDTH: usize = 8;
const PADDING: usize = 1;

#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    /// Bytes of text, escape characters included.
    size: usize,
    /// Width in characters, escape characters excluded.
    width: usize,
    /// Terminated by a hard tab (indentation) rather than a soft one (alignment).
    htab: bool,
}

#[derive(Default)]
struct Aligner {
    out: Vec<u8>,
    /// Text of the buffered lines, without the separators.
    buf: Vec<u8>,
    /// How much of the current cell's text has been measured.
    measured: usize,
    cell: Cell,
    escaped: bool,
    lines: Vec<Vec<Cell>>,
    widths: Vec<usize>,
}

/// Aligns the cells (text terminated by `\t` or `\v`) of consecutive lines into columns. A
/// formfeed ends the run of lines that align with each other.
fn align_columns(input: &[u8]) -> Vec<u8> {
    let mut a = Aligner {
        lines: vec![Vec::new()],
        ..Aligner::default()
    };
    a.write(input);
    a.flush();
    a.out
}

impl Aligner {
    fn write(&mut self, input: &[u8]) {
        let mut start = 0;
        for (i, &ch) in input.iter().enumerate() {
            if self.escaped {
                if ch == ESCAPE {
                    self.append(&input[start..=i]);
                    start = i + 1;
                    self.measure();
                    // The two escape characters take no room in the output.
                    self.cell.width = self.cell.width.saturating_sub(2);
                    self.escaped = false;
                }
                continue;
            }
            match ch {
                b'\t' | b'\x0b' | b'\n' | b'\x0c' => {
                    self.append(&input[start..i]);
                    self.measure();
                    start = i + 1;
                    let cells = self.terminate_cell(ch == b'\t');
                    if ch == b'\n' || ch == b'\x0c' {
                        self.lines.push(Vec::new());
                        // A line with a single cell cannot affect the columns of later lines, so
                        // everything so far can be laid out now.
                        if ch == b'\x0c' || cells == 1 {
                            self.flush();
                        }
                    }
                }
                ESCAPE => {
                    self.append(&input[start..i]);
                    self.measure();
                    start = i;
                    self.escaped = true;
                }
                _ => {}
            }
        }
        self.append(&input[start..]);
    }

    fn append(&mut self, text: &[u8]) {
        self.buf.extend_from_slice(text);
        self.cell.size += text.len();
    }

    fn measure(&mut self) {
        self.cell.width += char_count(&self.buf[self.measured..]);
        self.measured = self.buf.len();
    }

    fn terminate_cell(&mut self, htab: bool) -> usize {
        self.cell.htab = htab;
        let cell = std::mem::take(&mut self.cell);
        match self.lines.last_mut() {
            Some(line) => {
                line.push(cell);
                line.len()
            }
            None => {
                self.lines.push(vec![cell]);
                1
            }
        }
    }

    fn flush(&mut self) {
        if self.cell.size > 0 {
            if self.escaped {
                self.measure();
                self.cell.width = self.cell.width.saturating_sub(2);
                self.escaped = false;
            }
            self.terminate_cell(false);
        }
        let n = self.lines.len();
        self.format(0, 0, n);
        self.buf.clear();
        self.measured = 0;
        self.cell = Cell::default();
        self.escaped = false;
        self.lines.clear();
        self.lines.push(Vec::new());
        self.widths.clear();
    }

    /// Lays out lines `line0..line1` (text starting at `pos`), finding for each column the runs of
    /// consecutive lines that have a cell in it. The last cell of a line is not in any column.
    fn format(&mut self, pos: usize, mut line0: usize, line1: usize) -> usize {
        let mut pos = pos;
        let column = self.widths.len();
        let mut this = line0;
        while this < line1 {
            if column + 1 < self.lines[this].len() {
                pos = self.write_lines(pos, line0, this);
                line0 = this;
                let mut width = 0;
                let mut discardable = true;
                while this < line1 {
                    let line = &self.lines[this];
                    if column + 1 < line.len() {
                        let c = line[column];
                        width = width.max(c.width + PADDING);
                        if c.width > 0 || c.htab {
                            discardable = false;
                        }
                        this += 1;
                    } else {
                        break;
                    }
                }
                if discardable {
                    width = 0;
                }
                self.widths.push(width);
                pos = self.format(pos, line0, this);
                self.widths.pop();
                line0 = this;
            }
            this += 1;
        }
        self.write_lines(pos, line0, line1)
    }

    fn write_lines(&mut self, pos: usize, line0: usize, line1: usize) -> usize {
        let mut pos = pos;
        for i in line0..line1 {
            // Leading empty cells are indentation and padded with tabs.
            let mut leading = true;
            for j in 0..self.lines[i].len() {
                let c = self.lines[i][j];
                if c.size == 0 {
                    if let Some(&w) = self.widths.get(j) {
                        self.pad(c.width, w, leading);
                    }
                } else {
                    leading = false;
                    self.out.extend_from_slice(&self.buf[pos..pos + c.size]);
                    pos += c.size;
                    if let Some(&w) = self.widths.get(j) {
                        self.pad(c.width, w, false);
                    }
                }
            }
            if i + 1 == self.lines.len() {
                // The unterminated text of the last line.
                let end = pos + self.cell.size;
                self.out.extend_from_slice(&self.buf[pos..end]);
                pos = end;
            } else {
                self.out.push(b'\n');
            }
        }
        pos
    }

    fn pad(&mut self, text_width: usize, cell_width: usize, tabs: bool) {
        if tabs {
            let cell_width = cell_width.div_ceil(TAB_WIDTH) * TAB_WIDTH;
            let n = cell_width.saturating_sub(text_width);
            self.out
                .extend(std::iter::repeat_n(b'\t', n.div_ceil(TAB_WIDTH)));
        } else {
            self.out.extend(std::iter::repeat_n(
                b' ',
                cell_width.saturating_sub(text_width),
            ));
        }
    }
}

/// Characters in UTF-8 text; each escape byte counts as one, as in Go's `utf8.RuneCount`.
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xc0) != 0x80).count()
}

// ---------------------------------------------------------------------------------------------
// Stage 3: drop trailing blanks and the escape characters

fn trim_blanks(input: &[u8]) -> String {
    let mut out = Vec::with_capacity(input.len());
    let mut pending: Vec<u8> = Vec::new();
    let mut escaped = false;
    for &b in input {
        if escaped {
            if b == ESCAPE {
                escaped = false;
            } else {
                out.push(b);
            }
            continue;
        }
        match b {
            b' ' | b'\t' => pending.push(b),
            b'\x0b' => pending.push(b'\t'),
            b'\n' | b'\x0c' => {
                pending.clear();
                out.push(b'\n');
            }
            ESCAPE => {
                out.append(&mut pending);
                escaped = true;
            }
            _ => {
                out.append(&mut pending);
                out.push(b);
            }
        }
    }
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parser::parse_file;

    fn fmt(src: &str) -> String {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "test input must parse: {diags:?}");
        let once = format_file(&file, src);
        let (again, diags) = parse_file(&once);
        assert!(
            diags.is_empty(),
            "formatted text must parse: {diags:?}\n{once}"
        );
        assert_eq!(format_file(&again, &once), once, "formatting is idempotent");
        once
    }

    #[test]
    fn aligns_equals_of_consecutive_attributes() {
        assert_eq!(
            fmt("block {\n  a = 1\n  long_name = 2\n  bb = \"x\"\n}\n"),
            "block {\n\ta         = 1\n\tlong_name = 2\n\tbb        = \"x\"\n}\n"
        );
    }

    #[test]
    fn alignment_runs_end_at_blank_lines_blocks_and_multiline_values() {
        let src =
            "a = 1\nbbb = 2\n\ncc = 3\nd = [\n1,\n]\neeeee = 4\nf = 5\ninner {}\ngggggg = 6\n";
        assert_eq!(
            fmt(src),
            "a   = 1\nbbb = 2\n\ncc = 3\nd  = [\n\t1,\n]\neeeee = 4\nf     = 5\n\ninner { }\ngggggg = 6\n"
        );
    }

    #[test]
    fn keeps_at_most_one_blank_line_and_separates_blocks() {
        assert_eq!(
            fmt("\n\na = 1\n\n\n\nb = 2\nx {}\ny {}\n\n\n"),
            "a = 1\n\nb = 2\n\nx { }\n\ny { }\n"
        );
    }

    #[test]
    fn reindents_with_tabs_and_collapses_empty_blocks() {
        assert_eq!(
            fmt("outer \"l\" {\n    inner {\n        x = 1\n    }\n    empty {\n    }\n}\n"),
            "outer \"l\" {\n\tinner {\n\t\tx = 1\n\t}\n\n\tempty { }\n}\n"
        );
    }

    #[test]
    fn line_comments_keep_their_place_and_indentation() {
        let src = "// head\n\nblock {\n// inside\n  a = 1 // trailing\n  bbb = 22 // aligned\n}  // discovery.kubernetes \"pods\"\n// tail\n";
        assert_eq!(
            fmt(src),
            "// head\n\nblock {\n\t// inside\n\ta   = 1  // trailing\n\tbbb = 22 // aligned\n} // discovery.kubernetes \"pods\"\n// tail\n"
        );
    }

    #[test]
    fn a_form_feed_inside_a_comment_keeps_the_line_break_after_it() {
        // Found by the syntax fuzz target: the block after the comment was joined onto it.
        assert_eq!(fmt("//\x0c\ni{}\n"), "//\x0c\ni { }\n");
        assert_eq!(fmt("a = 1 // x\x0cy\nb = 2\n"), "a = 1 // x\x0cy\nb = 2\n");
        assert_eq!(fmt("/* \x0c */\nc {}\n"), "/* \x0c */\nc { }\n");
    }

    #[test]
    fn comments_inside_a_block_name_move_above_the_block() {
        assert_eq!(fmt("a.// c\nb {}\n"), "// c\na.b { }\n");
        assert_eq!(
            fmt("x = 1\n\na.// c\nb \"l\" {}\n"),
            "x = 1\n\n// c\na.b \"l\" { }\n"
        );
        assert_eq!(fmt("a./* c */b {}\n"), "/* c */\na.b { }\n");
        assert_eq!(
            fmt("blk {\n  a.// c\n  b {}\n}\n"),
            "blk {\n\t// c\n\ta.b { }\n}\n"
        );
    }

    #[test]
    fn block_comments_inline_and_multiline() {
        assert_eq!(fmt("a = 1 + /* two */ 2\n"), "a = 1 + /* two */ 2\n");
        assert_eq!(
            fmt("/*\n   kept   \n   as is\n*/\nb = true\n"),
            "/*\n   kept   \n   as is\n*/\nb = true\n"
        );
    }

    #[test]
    fn comments_in_arrays_follow_element_indentation() {
        assert_eq!(
            fmt("x = [ // first\n  1, 2, // second\n  // before three\n  3,\n  // last\n]\n"),
            "x = [ // first\n\t1, 2, // second\n\t// before three\n\t3,\n\t// last\n]\n"
        );
    }

    #[test]
    fn multiline_lists_get_one_break_per_source_break_and_trailing_commas() {
        assert_eq!(
            fmt("x = [\"a\",\n\"b\"]\ny = [1,2,3]\nz = [\n  1, 2]\n"),
            "x = [\"a\",\n\t\"b\"]\ny = [1, 2, 3]\nz = [\n\t1, 2]\n"
        );
        assert_eq!(
            fmt("x = [\n\"a\",  \"b\",\n]\ny = [1, 2, 3,]\n"),
            "x = [\n\t\"a\", \"b\",\n]\ny = [1, 2, 3]\n"
        );
    }

    #[test]
    fn objects_align_keys_and_take_trailing_commas() {
        assert_eq!(
            fmt("o = {\n  a = 1,\n  \"long.key\" = 2,\n}\np = {a=1,b=2,}\n"),
            "o = {\n\ta          = 1,\n\t\"long.key\" = 2,\n}\np = {a = 1, b = 2}\n"
        );
    }

    #[test]
    fn call_arguments_on_separate_lines_are_indented() {
        assert_eq!(
            fmt("x = string.join([\"a\",\"b\"],\",\")\ny = f(\n1,\n2,\n)\n"),
            "x = string.join([\"a\", \"b\"], \",\")\ny = f(\n\t1,\n\t2,\n)\n"
        );
    }

    #[test]
    fn a_comment_after_the_last_call_argument_stays_on_its_line() {
        // Found by the syntax fuzz target: the comment used to move behind `)` and then, on
        // the next run, onto a line of its own.
        assert_eq!(
            fmt("f = g(\n\t\"%s\", // c\n)\n"),
            "f = g(\n\t\"%s\", // c\n)\n"
        );
        assert_eq!(fmt("f = g(1, /* c */)\n"), "f = g(1 /* c */ )\n");
        assert_eq!(fmt("f = g(\n\t1,\n) // c\n"), "f = g(\n\t1,\n) // c\n");
        assert_eq!(
            fmt("f = g(\n\t1, // a\n\t2, // b\n)\n"),
            "f = g(\n\t1, // a\n\t2, // b\n)\n"
        );
    }

    #[test]
    fn comments_inside_access_chains_and_parentheses_keep_their_line_breaks() {
        // Found by the syntax fuzz target: the comment swallowed `.c` and the `,` after it.
        assert_eq!(
            fmt("x = f(\n\ta.\n\t// c\n\tb.c,\n)\n"),
            "x = f(\n\ta.\n\t// c\n\tb.c,\n)\n"
        );
        assert_eq!(fmt("x = (1 /* c */)\n"), "x = (1 /* c */ )\n");
        assert_eq!(fmt("x = a.b.c // c\n"), "x = a.b.c // c\n");
    }

    #[test]
    fn deviations_from_alloy_keep_the_text_parseable() {
        // Alloy prints `f(,` newline `)` here, and drops the empty label.
        assert_eq!(fmt("x = f(\n)\n"), "x = f()\n");
        assert_eq!(fmt("b \"\" {}\n"), "b \"\" { }\n");
    }

    #[test]
    fn empty_multiline_collections_collapse_and_align_in_one_pass() {
        // Alloy only aligns `headers` with its neighbours on a second run.
        assert_eq!(
            fmt("a = 1\nheaders = {\n}\nlist = [\n]\nbb = 2\n"),
            "a       = 1\nheaders = {}\nlist    = []\nbb      = 2\n"
        );
    }

    #[test]
    fn literals_are_printed_verbatim() {
        // No interpolation (`${1}` is plain text), no re-quoting, no re-spelling of escapes or
        // numbers.
        let src = r#"a = "${1}"
b = "$1:$2"
c = "(.+):(\\d+)"
d = "\u00e9\"q\""
n = 1.50e3
m = 007
"#;
        assert_eq!(fmt(src), src);
    }

    #[test]
    fn raw_strings_keep_tabs_and_trailing_blanks() {
        let src = "block {\n  content = `line one  \n\tindented\tand tabbed\n  `\n  x = 1\n}\n";
        assert_eq!(
            fmt(src),
            "block {\n\tcontent = `line one  \n\tindented\tand tabbed\n  `\n\tx = 1\n}\n"
        );
    }

    #[test]
    fn quoted_keys_are_not_requoted() {
        assert_eq!(fmt("o = {\"a\\\"b\" = 1}\n"), "o = {\"a\\\"b\" = 1}\n");
    }

    #[test]
    fn expressions_are_spaced_canonically() {
        assert_eq!(
            fmt("x = -a.b[0]+(2*c)  ==  !d\ny = sys.env(\"HOME\")\n"),
            "x = -a.b[0] + (2 * c) == !d\ny = sys.env(\"HOME\")\n"
        );
    }

    #[test]
    fn comment_only_and_empty_files() {
        assert_eq!(fmt(""), "\n");
        assert_eq!(
            fmt("// only\n\n\n// comments\n"),
            "// only\n\n// comments\n"
        );
    }

    #[test]
    fn labels_are_quoted_like_go() {
        assert_eq!(go_quote("pods"), "\"pods\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("tab\there\u{1}"), "\"tab\\there\\x01\"");
        assert_eq!(go_quote("é→\u{a0}"), "\"é→\\u00a0\"");
    }

    #[test]
    fn aligner_pads_soft_columns_with_spaces_and_indents_with_tabs() {
        let out = align_columns(b"\ta\x0b= 1\n\tlong\x0b= 2\x0c\tx\x0b= 3");
        assert_eq!(out, b"\ta    = 1\n\tlong = 2\n\tx = 3".to_vec());
    }

    #[test]
    fn trimmer_drops_trailing_blanks_but_not_escaped_text() {
        let input = b"a \t\nb \xff// c  \xff  \n";
        assert_eq!(trim_blanks(input), "a\nb // c  \n");
    }
}
