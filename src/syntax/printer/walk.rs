//! The walker: which tokens and whitespace each construct produces, and the source positions
//! they are pinned to. The positions matter as much as the tokens, because comment placement
//! compares them with the comments' offsets.

use super::comments::comment_text;
use super::tokens::{Last, Protect, Ws};
use super::{Pos, Printer};
use crate::syntax::ast::{Attribute, Block, Expr, ExprKind, Field, LiteralValue, Span, Stmt};

/// Go's `strconv.Quote`, which Alloy uses to print block labels.
use crate::gocompat::quote as go_quote;

impl Printer<'_> {
    pub(super) fn stmts(&mut self, stmts: &[Stmt]) {
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
    pub(super) fn next_token(&self, from: usize) -> usize {
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
}

/// Offset of the last byte of a span (Alloy positions nodes by their first and last character).
pub(super) fn end_offset(span: Span) -> usize {
    (span.end as usize)
        .saturating_sub(1)
        .max(span.start as usize)
}
