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
    /// Set for capsules that stand for an object (Alloy's "capsule convertible to an object",
    /// such as discovery targets): expressions, functions, decoding and JSON see the object.
    pub view: Option<&'static ObjectView>,
}

/// How a capsule that stands for an object turns into it, and compares by content. Targets
/// travel as such capsules so that passing 100,000 of them between components shares them
/// instead of copying every label.
pub struct ObjectView {
    pub to_object: fn(&(dyn Any + Send + Sync)) -> BTreeMap<String, Value>,
    pub eq: fn(&(dyn Any + Send + Sync), &(dyn Any + Send + Sync)) -> bool,
}

impl Capsule {
    pub fn new<T: Any + Send + Sync>(type_name: &'static str, value: Arc<T>) -> Self {
        Capsule {
            type_name,
            inner: value,
            view: None,
        }
    }

    /// A capsule that behaves as the object `view` makes of it.
    pub fn with_view<T: Any + Send + Sync>(
        type_name: &'static str,
        value: Arc<T>,
        view: &'static ObjectView,
    ) -> Self {
        Capsule {
            type_name,
            inner: value,
            view: Some(view),
        }
    }

    pub fn downcast<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.inner.clone().downcast::<T>().ok()
    }

    /// The object this capsule stands for, if it stands for one.
    pub fn object(&self) -> Option<BTreeMap<String, Value>> {
        self.view.map(|v| (v.to_object)(self.inner.as_ref()))
    }
}

impl PartialEq for Capsule {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return true;
        }
        match (self.view, other.view) {
            (Some(a), Some(b)) if std::ptr::eq(a, b) => {
                (a.eq)(self.inner.as_ref(), other.inner.as_ref())
            }
            _ => false,
        }
    }
}

impl Value {
    /// The object a view capsule stands for.
    pub fn object_view(&self) -> Option<BTreeMap<String, Value>> {
        match self {
            Value::Capsule(c) => c.object(),
            _ => None,
        }
    }

    /// True for a capsule that stands for an object.
    pub fn is_object_view(&self) -> bool {
        matches!(self, Value::Capsule(c) if c.view.is_some())
    }

    /// The value with every view capsule inside it replaced by its object, for code that needs
    /// to see plain objects (functions, JSON).
    pub fn materialize(self) -> Value {
        match self {
            Value::Capsule(c) => match c.object() {
                Some(m) => Value::Object(m),
                None => Value::Capsule(c),
            },
            Value::Array(items) if items.iter().any(Value::has_view) => {
                Value::Array(items.into_iter().map(Value::materialize).collect())
            }
            Value::Object(m) if m.values().any(Value::has_view) => {
                Value::Object(m.into_iter().map(|(k, v)| (k, v.materialize())).collect())
            }
            other => other,
        }
    }

    fn has_view(&self) -> bool {
        match self {
            Value::Capsule(c) => c.view.is_some(),
            Value::Array(items) => items.iter().any(Value::has_view),
            Value::Object(m) => m.values().any(Value::has_view),
            _ => false,
        }
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
