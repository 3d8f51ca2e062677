//! Runtime values of the Alloy language.
//!
//! Equality is deep and is what the runtime uses to decide whether exports or arguments changed,
//! so every variant must compare cheaply and meaningfully: capsules and functions compare by
//! identity, numbers compare across int/uint/float (`3 == 3.0`, as in Alloy).

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// An Alloy value.
#[derive(Clone)]
pub enum Value {
    Null,
    Number(Number),
    String(String),
    Bool(bool),
    Array(Vec<Value>),
    /// Objects print with sorted keys in Alloy (Go maps), so a sorted map is the faithful model.
    Object(BTreeMap<String, Value>),
    Function(Function),
    Capsule(Capsule),
    Secret(Secret),
}

/// The type names Alloy uses in its error messages ("expected string, got number").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Null,
    Number,
    String,
    Bool,
    Array,
    Object,
    Function,
    Capsule,
    Secret,
}

impl Type {
    pub fn as_str(self) -> &'static str {
        match self {
            Type::Null => "null",
            Type::Number => "number",
            Type::String => "string",
            Type::Bool => "bool",
            Type::Array => "array",
            Type::Object => "object",
            Type::Function => "function",
            Type::Capsule => "capsule",
            Type::Secret => "secret",
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Value {
    pub fn ty(&self) -> Type {
        match self {
            Value::Null => Type::Null,
            Value::Number(_) => Type::Number,
            Value::String(_) => Type::String,
            Value::Bool(_) => Type::Bool,
            Value::Array(_) => Type::Array,
            Value::Object(_) => Type::Object,
            Value::Function(_) => Type::Function,
            Value::Capsule(_) => Type::Capsule,
            Value::Secret(_) => Type::Secret,
        }
    }

    pub fn string(s: impl Into<String>) -> Value {
        Value::String(s.into())
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            (Value::Function(a), Value::Function(b)) => a == b,
            (Value::Capsule(a), Value::Capsule(b)) => a == b,
            (Value::Secret(a), Value::Secret(b)) => a == b,
            _ => false,
        }
    }
}

/// A number keeps the representation Go's parser chose (int, then uint, then float).
#[derive(Clone, Copy, Debug)]
pub enum Number {
    Int(i64),
    Uint(u64),
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Uint(u) => u as f64,
            Number::Float(f) => f,
        }
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        match (*self, *other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            (Number::Uint(a), Number::Uint(b)) => a == b,
            (Number::Int(a), Number::Uint(b)) | (Number::Uint(b), Number::Int(a)) => {
                a >= 0 && a as u64 == b
            }
            (a, b) => a.as_f64() == b.as_f64(),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Int(i) => write!(f, "{i}"),
            Number::Uint(u) => write!(f, "{u}"),
            Number::Float(x) => write!(f, "{x}"),
        }
    }
}

/// A string that must never be shown: Debug and Display print `(secret)`.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret text. Call only where the value is sent to its destination (an auth header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(secret)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(secret)")
    }
}

/// Signature of a standard-library function.
pub type NativeFn = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// A callable value. Two functions are equal when they are the same function.
#[derive(Clone)]
pub struct Function {
    pub name: &'static str,
    pub func: Arc<NativeFn>,
}

impl PartialEq for Function {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.func, &other.func)
    }
}

/// An opaque host value passed between components, such as a profile receiver.
/// Two capsules are equal when they hold the same allocation, so re-exporting the same receiver
/// does not trigger re-evaluation of dependants.
#[derive(Clone)]
pub struct Capsule {
    /// A human-readable type name for error messages and the API (`pyroscope.Appendable`).
    pub type_name: &'static str,
    pub inner: Arc<dyn Any + Send + Sync>,
}

impl Capsule {
    pub fn new<T: Any + Send + Sync>(type_name: &'static str, value: Arc<T>) -> Self {
        Capsule {
            type_name,
            inner: value,
        }
    }

    pub fn downcast<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.inner.clone().downcast::<T>().ok()
    }
}

impl PartialEq for Capsule {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Number(n) => write!(f, "{n}"),
            Value::String(s) => write!(f, "{s:?}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Array(a) => f.debug_list().entries(a).finish(),
            Value::Object(o) => f.debug_map().entries(o).finish(),
            Value::Function(func) => write!(f, "function({})", func.name),
            Value::Capsule(c) => write!(f, "capsule({})", c.type_name),
            Value::Secret(_) => f.write_str("(secret)"),
        }
    }
}
