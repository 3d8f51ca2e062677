//! An expression printed on one line, as error messages quote it. Separate from the canonical
//! formatter because messages need a compact single-line form, not the file layout.

use crate::syntax::ast::{Expr, ExprKind};

/// The expression on one line, as error messages quote it (`[0, 1, 2]`, `sys.env("X")`).
/// Literals print exactly as written.
pub fn expr_text(expr: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, expr);
    s
}

fn write_expr(s: &mut String, expr: &Expr) {
    match &expr.kind {
        ExprKind::Literal(lit) => s.push_str(&lit.raw),
        ExprKind::Ident(name) => s.push_str(name),
        ExprKind::Array(items) => {
            s.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                write_expr(s, item);
            }
            s.push(']');
        }
        ExprKind::Object(fields) => {
            if fields.is_empty() {
                s.push_str("{}");
                return;
            }
            s.push_str("{ ");
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                if f.quoted {
                    s.push('"');
                    s.push_str(&f.key);
                    s.push('"');
                } else {
                    s.push_str(&f.key);
                }
                s.push_str(" = ");
                write_expr(s, &f.value);
            }
            s.push_str(" }");
        }
        ExprKind::Access { value, name } => {
            write_expr(s, value);
            s.push('.');
            s.push_str(&name.name);
        }
        ExprKind::Index { value, index } => {
            write_expr(s, value);
            s.push('[');
            write_expr(s, index);
            s.push(']');
        }
        ExprKind::Call { func, args } => {
            write_expr(s, func);
            s.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                write_expr(s, a);
            }
            s.push(')');
        }
        ExprKind::Unary { op, expr } => {
            s.push_str(op.as_str());
            write_expr(s, expr);
        }
        ExprKind::Binary { op, lhs, rhs } => {
            write_expr(s, lhs);
            s.push(' ');
            s.push_str(op.as_str());
            s.push(' ');
            write_expr(s, rhs);
        }
        ExprKind::Paren(inner) => {
            s.push('(');
            write_expr(s, inner);
            s.push(')');
        }
    }
}
