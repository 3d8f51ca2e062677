//! Evaluated bodies and values as JSON for the web API. Kept apart from evaluation because it is
//! a view with one rule of its own: secrets, and plain strings the decoder learned are secrets,
//! never leave the process through it.

use super::body::EvaluatedBody;
use super::number::format_float;
use crate::syntax::value::{Number, Value};

impl EvaluatedBody {
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
