//! Expression evaluation with Alloy's semantics, and evaluation of whole block bodies.
//!
//! Error messages follow `syntax/vm` in grafana/alloy: a problem with a value is reported as
//! `<expression text> <message>` at the span of the sub-expression that produced the value
//! (`"a" should be number, got string`, `0 divide by zero error`), and lookups report
//! `identifier "x" does not exist` / `field "x" does not exist`.
//!
//! Values are never cloned on the way through a reference chain: `discovery.relabel.x.output`
//! borrows from the scope until the final value, so large target lists are copied once.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

use super::ast::{self, BinaryOp, Expr, ExprKind, LiteralValue, Span, UnaryOp};
use super::diag::Diagnostic;
use super::stdlib;
use super::value::{Number, Secret, Type, Value};

// ---------------------------------------------------------------------------------------------
// Scope
// ---------------------------------------------------------------------------------------------

/// The variables visible to expressions: the standard library plus whatever the runtime adds
/// (component exports as nested objects).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    vars: HashMap<String, Value>,
}

impl Scope {
    /// An empty scope: not even the standard library.
    pub fn new() -> Self {
        Scope::default()
    }

    /// The standard library: `sys`, `constants`, `string`, `encoding`, `array`, `convert`, `file`,
    /// `coalesce`, and the deprecated top-level aliases (`env`, `concat`, ...).
    pub fn stdlib() -> Self {
        Scope {
            vars: stdlib::identifiers()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// Adds or replaces a top-level name.
    pub fn set(&mut self, name: &str, value: Value) {
        self.vars.insert(name.to_string(), value);
    }

    /// Removes a top-level name, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.vars.remove(name)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.vars.get(name)
    }

    /// Follows a path of object keys from a top-level name (`["discovery", "relabel", "x"]`).
    pub fn lookup_path(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut cur = self.vars.get(*first)?;
        for key in rest {
            match cur {
                Value::Object(m) => cur = m.get(*key)?,
                _ => return None,
            }
        }
        Some(cur)
    }

    /// Stores `value` under a dotted path, creating or merging nested objects on the way:
    /// `insert_path(&["discovery", "relabel", "otel"], exports)` makes
    /// `discovery.relabel.otel` resolve to `exports` while keeping `discovery.relabel.other` and
    /// anything else already under `discovery`. A non-object found on the way (a stdlib
    /// function, say) is replaced by an object: a component named like a stdlib namespace wins.
    /// An empty path does nothing.
    pub fn insert_path(&mut self, path: &[&str], value: Value) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.vars.insert((*first).to_string(), value);
            return;
        }
        let slot = self
            .vars
            .entry((*first).to_string())
            .or_insert_with(|| Value::Object(BTreeMap::new()));
        insert_nested(slot, rest, value);
    }

    /// Removes the value stored by [`Scope::insert_path`] at `path`, pruning objects left empty
    /// (so a deleted component does not leave `discovery = {}` behind to shadow nothing).
    pub fn remove_path(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.vars.remove(*first);
            return;
        }
        let now_empty = match self.vars.get_mut(*first) {
            Some(v) => remove_nested(v, rest),
            None => false,
        };
        if now_empty {
            self.vars.remove(*first);
            // Restore a stdlib namespace the component had shadowed.
            if let Some(std) = stdlib::identifiers().get(*first) {
                self.vars.insert((*first).to_string(), std.clone());
            }
        }
    }
}

fn insert_nested(slot: &mut Value, path: &[&str], value: Value) {
    if !matches!(slot, Value::Object(_)) {
        *slot = Value::Object(BTreeMap::new());
    }
    let Value::Object(map) = slot else {
        return;
    };
    match path {
        [] => {}
        [last] => {
            map.insert((*last).to_string(), value);
        }
        [first, rest @ ..] => {
            let next = map
                .entry((*first).to_string())
                .or_insert_with(|| Value::Object(BTreeMap::new()));
            insert_nested(next, rest, value);
        }
    }
}

/// Returns whether `slot` is an empty object after the removal.
fn remove_nested(slot: &mut Value, path: &[&str]) -> bool {
    let Value::Object(map) = slot else {
        return false;
    };
    match path {
        [] => {}
        [last] => {
            map.remove(*last);
        }
        [first, rest @ ..] => {
            if let Some(next) = map.get_mut(*first)
                && remove_nested(next, rest)
            {
                map.remove(*first);
            }
        }
    }
    map.is_empty()
}

