//! Whether a construct prints over several lines, which ends a run of aligned `=`. Judged on the
//! printed form rather than on the source (a deliberate difference from Alloy, see the module
//! docs), so it must follow the walker's own line-break rules.

use super::Printer;
use super::walk::end_offset;
use crate::syntax::ast::{Expr, ExprKind, Span, Stmt};

impl Printer<'_> {
    fn spans_lines(&self, span: Span) -> bool {
        self.line(span.start as usize) != self.line(end_offset(span))
    }

    fn has_comment_in(&self, span: Span) -> bool {
        let first = self.comments.partition_point(|c| c.span.start < span.start);
        self.comments
            .get(first)
            .is_some_and(|c| c.span.end <= span.end)
    }

    pub(super) fn stmt_breaks(&self, stmt: &Stmt) -> bool {
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
    pub(super) fn expr_breaks(&self, e: &Expr) -> bool {
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
