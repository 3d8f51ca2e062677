//! Targets as Alloy values: `list(map(string))` to users, shared label sets underneath.
//!
//! Every target a discovery component exports is a capsule that stands for its object (like
//! Alloy's own `discovery.Target`): expressions, functions, JSON and the UI see a map of
//! strings, while components that decode it into a [`LabelSet`] get the labels without
//! copying a single string. A cluster's 100,000 targets then pass from
//! `discovery.kubernetes` through `discovery.relabel` as pointer copies.

pub mod container;
pub mod group;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize as _;

use crate::labels::LabelSet;
use crate::syntax::value::{Capsule, ObjectView, Value};

/// The capsule's type name, as errors and the API show it.
pub const TYPE_NAME: &str = "discovery.Target";

fn labels(v: &(dyn Any + Send + Sync)) -> Option<&LabelSet> {
    v.downcast_ref::<LabelSet>()
}

fn to_object(v: &(dyn Any + Send + Sync)) -> BTreeMap<String, Value> {
    labels(v)
        .map(|l| {
            l.iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn eq(a: &(dyn Any + Send + Sync), b: &(dyn Any + Send + Sync)) -> bool {
    labels(a).is_some_and(|a| labels(b).is_some_and(|b| a == b))
}

static VIEW: ObjectView = ObjectView { to_object, eq };

/// A target argument that keeps sharing: decoded from a target capsule it is the same label
/// set (a pointer copy); from a plain object (targets written in the config) it is a new one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared(pub Arc<LabelSet>);

impl<'de> serde::Deserialize<'de> for Shared {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Shared;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_u64<E: serde::de::Error>(self, slot: u64) -> Result<Shared, E> {
                crate::syntax::types::take_view::<LabelSet>(slot)
                    .map(Shared)
                    .ok_or_else(|| E::custom("expected map(string), got capsule"))
            }
            fn visit_newtype_struct<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Shared, D::Error> {
                let map = BTreeMap::<String, String>::deserialize(d)?;
                Ok(Shared(Arc::new(LabelSet::from(&map))))
            }
        }
        d.deserialize_newtype_struct(crate::syntax::types::VIEW_NEWTYPE, V)
    }
}

impl From<LabelSet> for Shared {
    fn from(t: LabelSet) -> Self {
        Shared(Arc::new(t))
    }
}

/// A shared target as a value.
pub fn value(target: Arc<LabelSet>) -> Value {
    Value::Capsule(Capsule::with_view(TYPE_NAME, target, &VIEW))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;
    use crate::syntax::eval::{Scope, eval_expr};
    use crate::syntax::parser::parse_expression;

    fn target() -> Arc<LabelSet> {
        Arc::new(
            [("__address__", "10.0.0.1:80"), ("app", "web")]
                .into_iter()
                .collect(),
        )
    }

    fn eval_with(expr: &str, targets: Value) -> Result<Value, String> {
        let mut scope = Scope::stdlib();
        scope.insert_path(&["t"], targets);
        let e = parse_expression(expr).map_err(|d| format!("{d:?}"))?;
        eval_expr(&e, &scope).map_err(|d| format!("{d:?}"))
    }

    #[test]
    fn expressions_see_an_object() {
        let ts = Value::Array(vec![value(target())]);
        let s = |v: Value| match v {
            Value::String(s) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!(s(eval_with("t[0].app", ts.clone()).expect("field")), "web");
        assert_eq!(
            s(eval_with("t[0][\"__address__\"]", ts.clone()).expect("index")),
            "10.0.0.1:80"
        );
        assert_eq!(
            eval_with(
                "t[0] == {\"__address__\" = \"10.0.0.1:80\", app = \"web\"}",
                ts.clone()
            ),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            s(eval_with("encoding.to_json(t[0])", ts.clone()).expect("json")),
            r#"{"__address__":"10.0.0.1:80","app":"web"}"#
        );
        let Value::Array(joined) =
            eval_with("array.concat(t, [{\"__address__\" = \"x:1\"}])", ts).expect("concat")
        else {
            panic!("not an array")
        };
        assert_eq!(joined.len(), 2);
        assert!(joined[0].is_object_view(), "concat keeps the shared target");
    }

    #[test]
    fn decodes_shared_or_as_a_map() {
        let t = target();
        let v = Value::Array(vec![value(t.clone())]);
        let sets: Vec<LabelSet> = decode::from_value(&v).expect("label sets");
        assert_eq!(sets, [(*t).clone()]);
        let shared: Vec<Shared> = decode::from_value(&v).expect("shared");
        assert!(
            Arc::ptr_eq(&shared[0].0, &t),
            "decoding a capsule copies nothing"
        );
        let maps: Vec<BTreeMap<String, String>> = decode::from_value(&v).expect("maps");
        assert_eq!(maps[0]["app"], "web");
        // A plain object still decodes into a label set.
        let plain = Value::Array(vec![Value::Object(to_object(t.as_ref()))]);
        let sets: Vec<LabelSet> = decode::from_value(&plain).expect("from object");
        assert_eq!(sets, [(*t).clone()]);
    }

    #[test]
    fn equal_by_content_not_only_identity() {
        assert_eq!(value(target()), value(target()));
        let other = Arc::new([("app", "db")].into_iter().collect::<LabelSet>());
        assert_ne!(value(target()), value(other));
        assert_eq!(
            crate::syntax::eval::value_to_json_redacted(&value(target()))["app"],
            "web"
        );
    }
}
