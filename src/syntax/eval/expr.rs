//! Evaluation of one expression. Values are borrowed from the scope until an operation has to
//! build a new one, and each kind of expression is a function of its own to keep the stack frame
//! of the recursion small.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::expr_text::expr_text;
use super::locate::{type_error, value_error};
use super::number::literal_value;
use super::ops::{binary, number_as_i64};
use super::scope::Scope;
use crate::syntax::ast::{self, Expr, ExprKind, UnaryOp};
use crate::syntax::diag::Diagnostic;
use crate::syntax::stdlib;
use crate::syntax::suggest;
use crate::syntax::value::{Number, Type, Value};

/// Evaluates an expression.
pub fn eval_expr(expr: &Expr, scope: &Scope) -> Result<Value, Diagnostic> {
    eval(expr, scope).map(Cow::into_owned)
}

// Each operation with locals of its own is a separate function: a debug build gives every match
// arm its own stack slots, and `eval` recurses once per level of nesting, so one big `eval`
// took ~7 KiB of stack per level and overflowed a 2 MiB worker stack at 300 nested arrays.
fn eval<'s>(expr: &Expr, scope: &'s Scope) -> Result<Cow<'s, Value>, Diagnostic> {
    match &expr.kind {
        ExprKind::Literal(lit) => literal_value(lit)
            .map(Cow::Owned)
            .map_err(|msg| Diagnostic::error(expr.span, msg)),
        ExprKind::Ident(name) => match scope.get(name) {
            Some(v) => Ok(Cow::Borrowed(v)),
            None => Err(Diagnostic::error(
                expr.span,
                format!("identifier {name:?} does not exist"),
            )),
        },
        ExprKind::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(eval(item, scope)?.into_owned());
            }
            Ok(Cow::Owned(Value::Array(out)))
        }
        ExprKind::Object(fields) => {
            let mut out = BTreeMap::new();
            for field in fields {
                let v = eval(&field.value, scope)?.into_owned();
                out.insert(field.key.clone(), v);
            }
            Ok(Cow::Owned(Value::Object(out)))
        }
        ExprKind::Access { value, name } => eval_access(value, name, scope),
        ExprKind::Index { value, index } => eval_index(value, index, scope),
        ExprKind::Call { func, args } => eval_call(expr, func, args, scope),
        ExprKind::Unary { op, expr: inner } => eval_unary(op, inner, scope),
        ExprKind::Binary { op, lhs, rhs } => {
            // Both operands are always evaluated: Alloy does not short-circuit.
            let l = eval(lhs, scope)?;
            let r = eval(rhs, scope)?;
            binary(*op, &l, &r, lhs, rhs).map(Cow::Owned)
        }
        ExprKind::Paren(inner) => eval(inner, scope),
    }
}

fn eval_access<'s>(
    value: &Expr,
    name: &ast::Ident,
    scope: &'s Scope,
) -> Result<Cow<'s, Value>, Diagnostic> {
    let base = eval(value, scope)?;
    // With the nearest field as a hint: `pyroscope.write.x.reciever`, `string.jion`.
    let missing = |fields: &BTreeMap<String, Value>| {
        let d = Diagnostic::error(name.span, format!("field {:?} does not exist", name.name));
        match suggest::did_you_mean(&name.name, fields.keys().map(String::as_str)) {
            Some(help) => d.with_help(help),
            None => d,
        }
    };
    match base {
        Cow::Borrowed(Value::Object(m)) => m
            .get(&name.name)
            .map(Cow::Borrowed)
            .ok_or_else(|| missing(m)),
        Cow::Owned(Value::Object(mut m)) => m
            .remove(&name.name)
            .map(Cow::Owned)
            .ok_or_else(|| missing(&m)),
        other if other.is_object_view() => {
            let mut m = other.object_view().unwrap_or_default();
            m.remove(&name.name)
                .map(Cow::Owned)
                .ok_or_else(|| missing(&m))
        }
        other => Err(value_error(
            value,
            &[],
            &format!(
                "cannot access field {:?} on value of type {}",
                name.name,
                other.ty()
            ),
        )),
    }
}

