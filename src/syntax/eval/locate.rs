//! Where an error about a value points. Alloy blames the innermost literal that produced a bad
//! element, so errors carry a path inside the value and are placed by following it back
//! through the array and object literals of the expression.

use super::expr_text::expr_text;
use crate::syntax::ast::{Expr, ExprKind};
use crate::syntax::diag::Diagnostic;
use crate::syntax::value::{Type, Value};

/// One step into a value: an object key or an array index. Used to point an error at the
/// innermost literal that produced a bad element, as Alloy does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    Field(String),
    Index(usize),
}

/// Renders path segments as Alloy prints them after an expression: `.field[2]`.
pub fn path_text(path: &[PathSeg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            PathSeg::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            PathSeg::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

/// Finds the sub-expression that produced the value at `path` inside the value of `expr`,
/// descending through array and object literals (Alloy associates every evaluated value with
/// its node, so an error about an element written literally points at that element).
/// Returns the innermost expression and the part of the path that could not be followed.
pub fn locate<'e, 'p>(expr: &'e Expr, path: &'p [PathSeg]) -> (&'e Expr, &'p [PathSeg]) {
    let mut cur = expr;
    let mut rest = path;
    loop {
        let Some((seg, tail)) = rest.split_first() else {
            return (cur, rest);
        };
        let next = match (&cur.kind, seg) {
            (ExprKind::Paren(inner), _) => {
                // Parentheses do not consume a segment.
                cur = inner;
                continue;
            }
            (ExprKind::Array(items), PathSeg::Index(i)) => items.get(*i),
            // The last field with a given key wins, as when the object was built.
            (ExprKind::Object(fields), PathSeg::Field(k)) => {
                fields.iter().rev().find(|f| &f.key == k).map(|f| &f.value)
            }
            _ => None,
        };
        match next {
            Some(e) => {
                cur = e;
                rest = tail;
            }
            None => return (cur, rest),
        }
    }
}

/// A diagnostic about the value at `path` inside the value of `expr`:
/// `<innermost expression text><rest of path> <message>` at the innermost expression's span.
pub fn value_error(expr: &Expr, path: &[PathSeg], message: &str) -> Diagnostic {
    let (node, rest) = locate(expr, path);
    Diagnostic::error(
        node.span,
        format!("{}{} {}", expr_text(node), path_text(rest), message),
    )
}

pub(super) fn type_error(expr: &Expr, expected: Type, got: &Value) -> Diagnostic {
    value_error(
        expr,
        &[],
        &format!("should be {}, got {}", expected, got.ty()),
    )
}
