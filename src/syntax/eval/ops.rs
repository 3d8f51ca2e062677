//! The unary and binary operators' semantics: Alloy's operand type checks, number kind
//! promotion with Go's wrapping integer arithmetic, secret promotion, and deep equality. Kept
//! apart from the expression walk because `values_equal` is also the stdlib's notion of equality.

use std::borrow::Cow;

use super::locate::{type_error, value_error};
use crate::syntax::ast::{BinaryOp, Expr};
use crate::syntax::diag::Diagnostic;
use crate::syntax::value::{Number, Secret, Type, Value};

/// Go's `int64(x)` conversion of a number (floats truncate toward zero, saturating like Go on
/// amd64 for out-of-range values is not guaranteed, so we saturate).
pub(super) fn number_as_i64(n: Number) -> i64 {
    match n {
        Number::Int(i) => i,
        Number::Uint(u) => u as i64,
        Number::Float(f) => f as i64,
    }
}

fn number_as_u64(n: Number) -> u64 {
    match n {
        Number::Int(i) => i as u64,
        Number::Uint(u) => u,
        Number::Float(f) => f as u64,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Uint,
    Int,
    Float,
}

fn kind(n: Number) -> Kind {
    match n {
        Number::Uint(_) => Kind::Uint,
        Number::Int(_) => Kind::Int,
        Number::Float(_) => Kind::Float,
    }
}

/// The representation two numbers are combined in: uint < int < float (Alloy's
/// `fitNumberKinds`).
fn fit(a: Number, b: Number) -> Kind {
    kind(a).max(kind(b))
}

/// Alloy's `intPow`, including its quirks: `n ^ 0 == 1`, `1 ^ m == 1`, `0 ^ m == 0` for m > 0,
/// and a negative exponent leaves `n` unchanged (the multiplication loop never runs).
/// Overflow wraps like Go's integer multiplication.
fn int_pow_i64(n: i64, m: i64) -> i64 {
    if m == 0 || n == 1 {
        return 1;
    }
    if n == 0 && m > 0 {
        return 0;
    }
    if m < 1 {
        return n;
    }
    let mut result: i64 = 1;
    let mut base = n;
    let mut exp = m as u64;
    // Square-and-multiply gives the same result modulo 2^64 as Go's loop, without m iterations.
    while exp > 0 {
        if exp & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    result
}

fn int_pow_u64(n: u64, m: u64) -> u64 {
    if m == 0 || n == 1 {
        return 1;
    }
    if n == 0 {
        return 0;
    }
    let mut result: u64 = 1;
    let mut base = n;
    let mut exp = m;
    while exp > 0 {
        if exp & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    result
}

/// Types accepted by each operator, printed like Go prints a `[]value.Type`.
fn allowed_types(op: BinaryOp) -> &'static [Type] {
    match op {
        BinaryOp::Or | BinaryOp::And => &[Type::Bool],
        BinaryOp::Add => &[Type::Number, Type::String, Type::Secret],
        BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod | BinaryOp::Pow => {
            &[Type::Number]
        }
        BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => {
            &[Type::Number, Type::String]
        }
        // Equality accepts anything; handled before the type checks.
        BinaryOp::Eq | BinaryOp::NotEq => &[],
    }
}

fn types_text(types: &[Type]) -> String {
    let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
    format!("[{}]", names.join(" "))
}

/// Secrets mix with strings: a string next to a secret is promoted to a secret (Alloy's
/// `tryUnwrapCapsules`), so `"Bearer " + secret` is a secret and `"a" == secret` compares text.
fn promote_secrets<'a>(l: &'a Value, r: &'a Value) -> (Cow<'a, Value>, Cow<'a, Value>) {
    match (l, r) {
        (Value::String(s), Value::Secret(_)) => (
            Cow::Owned(Value::Secret(Secret::new(s.clone()))),
            Cow::Borrowed(r),
        ),
        (Value::Secret(_), Value::String(s)) => (
            Cow::Borrowed(l),
            Cow::Owned(Value::Secret(Secret::new(s.clone()))),
        ),
        _ => (Cow::Borrowed(l), Cow::Borrowed(r)),
    }
}

/// Alloy's deep equality: numbers compare across int/uint/float, values of different types are
/// never equal, functions are never equal (not even to themselves), capsules compare by
/// identity.
pub fn values_equal(l: &Value, r: &Value) -> bool {
    match (l, r) {
        (Value::Null, Value::Null) => true,
        (Value::Number(a), Value::Number(b)) => numbers_equal(*a, *b),
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Secret(a), Value::Secret(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| values_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| values_equal(v, w)))
        }
        (Value::Function(_), Value::Function(_)) => false,
        (Value::Capsule(a), Value::Capsule(b)) => a == b,
        (Value::Capsule(c), other) | (other, Value::Capsule(c)) => match c.object() {
            Some(m) => values_equal(&Value::Object(m), other),
            None => false,
        },
        _ => false,
    }
}