fn eval_index<'s>(
    value: &Expr,
    index: &Expr,
    scope: &'s Scope,
) -> Result<Cow<'s, Value>, Diagnostic> {
    // Both sides are evaluated before any check, as in Alloy.
    let base = eval(value, scope)?;
    let idx = eval(index, scope)?;
    match base.as_ref() {
        Value::Array(items) => {
            let Value::Number(n) = idx.as_ref() else {
                return Err(type_error(index, Type::Number, &idx));
            };
            let i = number_as_i64(*n);
            if i < 0 || i as u64 >= items.len() as u64 {
                return Err(value_error(
                    index,
                    &[],
                    &format!(
                        "index {i} is out of range of array with length {}",
                        items.len()
                    ),
                ));
            }
            let i = i as usize;
            Ok(match base {
                Cow::Borrowed(Value::Array(items)) => Cow::Borrowed(&items[i]),
                Cow::Owned(Value::Array(mut items)) => Cow::Owned(items.swap_remove(i)),
                // The outer match established that `base` is an array.
                _ => Cow::Owned(Value::Null),
            })
        }
        Value::Object(_) => {
            let Value::String(key) = idx.as_ref() else {
                return Err(type_error(index, Type::String, &idx));
            };
            // A missing key read with [] is null, unlike field access.
            Ok(match base {
                Cow::Borrowed(Value::Object(m)) => m
                    .get(key)
                    .map(Cow::Borrowed)
                    .unwrap_or(Cow::Owned(Value::Null)),
                Cow::Owned(Value::Object(mut m)) => {
                    Cow::Owned(m.remove(key).unwrap_or(Value::Null))
                }
                _ => Cow::Owned(Value::Null),
            })
        }
        Value::Capsule(c) if c.view.is_some() => {
            let Value::String(key) = idx.as_ref() else {
                return Err(type_error(index, Type::String, &idx));
            };
            Ok(Cow::Owned(
                c.object()
                    .and_then(|mut m| m.remove(key))
                    .unwrap_or(Value::Null),
            ))
        }
        Value::Capsule(_) => Err(value_error(
            value,
            &[],
            "expected object or array or a capsule convertible to an object, got capsule",
        )),
        other => Err(value_error(
            value,
            &[],
            &format!("expected object or array, got {}", other.ty()),
        )),
    }
}

fn eval_call<'s>(
    expr: &Expr,
    func: &Expr,
    args: &[Expr],
    scope: &'s Scope,
) -> Result<Cow<'s, Value>, Diagnostic> {
    let callee = eval(func, scope)?;
    let Value::Function(f) = callee.as_ref() else {
        return Err(type_error(func, Type::Function, &callee));
    };
    let mut values = Vec::with_capacity(args.len());
    // Functions see targets as the objects they stand for; the two that only pass
    // values along keep the shared capsules.
    let pass_through = matches!(f.name, "array.concat" | "coalesce");
    for arg in args {
        let v = eval(arg, scope)?.into_owned();
        values.push(if pass_through { v } else { v.materialize() });
    }
    match stdlib::call(f, values) {
        Ok(v) => Ok(Cow::Owned(v)),
        Err(stdlib::FnError::Call(msg)) => Err(Diagnostic::error(
            expr.span,
            format!("{} {}", expr_text(func), msg),
        )),
        Err(stdlib::FnError::Arg {
            index,
            path,
            message,
        }) => Err(match args.get(index) {
            Some(arg) => value_error(arg, &path, &message),
            None => Diagnostic::error(expr.span, format!("{} {}", expr_text(func), message)),
        }),
    }
}

fn eval_unary<'s>(
    op: &UnaryOp,
    inner: &Expr,
    scope: &'s Scope,
) -> Result<Cow<'s, Value>, Diagnostic> {
    let v = eval(inner, scope)?;
    match (op, v.as_ref()) {
        (UnaryOp::Not, Value::Bool(b)) => Ok(Cow::Owned(Value::Bool(!b))),
        (UnaryOp::Not, other) => Err(type_error(inner, Type::Bool, other)),
        // Negating a uint yields an int, as in Alloy (the value is reinterpreted first).
        (UnaryOp::Neg, Value::Number(Number::Int(i))) => {
            Ok(Cow::Owned(Value::Number(Number::Int(i.wrapping_neg()))))
        }
        (UnaryOp::Neg, Value::Number(Number::Uint(u))) => Ok(Cow::Owned(Value::Number(
            Number::Int((*u as i64).wrapping_neg()),
        ))),
        (UnaryOp::Neg, Value::Number(Number::Float(f))) => {
            Ok(Cow::Owned(Value::Number(Number::Float(-f))))
        }
        (UnaryOp::Neg, other) => Err(type_error(inner, Type::Number, other)),
    }
}
