use std::borrow::Cow;

use super::*;
use crate::protocols::otlp::proto::common::v1::{ArrayValue, KeyValue, KeyValueList};

fn any(v: any_value::Value) -> AnyValue {
    AnyValue { value: Some(v) }
}

fn array(values: Vec<any_value::Value>) -> any_value::Value {
    any_value::Value::ArrayValue(ArrayValue {
        values: values.into_iter().map(any).collect(),
    })
}

#[test]
fn attribute_values_read_as_pyroscope_reads_them() {
    use any_value::Value as V;
    let kvlist = |n: usize| {
        V::KvlistValue(KeyValueList {
            values: (0..n)
                .map(|i| KeyValue {
                    key: format!("k{i}"),
                    value: Some(any(V::StringValue("v".into()))),
                    key_strindex: 0,
                })
                .collect(),
        })
    };
    let strings: Vec<String> = ["", "from-table"].iter().map(|s| s.to_string()).collect();
    let text = |s: &str| Ok(LabelValue::Text(Cow::Owned(s.to_owned())));
    let dropped = |k| Ok(LabelValue::Dropped(k));
    let absent = || Ok(LabelValue::Absent);
    // (what, value, label value) as Pyroscope v2.2.1's stringValueFromAnyValue gives it.
    let cases: Vec<(&str, Option<AnyValue>, Result<LabelValue, ConvertError>)> = vec![
        ("no AnyValue", None, absent()),
        ("empty AnyValue", Some(AnyValue { value: None }), absent()),
        ("string", Some(any(V::StringValue("go".into()))), text("go")),
        (
            "empty string",
            Some(any(V::StringValue(String::new()))),
            absent(),
        ),
        ("int", Some(any(V::IntValue(42))), text("42")),
        ("zero int", Some(any(V::IntValue(0))), text("0")),
        (
            "negative int",
            Some(any(V::IntValue(i64::MIN))),
            text("-9223372036854775808"),
        ),
        (
            "bool",
            Some(any(V::BoolValue(true))),
            dropped(ValueKind::Bool),
        ),
        (
            "false",
            Some(any(V::BoolValue(false))),
            dropped(ValueKind::Bool),
        ),
        (
            "double",
            Some(any(V::DoubleValue(1.5))),
            dropped(ValueKind::Double),
        ),
        (
            "bytes",
            Some(any(V::BytesValue(vec![1, 2]))),
            dropped(ValueKind::Bytes),
        ),
        (
            "empty bytes",
            Some(any(V::BytesValue(Vec::new()))),
            absent(),
        ),
        ("kvlist", Some(any(kvlist(1))), dropped(ValueKind::Kvlist)),
        ("empty kvlist", Some(any(kvlist(0))), absent()),
        (
            "array of a string",
            Some(any(array(vec![V::StringValue("one".into())]))),
            text("one"),
        ),
        (
            "array of an int",
            Some(any(array(vec![V::IntValue(7)]))),
            text("7"),
        ),
        (
            "array of an empty string",
            Some(any(array(vec![V::StringValue(String::new())]))),
            absent(),
        ),
        (
            "array of a bool",
            Some(any(array(vec![V::BoolValue(true)]))),
            dropped(ValueKind::Array),
        ),
        (
            "array of a double",
            Some(any(array(vec![V::DoubleValue(2.0)]))),
            dropped(ValueKind::Array),
        ),
        (
            "array of two strings",
            Some(any(array(vec![
                V::StringValue("a".into()),
                V::StringValue("b".into()),
            ]))),
            dropped(ValueKind::Array),
        ),
        (
            "array of an array",
            Some(any(array(vec![array(vec![V::IntValue(1)])]))),
            dropped(ValueKind::Array),
        ),
        ("empty array", Some(any(array(Vec::new()))), absent()),
        // Ours: Pyroscope does not read string_value_strindex (no label).
        (
            "string from the table",
            Some(any(V::StringValueStrindex(1))),
            text("from-table"),
        ),
        (
            "array of a string from the table",
            Some(any(array(vec![V::StringValueStrindex(1)]))),
            text("from-table"),
        ),
        (
            "empty string from the table",
            Some(any(V::StringValueStrindex(0))),
            absent(),
        ),
        (
            "string index out of the table",
            Some(any(V::StringValueStrindex(5))),
            Err(ConvertError::OtlpIndex {
                table: "string_table",
                index: 5,
                len: 2,
            }),
        ),
    ];
    for (what, value, want) in cases {
        assert_eq!(label_value(value.as_ref(), &strings), want, "{what}");
    }
}