fn numbers_equal(a: Number, b: Number) -> bool {
    match fit(a, b) {
        Kind::Uint => number_as_u64(a) == number_as_u64(b),
        Kind::Int => number_as_i64(a) == number_as_i64(b),
        Kind::Float => a.as_f64() == b.as_f64(),
    }
}

pub(super) fn binary(
    op: BinaryOp,
    l: &Value,
    r: &Value,
    lhs: &Expr,
    rhs: &Expr,
) -> Result<Value, Diagnostic> {
    let (l, r) = promote_secrets(l, r);
    let (l, r) = (l.as_ref(), r.as_ref());

    match op {
        BinaryOp::Eq => return Ok(Value::Bool(values_equal(l, r))),
        BinaryOp::NotEq => return Ok(Value::Bool(!values_equal(l, r))),
        _ => {}
    }

    let allowed = allowed_types(op);
    for (v, e) in [(l, lhs), (r, rhs)] {
        if !allowed.contains(&v.ty()) {
            return Err(value_error(
                e,
                &[],
                &format!(
                    "should be one of {} for binop {}, got {}",
                    types_text(allowed),
                    op,
                    v.ty()
                ),
            ));
        }
    }
    if l.ty() != r.ty() {
        return Err(type_error(rhs, l.ty(), r));
    }

    let v = match (l, r) {
        (Value::Bool(a), Value::Bool(b)) => match op {
            BinaryOp::Or => Value::Bool(*a || *b),
            BinaryOp::And => Value::Bool(*a && *b),
            _ => unreachable_op(op, lhs)?,
        },
        (Value::String(a), Value::String(b)) => match op {
            BinaryOp::Add => {
                let mut s = String::with_capacity(a.len() + b.len());
                s.push_str(a);
                s.push_str(b);
                Value::String(s)
            }
            BinaryOp::Lt => Value::Bool(a < b),
            BinaryOp::LtEq => Value::Bool(a <= b),
            BinaryOp::Gt => Value::Bool(a > b),
            BinaryOp::GtEq => Value::Bool(a >= b),
            _ => unreachable_op(op, lhs)?,
        },
        (Value::Secret(a), Value::Secret(b)) => match op {
            BinaryOp::Add => {
                let mut s = String::with_capacity(a.expose().len() + b.expose().len());
                s.push_str(a.expose());
                s.push_str(b.expose());
                Value::Secret(Secret::new(s))
            }
            _ => unreachable_op(op, lhs)?,
        },
        (Value::Number(a), Value::Number(b)) => number_op(op, *a, *b, rhs)?,
        _ => unreachable_op(op, lhs)?,
    };
    Ok(v)
}

/// Only reachable if `allowed_types` and the match above disagree; reported rather than
/// panicking so that a mistake here cannot take the process down.
fn unreachable_op(op: BinaryOp, lhs: &Expr) -> Result<Value, Diagnostic> {
    Err(Diagnostic::error(
        lhs.span,
        format!("internal error: unsupported operands for binop {op}"),
    ))
}