// ---------------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------------

/// Evaluates an expression.
pub fn eval_expr(expr: &Expr, scope: &Scope) -> Result<Value, Diagnostic> {
    eval(expr, scope).map(Cow::into_owned)
}

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

fn type_error(expr: &Expr, expected: Type, got: &Value) -> Diagnostic {
    value_error(
        expr,
        &[],
        &format!("should be {}, got {}", expected, got.ty()),
    )
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
    let missing = || Diagnostic::error(name.span, format!("field {:?} does not exist", name.name));
    match base {
        Cow::Borrowed(Value::Object(m)) => m.get(&name.name).map(Cow::Borrowed).ok_or_else(missing),
        Cow::Owned(Value::Object(mut m)) => {
            m.remove(&name.name).map(Cow::Owned).ok_or_else(missing)
        }
        other if other.is_object_view() => other
            .object_view()
            .and_then(|mut m| m.remove(&name.name))
            .map(Cow::Owned)
            .ok_or_else(missing),
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

/// Go's `int64(x)` conversion of a number (floats truncate toward zero, saturating like Go on
/// amd64 for out-of-range values is not guaranteed, so we saturate).
fn number_as_i64(n: Number) -> i64 {
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

fn binary(op: BinaryOp, l: &Value, r: &Value, lhs: &Expr, rhs: &Expr) -> Result<Value, Diagnostic> {
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

// ---------------------------------------------------------------------------------------------
// Literals
// ---------------------------------------------------------------------------------------------

fn literal_value(lit: &ast::Literal) -> Result<Value, String> {
    Ok(match &lit.value {
        LiteralValue::Null => Value::Null,
        LiteralValue::Bool(b) => Value::Bool(*b),
        LiteralValue::String(s) => Value::String(s.clone()),
        LiteralValue::Number => Value::Number(parse_number(&lit.raw)?),
    })
}

/// Converts number literal text the way Alloy does: Go's `strconv.ParseInt(s, 0, 64)`, then
/// `ParseUint(s, 0, 64)`, then `ParseFloat(s, 64)`. Base prefixes apply, so a leading zero means
/// octal (`010` is 8) and `08`, invalid octal, falls through to the float 8.
pub fn parse_number(text: &str) -> Result<Number, String> {
    if let Some(i) = go_parse_int(text) {
        return Ok(Number::Int(i));
    }
    if let Some(u) = go_parse_uint(text) {
        return Ok(Number::Uint(u));
    }
    go_parse_float(text).map(Number::Float)
}

/// Go's `underscoreOK`: underscores only between digits or after a base prefix.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    // saw: '^' start, '0' digit or prefix, '_' underscore, '!' other
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut hex = false;
    if b.len() - i >= 2 && b[i] == b'0' {
        let c = b[i + 1] | 0x20;
        if c == b'x' || c == b'o' || c == b'b' {
            hex = c == b'x';
            i += 2;
            saw = b'0';
        }
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && (c | 0x20).is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseUint(s, 0, 64)`. `None` on any error.
fn go_parse_uint(s: &str) -> Option<u64> {
    let (base, digits) = if let Some(rest) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, rest)
    } else if let Some(rest) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (2, rest)
    } else if let Some(rest) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (8, rest)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() {
        return None;
    }
    let mut has_underscore = false;
    let mut n: u64 = 0;
    for c in digits.chars() {
        if c == '_' {
            has_underscore = true;
            continue;
        }
        let d = c.to_digit(base)?;
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    if has_underscore && !underscore_ok(s) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(body)?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            Some((u as i64).wrapping_neg())
        } else {
            None
        }
    } else if u <= i64::MAX as u64 {
        Some(u as i64)
    } else {
        None
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms (hexadecimal floats cannot come from
/// the scanner and are rejected). Out-of-range values are errors, as in Go.
fn go_parse_float(s: &str) -> Result<f64, String> {
    let syntax = || format!("strconv.ParseFloat: parsing {s:?}: invalid syntax");
    if s.contains('_') {
        // Go allows underscores only with a base prefix, which decimal floats do not have.
        return Err(syntax());
    }
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if body.starts_with("0x") {
        return Err(syntax());
    }
    let f: f64 = s.parse().map_err(|_| syntax())?;
    if f.is_infinite() && !body.starts_with("inf") {
        return Err(format!(
            "strconv.ParseFloat: parsing {s:?}: value out of range"
        ));
    }
    Ok(f)
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest decimal that round-trips, never in
/// exponent form. Used for number -> string conversion.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        // Go's `FormatFloat(f, 'f', -1, 64)`: shortest round-trip, no exponent.
        crate::gocompat::strconv::shortest_fixed(f)
    }
}

/// A number as Alloy converts it to a string (number -> string attribute conversion).
pub fn number_to_string(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Uint(u) => u.to_string(),
        Number::Float(f) => format_float(f),
    }
}

/// Alloy's string -> number conversion for attributes: a leading `-` parses as a signed base-10
/// int, text containing `.`, `e` or `E` as a float, anything else as an unsigned base-10 int.
pub fn string_to_number(s: &str) -> Option<Number> {
    if s.is_empty() {
        return None;
    }
    if s.starts_with('-') {
        return s.parse::<i64>().ok().map(Number::Int);
    }
    if s.contains(['.', 'e', 'E']) {
        return go_parse_float(s).ok().map(Number::Float);
    }
    if s.starts_with('+') {
        // Go's ParseUint rejects a sign.
        return None;
    }
    s.parse::<u64>().ok().map(Number::Uint)
}

// ---------------------------------------------------------------------------------------------
// Printing expressions (for messages)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Bodies
// ---------------------------------------------------------------------------------------------

/// A block body with every attribute evaluated, ready to decode into component arguments.
///
/// Equality ignores spans and expressions: re-evaluating an unchanged block after an edit
/// elsewhere in the file gives an equal body, so the runtime can skip the component's update.
#[derive(Clone, Debug, Default)]
pub struct EvaluatedBody {
    pub attributes: Vec<EvaluatedAttribute>,
    pub blocks: Vec<EvaluatedBlock>,
}

#[derive(Debug)]
pub struct EvaluatedAttribute {
    pub name: String,
    pub value: Value,
    /// The whole `name = value` statement.
    pub span: Span,
    /// The value expression; decode errors point into it.
    pub value_span: Span,
    /// The expression the value came from, kept so decode errors can quote the innermost
    /// literal at fault as Alloy does. `None` for bodies built by hand.
    pub expr: Option<Box<Expr>>,
    /// Set by the decoder when the component's arguments take this attribute as a secret, so
    /// that a plain string written in the config (`password = "..."`) is redacted from the
    /// API like a secret value. Interior mutability because decoding borrows the body.
    pub sensitive: AtomicBool,
}

impl Clone for EvaluatedAttribute {
    fn clone(&self) -> Self {
        EvaluatedAttribute {
            name: self.name.clone(),
            value: self.value.clone(),
            span: self.span,
            value_span: self.value_span,
            expr: self.expr.clone(),
            sensitive: AtomicBool::new(self.is_sensitive()),
        }
    }
}

impl EvaluatedAttribute {
    pub fn is_sensitive(&self) -> bool {
        self.sensitive.load(Ordering::Relaxed)
    }

    pub(crate) fn mark_sensitive(&self) {
        self.sensitive.store(true, Ordering::Relaxed);
    }
}

#[derive(Clone, Debug)]
pub struct EvaluatedBlock {
    /// The dotted name, `profile.memory`.
    pub name: String,
    pub label: Option<String>,
    pub body: EvaluatedBody,
    /// The whole block.
    pub span: Span,
    /// The name and label, where errors about the block as a whole point.
    pub header_span: Span,
}

impl PartialEq for EvaluatedBody {
    fn eq(&self, other: &Self) -> bool {
        self.attributes == other.attributes && self.blocks == other.blocks
    }
}

impl PartialEq for EvaluatedAttribute {
    fn eq(&self, other: &Self) -> bool {
        // Value's PartialEq (not `values_equal`): functions and capsules compare by identity,
        // so an unchanged receiver does not look different.
        self.name == other.name && self.value == other.value
    }
}

impl PartialEq for EvaluatedBlock {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.label == other.label && self.body == other.body
    }
}

impl EvaluatedAttribute {
    /// An attribute built by hand (no source expression).
    pub fn new(name: impl Into<String>, value: Value, span: Span) -> Self {
        EvaluatedAttribute {
            name: name.into(),
            value,
            span,
            value_span: span,
            expr: None,
            sensitive: AtomicBool::new(false),
        }
    }
}

impl EvaluatedBody {
    pub fn attribute(&self, name: &str) -> Option<&EvaluatedAttribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    pub fn blocks_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a EvaluatedBlock> {
        self.blocks.iter().filter(move |b| b.name == name)
    }

    /// The body as plain JSON for the web API: attributes become keys, blocks become arrays of
    /// objects under their name (a labelled block's object carries its label under `"$label"`).
    /// Secrets print as `"(secret)"`, capsules as `"capsule(<type>)"`, functions as
    /// `"function(<name>)"`. Objects keep Alloy's sorted key order.
    pub fn to_json_redacted(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for a in &self.attributes {
            let json = if a.is_sensitive() {
                serde_json::Value::String("(secret)".to_string())
            } else {
                value_to_json_redacted(&a.value)
            };
            out.insert(a.name.clone(), json);
        }
        for b in &self.blocks {
            let mut obj = match b.body.to_json_redacted() {
                serde_json::Value::Object(m) => m,
                _ => serde_json::Map::new(),
            };
            if let Some(label) = &b.label {
                obj.insert(
                    "$label".to_string(),
                    serde_json::Value::String(label.clone()),
                );
            }
            let entry = out
                .entry(b.name.clone())
                .or_insert_with(|| serde_json::Value::Array(Vec::new()));
            if let serde_json::Value::Array(items) = entry {
                items.push(serde_json::Value::Object(obj));
            }
        }
        serde_json::Value::Object(out)
    }
}

/// A value as JSON with secrets and opaque values redacted (see
/// [`EvaluatedBody::to_json_redacted`]). Numbers that JSON cannot hold (NaN, infinities) become
/// strings.
pub fn value_to_json_redacted(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Number(Number::Int(i)) => J::from(*i),
        Value::Number(Number::Uint(u)) => J::from(*u),
        Value::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .unwrap_or_else(|| J::String(format_float(*f))),
        Value::String(s) => J::String(s.clone()),
        Value::Array(items) => J::Array(items.iter().map(value_to_json_redacted).collect()),
        Value::Object(m) => J::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), value_to_json_redacted(v)))
                .collect(),
        ),
        Value::Function(f) => J::String(format!("function({})", f.name)),
        Value::Capsule(c) => match c.object() {
            Some(m) => value_to_json_redacted(&Value::Object(m)),
            None => J::String(format!("capsule({})", c.type_name)),
        },
        Value::Secret(_) => J::String("(secret)".to_string()),
    }
}

/// Evaluates every attribute of a body and of its nested blocks. All failing attributes are
/// reported, not just the first.
pub fn eval_body(body: &ast::Body, scope: &Scope) -> Result<EvaluatedBody, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let out = eval_body_into(body, scope, &mut errors);
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn eval_body_into(body: &ast::Body, scope: &Scope, errors: &mut Vec<Diagnostic>) -> EvaluatedBody {
    let mut out = EvaluatedBody::default();
    for stmt in &body.stmts {
        match stmt {
            ast::Stmt::Attribute(a) => match eval_expr(&a.value, scope) {
                Ok(value) => out.attributes.push(EvaluatedAttribute {
                    name: a.name.name.clone(),
                    value,
                    span: a.span,
                    value_span: a.value.span,
                    expr: Some(Box::new(a.value.clone())),
                    sensitive: AtomicBool::new(false),
                }),
                Err(d) => errors.push(d),
            },
            ast::Stmt::Block(b) => {
                let inner = eval_body_into(&b.body, scope, errors);
                out.blocks.push(EvaluatedBlock {
                    name: b.full_name(),
                    label: b.label.as_ref().map(|l| l.value.clone()),
                    body: inner,
                    span: b.span,
                    header_span: b.header_span(),
                });
            }
        }
    }
    out
}

/// Warnings for uses of deprecated standard-library names (`env(...)`, `concat(...)`) in a
/// body, with Alloy's wording. Names the runtime has shadowed with a component are the caller's
/// business: pass `scope` so that only names still bound to the stdlib are reported.
pub fn deprecation_warnings(body: &ast::Body, scope: &Scope) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    body.for_each_reference(&mut |parts, span| {
        if let Some(first) = parts.first()
            && stdlib::is_deprecated(first)
            && scope
                .get(first)
                .is_some_and(|v| Some(v) == stdlib::identifiers().get(*first))
        {
            out.push(Diagnostic::warning(span, stdlib::DEPRECATION_MESSAGE));
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::diag::Source;
    use crate::syntax::parser::{parse_expression, parse_file};

    fn scope() -> Scope {
        let mut s = Scope::stdlib();
        s.set("secret", Value::Secret(Secret::new("hunter2")));
        s.set("num", Value::Number(Number::Int(5)));
        let mut nested = BTreeMap::new();
        nested.insert(
            "field1".to_string(),
            Value::Array(vec![
                Value::Number(Number::Int(15)),
                Value::string("Hello, world!"),
            ]),
        );
        let mut outer = BTreeMap::new();
        outer.insert("object".to_string(), Value::Object(nested));
        s.set("key_value", Value::Object(outer));
        s
    }

    /// Evaluates `src`; errors as `line:col: message`.
    fn ev(src: &str) -> Result<Value, String> {
        let expr = parse_expression(src).map_err(|d| format!("parse error: {d:?}"))?;
        eval_expr(&expr, &scope()).map_err(|d| {
            let (l, c) = Source::new("", src).line_col(d.span.map_or(0, |s| s.start as usize));
            format!("{l}:{c}: {}", d.message)
        })
    }

    fn int(i: i64) -> Value {
        Value::Number(Number::Int(i))
    }

    fn float(f: f64) -> Value {
        Value::Number(Number::Float(f))
    }

    /// Exact representation check (PartialEq on Number compares across kinds).
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(Number::Int(x)), Value::Number(Number::Int(y))) => x == y,
            (Value::Number(Number::Uint(x)), Value::Number(Number::Uint(y))) => x == y,
            (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
                x.to_bits() == y.to_bits()
            }
            (Value::Number(_), _) | (_, Value::Number(_)) => false,
            _ => a == b,
        }
    }

    #[test]
    fn values() {
        let cases: &[(&str, Value)] = &[
            // Precedence and associativity.
            ("1 + 2 * 3", int(7)),
            ("(1 + 2) * 3", int(9)),
            ("2 ^ 3 ^ 2", int(512)),
            ("-2 ^ 2", int(4)),
            ("10 - 2 - 3", int(5)),
            ("2 * 3 % 4", int(2)),
            ("1 + 2 == 3 && 4 > 3", Value::Bool(true)),
            ("!false && false || true", Value::Bool(true)),
            ("1 < 2 == true", Value::Bool(true)),
            ("!!true", Value::Bool(true)),
            // Numbers: Go's int -> uint -> float conversion of the literal text.
            ("010", int(8)),
            ("0", int(0)),
            ("08", float(8.0)),
            ("09.5", float(9.5)),
            ("1e3", float(1000.0)),
            ("1.5", float(1.5)),
            ("9223372036854775807", int(i64::MAX)),
            (
                "18446744073709551615",
                Value::Number(Number::Uint(u64::MAX)),
            ),
            ("18446744073709551616", float(18446744073709551616.0)),
            ("-9223372036854775807 - 1", int(i64::MIN)),
            // Arithmetic.
            ("7 / 2", int(3)),
            ("-7 / 2", int(-3)),
            ("7.0 / 2", float(3.5)),
            ("-7 % 3", int(-1)),
            ("7.5 % 2", float(1.5)),
            ("2 ^ 10", int(1024)),
            ("2 ^ 0", int(1)),
            ("2 ^ -1", int(2)),
            ("2.0 ^ -1", float(0.5)),
            ("0 ^ 5", int(0)),
            ("1 + 2.5", float(3.5)),
            // uint op int computes in int (Alloy's fitNumberKinds), wrapping like Go.
            ("18446744073709551615 - 1", int(-2)),
            ("-18446744073709551615", int(1)),
            ("-num", int(-5)),
            // Comparisons.
            ("3 == 3.0", Value::Bool(true)),
            ("3 != 3.0", Value::Bool(false)),
            ("\"a\" < \"b\"", Value::Bool(true)),
            ("\"b\" >= \"b\"", Value::Bool(true)),
            ("1 == \"1\"", Value::Bool(false)),
            ("null == null", Value::Bool(true)),
            ("[1, {a = 2}] == [1.0, {a = 2}]", Value::Bool(true)),
            ("{a = 1} == {a = 1, b = 2}", Value::Bool(false)),
            ("sys.env == sys.env", Value::Bool(false)),
            // Strings are never interpolated.
            ("\"${1}\"", Value::string("${1}")),
            ("\"$1:$2\" + \"$$\"", Value::string("$1:$2$$")),
            ("\"a\" + \"b\"", Value::string("ab")),
            // Indexing and access.
            ("[1, 2, 3][1]", int(2)),
            ("[1, 2, 3][1.9]", int(2)),
            ("{a = 1}[\"a\"]", int(1)),
            ("{a = 1}[\"b\"]", Value::Null),
            (
                "{ \"app.kubernetes.io/name\" = \"x\" }[\"app.kubernetes.io/name\"]",
                Value::string("x"),
            ),
            ("{a = {b = [10, 20]}}.a.b[1]", int(20)),
            ("key_value.object.field1[0]", int(15)),
            ("{a = 1, a = 2}.a", int(2)),
            ("constants.os", Value::string(std::env::consts::OS)),
        ];
        for (src, want) in cases {
            match ev(src) {
                Ok(got) => assert!(same(&got, want), "{src}: got {got:?}, want {want:?}"),
                Err(e) => panic!("{src}: {e}"),
            }
        }
    }

    #[test]
    fn errors() {
        let cases: &[(&str, &str)] = &[
            ("foobar", "1:1: identifier \"foobar\" does not exist"),
            ("{ a = 15 }.b", "1:12: field \"b\" does not exist"),
            ("1 + \"a\"", "1:5: \"a\" should be number, got string"),
            (
                "true + 1",
                "1:1: true should be one of [number string secret] for binop +, got bool",
            ),
            (
                "1 - \"a\"",
                "1:5: \"a\" should be one of [number] for binop -, got string",
            ),
            (
                "1 && true",
                "1:1: 1 should be one of [bool] for binop &&, got number",
            ),
            ("1 / 0", "1:5: 0 divide by zero error"),
            ("1 % 0", "1:5: 0 divide by zero error"),
            ("1.5 / 0.0", "1:7: 0.0 divide by zero error"),
            ("10 / (5 - 5)", "1:6: (5 - 5) divide by zero error"),
            (
                "[1, 2, 3][3]",
                "1:11: 3 index 3 is out of range of array with length 3",
            ),
            (
                "[1, 2, 3][-1]",
                "1:11: -1 index -1 is out of range of array with length 3",
            ),
            ("[1][\"a\"]", "1:5: \"a\" should be number, got string"),
            ("{a = 1}[0]", "1:9: 0 should be string, got number"),
            ("1[0]", "1:1: 1 expected object or array, got number"),
            (
                "(1).a",
                "1:1: (1) cannot access field \"a\" on value of type number",
            ),
            (
                "num.a",
                "1:1: num cannot access field \"a\" on value of type number",
            ),
            ("\"a\"()", "1:1: \"a\" should be function, got string"),
            ("!1", "1:2: 1 should be bool, got number"),
            ("-\"a\"", "1:2: \"a\" should be number, got string"),
            ("\"a\" < 1", "1:7: 1 should be string, got number"),
            (
                "[1] < [2]",
                "1:1: [1] should be one of [number string] for binop <, got array",
            ),
            (
                "key_value.object.nope",
                "1:18: field \"nope\" does not exist",
            ),
            // Errors deep inside expressions point at the innermost sub-expression.
            (
                "[1, 2, 1 + true]",
                "1:12: true should be one of [number string secret] for binop +, got bool",
            ),
            ("{ a = { b = x } }", "1:13: identifier \"x\" does not exist"),
        ];
        for (src, want) in cases {
            match ev(src) {
                Ok(v) => panic!("{src}: expected an error, got {v:?}"),
                Err(e) => assert_eq!(&e, want, "{src}"),
            }
        }
    }

    #[test]
    fn secrets() {
        let s = |v: &str| Value::Secret(Secret::new(v));
        let cases: &[(&str, Value)] = &[
            ("\"Bearer \" + secret", s("Bearer hunter2")),
            ("secret + \"!\"", s("hunter2!")),
            ("secret + secret", s("hunter2hunter2")),
            ("secret == \"hunter2\"", Value::Bool(true)),
            ("\"hunter2\" == secret", Value::Bool(true)),
            ("secret != \"x\"", Value::Bool(true)),
            ("convert.nonsensitive(secret)", Value::string("hunter2")),
            ("nonsensitive(secret)", Value::string("hunter2")),
            ("convert.nonsensitive(\"plain\")", Value::string("plain")),
            ("string.format(\"%s!\", secret)", s("hunter2!")),
            ("encoding.to_json({a = secret})", s("{\"a\":\"hunter2\"}")),
            ("coalesce(secret, \"x\")", s("hunter2")),
        ];
        for (src, want) in cases {
            match ev(src) {
                Ok(got) => assert_eq!(&got, want, "{src}"),
                Err(e) => panic!("{src}: {e}"),
            }
        }
        // No error message ever shows the secret's text.
        let errors = [
            "secret < \"a\"",
            "secret - 1",
            "string.to_upper(secret)",
            "string.join([secret], \",\")",
            "encoding.to_base64(secret)",
            "secret.x",
            "secret[0]",
            "secret()",
            "-secret",
            "!secret",
            "[secret][1]",
        ];
        for src in errors {
            let e = ev(src).expect_err(src);
            assert!(!e.contains("hunter2"), "{src}: {e}");
        }
        assert_eq!(
            ev("string.to_upper(secret)").err().as_deref(),
            Some("1:17: secret secrets may not be converted into strings")
        );
        assert_eq!(format!("{:?}", scope().get("secret")), "Some((secret))");
    }

    #[test]
    fn number_text() {
        assert_eq!(number_to_string(Number::Float(1.0)), "1");
        assert_eq!(number_to_string(Number::Float(0.1)), "0.1");
        assert_eq!(
            number_to_string(Number::Float(1e21)),
            "1000000000000000000000"
        );
        assert_eq!(number_to_string(Number::Float(1e-7)), "0.0000001");
        assert_eq!(number_to_string(Number::Float(f64::INFINITY)), "+Inf");
        assert_eq!(number_to_string(Number::Int(-3)), "-3");
        assert!(matches!(string_to_number("-3"), Some(Number::Int(-3))));
        assert!(matches!(string_to_number("3"), Some(Number::Uint(3))));
        assert!(matches!(string_to_number("3.5"), Some(Number::Float(_))));
        assert!(matches!(string_to_number("1e3"), Some(Number::Float(_))));
        assert!(string_to_number("").is_none());
        assert!(string_to_number("+3").is_none());
        assert!(string_to_number("0x10").is_none());
        assert!(string_to_number("abc").is_none());
        // Hand-built literal texts follow strconv's base prefixes and underscore rules.
        assert!(matches!(parse_number("0x1F"), Ok(Number::Int(31))));
        assert!(matches!(parse_number("0b101"), Ok(Number::Int(5))));
        assert!(matches!(parse_number("0o17"), Ok(Number::Int(15))));
        assert!(matches!(parse_number("1_000"), Ok(Number::Int(1000))));
        assert!(parse_number("1__0").is_err());
        assert!(parse_number("_1").is_err());
        assert_eq!(
            parse_number("1e400").err().as_deref(),
            Some("strconv.ParseFloat: parsing \"1e400\": value out of range")
        );
    }

    #[test]
    fn scope_paths() {
        let mut s = Scope::stdlib();
        let out = |v: i64| {
            let mut m = BTreeMap::new();
            m.insert("output".to_string(), int(v));
            Value::Object(m)
        };
        s.insert_path(&["discovery", "relabel", "a"], out(1));
        s.insert_path(&["discovery", "relabel", "b"], out(2));
        s.insert_path(&["discovery", "kubernetes", "pods"], out(3));
        assert_eq!(
            s.lookup_path(&["discovery", "relabel", "a", "output"]),
            Some(&int(1))
        );
        assert_eq!(
            s.lookup_path(&["discovery", "relabel", "b", "output"]),
            Some(&int(2))
        );
        assert_eq!(
            s.lookup_path(&["discovery", "kubernetes", "pods", "output"]),
            Some(&int(3))
        );
        // Merged with a stdlib namespace of the same root: both stay reachable.
        s.insert_path(&["string", "custom", "x"], out(4));
        assert!(matches!(
            s.lookup_path(&["string", "join"]),
            Some(Value::Function(_))
        ));
        assert_eq!(
            s.lookup_path(&["string", "custom", "x", "output"]),
            Some(&int(4))
        );
        // A component named like a stdlib function wins over it.
        s.insert_path(&["coalesce", "x"], out(5));
        assert_eq!(s.lookup_path(&["coalesce", "x", "output"]), Some(&int(5)));
        // Expressions see the merged tree.
        let e = parse_expression("discovery.relabel.b.output + string.custom.x.output")
            .expect("parses");
        assert_eq!(eval_expr(&e, &s), Ok(int(6)));
        // Overwriting replaces the leaf only.
        s.insert_path(&["discovery", "relabel", "a"], out(7));
        assert_eq!(
            s.lookup_path(&["discovery", "relabel", "a", "output"]),
            Some(&int(7))
        );
        assert_eq!(
            s.lookup_path(&["discovery", "relabel", "b", "output"]),
            Some(&int(2))
        );
        // Removal prunes empty objects and restores a shadowed stdlib name.
        s.remove_path(&["discovery", "relabel", "a"]);
        s.remove_path(&["discovery", "relabel", "b"]);
        assert!(s.lookup_path(&["discovery", "relabel"]).is_none());
        assert!(s.lookup_path(&["discovery", "kubernetes"]).is_some());
        s.remove_path(&["coalesce", "x"]);
        assert!(matches!(s.get("coalesce"), Some(Value::Function(_))));
    }

    fn body_of(src: &str) -> ast::Body {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        file.body
    }

    #[test]
    fn bodies() {
        let src = "a = 1 + 1\nblk \"l\" {\n  b = \"x\"\n  inner { c = [1] }\n}\n";
        let s = Scope::stdlib();
        let body = eval_body(&body_of(src), &s).expect("evaluates");
        assert_eq!(body.attributes.len(), 1);
        assert_eq!(body.attributes[0].value, int(2));
        assert_eq!(body.blocks[0].name, "blk");
        assert_eq!(body.blocks[0].label.as_deref(), Some("l"));
        assert_eq!(body.blocks[0].body.blocks[0].name, "inner");

        // Equality ignores spans: the same body shifted by an edit elsewhere is equal.
        let shifted =
            eval_body(&body_of(&format!("\n\n// comment\n{src}")), &s).expect("evaluates");
        assert_eq!(body, shifted);
        let changed = eval_body(&body_of(&src.replace("\"x\"", "\"y\"")), &s).expect("evaluates");
        assert_ne!(body, changed);

        // Every failing attribute is reported, nested ones included.
        let errs = eval_body(&body_of("a = x\nb = 1\nc = 1 / 0\nblk {\n d = y\n}\n"), &s)
            .expect_err("fails");
        let msgs: Vec<&str> = errs.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "identifier \"x\" does not exist",
                "0 divide by zero error",
                "identifier \"y\" does not exist"
            ]
        );
    }

    #[test]
    fn json_redacted() {
        let mut s = Scope::stdlib();
        s.set("secret", Value::Secret(Secret::new("hunter2")));
        s.set(
            "recv",
            Value::Capsule(super::super::value::Capsule::new(
                "pyroscope.Appendable",
                std::sync::Arc::new(1u8),
            )),
        );
        let src = "password = secret\nforward_to = [recv]\nn = 1.5\nlabels = { a = \"b\" }\nprofile.custom \"x\" {\n  path = \"/p\"\n}\n";
        let body = eval_body(&body_of(src), &s).expect("evaluates");
        let j = body.to_json_redacted();
        assert_eq!(
            j,
            serde_json::json!({
                "password": "(secret)",
                "forward_to": ["capsule(pyroscope.Appendable)"],
                "n": 1.5,
                "labels": {"a": "b"},
                "profile.custom": [{"$label": "x", "path": "/p"}],
            })
        );
        assert!(!j.to_string().contains("hunter2"));
    }

    #[test]
    fn deprecations() {
        let body = body_of("a = env(\"X\")\nb = sys.env(\"X\")\nc = concat([], [])\n");
        let w = deprecation_warnings(&body, &Scope::stdlib());
        assert_eq!(w.len(), 2);
        assert!(w.iter().all(|d| d.message == stdlib::DEPRECATION_MESSAGE));
    }
}