fn number_op(op: BinaryOp, a: Number, b: Number, rhs: &Expr) -> Result<Value, Diagnostic> {
    let k = fit(a, b);
    if matches!(op, BinaryOp::Div | BinaryOp::Mod) {
        // The divisor's own representation decides what zero is (Alloy checks rhs.Kind()).
        let zero = match b {
            Number::Int(i) => i == 0,
            Number::Uint(u) => u == 0,
            Number::Float(f) => f == 0.0,
        };
        if zero {
            return Err(value_error(rhs, &[], "divide by zero error"));
        }
    }
    let num = |n: Number| Value::Number(n);
    Ok(match op {
        BinaryOp::Add => match k {
            Kind::Uint => num(Number::Uint(
                number_as_u64(a).wrapping_add(number_as_u64(b)),
            )),
            Kind::Int => num(Number::Int(number_as_i64(a).wrapping_add(number_as_i64(b)))),
            Kind::Float => num(Number::Float(a.as_f64() + b.as_f64())),
        },
        BinaryOp::Sub => match k {
            Kind::Uint => num(Number::Uint(
                number_as_u64(a).wrapping_sub(number_as_u64(b)),
            )),
            Kind::Int => num(Number::Int(number_as_i64(a).wrapping_sub(number_as_i64(b)))),
            Kind::Float => num(Number::Float(a.as_f64() - b.as_f64())),
        },
        BinaryOp::Mul => match k {
            Kind::Uint => num(Number::Uint(
                number_as_u64(a).wrapping_mul(number_as_u64(b)),
            )),
            Kind::Int => num(Number::Int(number_as_i64(a).wrapping_mul(number_as_i64(b)))),
            Kind::Float => num(Number::Float(a.as_f64() * b.as_f64())),
        },
        // A float divisor like 0.5 converted to an int kind could become zero; Go would panic
        // there, we report the division by zero instead.
        BinaryOp::Div => match k {
            Kind::Uint => match number_as_u64(a).checked_div(number_as_u64(b)) {
                Some(q) => num(Number::Uint(q)),
                None => return Err(value_error(rhs, &[], "divide by zero error")),
            },
            Kind::Int => {
                let d = number_as_i64(b);
                if d == 0 {
                    return Err(value_error(rhs, &[], "divide by zero error"));
                }
                num(Number::Int(number_as_i64(a).wrapping_div(d)))
            }
            Kind::Float => num(Number::Float(a.as_f64() / b.as_f64())),
        },
        BinaryOp::Mod => match k {
            Kind::Uint => match number_as_u64(a).checked_rem(number_as_u64(b)) {
                Some(q) => num(Number::Uint(q)),
                None => return Err(value_error(rhs, &[], "divide by zero error")),
            },
            Kind::Int => {
                let d = number_as_i64(b);
                if d == 0 {
                    return Err(value_error(rhs, &[], "divide by zero error"));
                }
                num(Number::Int(number_as_i64(a).wrapping_rem(d)))
            }
            // Rust's `%` on floats is C's fmod, like Go's math.Mod.
            Kind::Float => num(Number::Float(a.as_f64() % b.as_f64())),
        },
        BinaryOp::Pow => match k {
            Kind::Uint => num(Number::Uint(int_pow_u64(
                number_as_u64(a),
                number_as_u64(b),
            ))),
            Kind::Int => num(Number::Int(int_pow_i64(number_as_i64(a), number_as_i64(b)))),
            Kind::Float => num(Number::Float(a.as_f64().powf(b.as_f64()))),
        },
        BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => {
            let ord = match k {
                Kind::Uint => number_as_u64(a).partial_cmp(&number_as_u64(b)),
                Kind::Int => number_as_i64(a).partial_cmp(&number_as_i64(b)),
                Kind::Float => a.as_f64().partial_cmp(&b.as_f64()),
            };
            use std::cmp::Ordering::*;
            // NaN compares false with everything, as in Go.
            let res = match (op, ord) {
                (_, None) => false,
                (BinaryOp::Lt, Some(o)) => o == Less,
                (BinaryOp::LtEq, Some(o)) => o != Greater,
                (BinaryOp::Gt, Some(o)) => o == Greater,
                (_, Some(o)) => o != Less,
            };
            Value::Bool(res)
        }
        _ => return unreachable_op(op, rhs),
    })
}
