//! Attribute values as the labels Pyroscope's OTLP ingestion makes of them ([`label_value`]),
//! for resource, scope and sample attributes alike, and the count of those that have no label
//! form ([`DroppedAttributes`]), which a receiver reports where Pyroscope stays silent.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::convert::{ConvertError, get};
use super::proto::common::v1::{AnyValue, any_value};

/// The kinds of attribute value that have no label form in Pyroscope's OTLP ingestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    Bool,
    Double,
    Bytes,
    /// An array of more than one value, or of one value that is neither a string nor an int.
    Array,
    Kvlist,
}

impl ValueKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ValueKind::Bool => "bool",
            ValueKind::Double => "double",
            ValueKind::Bytes => "bytes",
            ValueKind::Array => "array",
            ValueKind::Kvlist => "kvlist",
        }
    }
}

/// Where an attribute was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    Resource,
    Scope,
    Sample,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Resource => "resource",
            Place::Scope => "scope",
            Place::Sample => "sample",
        }
    }
}

/// What an attribute value is as a label.
#[derive(Debug, PartialEq, Eq)]
pub enum LabelValue<'a> {
    Text(Cow<'a, str>),
    /// No value, or an empty one: nothing is lost by leaving the label out.
    Absent,
    /// A value with content that has no label form: left out, and counted by the caller.
    Dropped(ValueKind),
}

/// An attribute value as the label value Pyroscope's OTLP ingestion makes of it, for resource,
/// scope and sample attributes alike. Followed: grafana/pyroscope v2.2.1 (unchanged on main at
/// 3fe6a457, 2026-08-21), `pkg/ingester/otlp/ingest_handler.go` `stringValueFromAnyValue` and
/// `decodeSingleAnyValue` (since #4988), used by `appendAttributesUnique` and
/// `getServiceNameFromAttributes` for resource and scope attributes and by
/// `convertSampleAttributesToLabelsBack` in `convert.go` for sample attributes:
/// * a string is itself, an int its decimal form (`strconv.FormatInt`);
/// * an array of exactly one string or int is that element, as above;
/// * bool, double, bytes, kvlist, other arrays give "" there, and an empty value means no label.
///
/// One difference: `string_value_strindex` (a string kept in the dictionary's string table) is
/// read as the string it stands for, where Pyroscope, whose switch has no case for it, drops
/// it; an index out of the table is an error, like every other dictionary index.
pub fn label_value<'a>(
    value: Option<&'a AnyValue>,
    strings: &'a [String],
) -> Result<LabelValue<'a>, ConvertError> {
    let Some(value) = value.and_then(|v| v.value.as_ref()) else {
        return Ok(LabelValue::Absent);
    };
    if let any_value::Value::ArrayValue(a) = value {
        return match a.values.as_slice() {
            [] => Ok(LabelValue::Absent),
            [one] => Ok(match single_value(one.value.as_ref(), strings)? {
                LabelValue::Dropped(_) => LabelValue::Dropped(ValueKind::Array),
                v => v,
            }),
            _ => Ok(LabelValue::Dropped(ValueKind::Array)),
        };
    }
    single_value(Some(value), strings)
}

/// The most bytes the text [`label_value`] makes of `value` takes (held in a `String`): a
/// string's length, an int's decimal form at its longest with the spare capacity formatting
/// may leave; 0 for values without a label form and indices out of the table.
pub fn value_text_bound(value: Option<&AnyValue>, strings: &[String]) -> u64 {
    use any_value::Value;
    /// `i64::MIN` has 20 characters; formatting may leave a `String` of up to 32 bytes.
    const DECIMAL: u64 = 32;
    let single = |v: Option<&Value>| match v {
        Some(Value::StringValue(s)) => s.len() as u64,
        Some(Value::StringValueStrindex(i)) => usize::try_from(*i)
            .ok()
            .and_then(|i| strings.get(i))
            .map_or(0, |s| s.len() as u64),
        Some(Value::IntValue(_)) => DECIMAL,
        _ => 0,
    };
    match value.and_then(|v| v.value.as_ref()) {
        Some(Value::ArrayValue(a)) => match a.values.as_slice() {
            [one] => single(one.value.as_ref()),
            _ => 0,
        },
        v => single(v),
    }
}

/// The string-table index [`label_value`] reads `value`'s text from: a
/// `string_value_strindex`, alone or as an array's only element; `None` for every other
/// value. Many attributes may name one long string: a caller keyed by this index reads and
/// hashes its text once, not once per attribute.
pub fn string_index(value: Option<&AnyValue>) -> Option<i32> {
    use any_value::Value;
    match value?.value.as_ref()? {
        Value::StringValueStrindex(i) => Some(*i),
        Value::ArrayValue(a) => match a.values.as_slice() {
            [one] => match one.value.as_ref()? {
                Value::StringValueStrindex(i) => Some(*i),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// A value that is not an array, or an array's only element (a nested array is dropped).
fn single_value<'a>(
    value: Option<&'a any_value::Value>,
    strings: &'a [String],
) -> Result<LabelValue<'a>, ConvertError> {
    use any_value::Value;
    let text = |s: &'a str| {
        if s.is_empty() {
            LabelValue::Absent
        } else {
            LabelValue::Text(Cow::Borrowed(s))
        }
    };
    Ok(match value {
        None => LabelValue::Absent,
        Some(Value::StringValue(s)) => text(s),
        Some(Value::StringValueStrindex(i)) => {
            text(get("string_table", strings, i64::from(*i))?.as_str())
        }
        Some(Value::IntValue(n)) => LabelValue::Text(Cow::Owned(n.to_string())),
        Some(Value::BoolValue(_)) => LabelValue::Dropped(ValueKind::Bool),
        Some(Value::DoubleValue(_)) => LabelValue::Dropped(ValueKind::Double),
        Some(Value::BytesValue(b)) if b.is_empty() => LabelValue::Absent,
        Some(Value::BytesValue(_)) => LabelValue::Dropped(ValueKind::Bytes),
        Some(Value::KvlistValue(l)) if l.values.is_empty() => LabelValue::Absent,
        Some(Value::KvlistValue(_)) => LabelValue::Dropped(ValueKind::Kvlist),
        Some(Value::ArrayValue(a)) if a.values.is_empty() => LabelValue::Absent,
        Some(Value::ArrayValue(_)) => LabelValue::Dropped(ValueKind::Array),
    })
}

/// The longest key kept for a warning, in bytes: a client's key can be any length, and only
/// its start is needed to find the attribute.
pub const MAX_KEY_BYTES: usize = 128;

/// How many attributes of one place and kind were dropped, and the first one's key (cut to
/// [`MAX_KEY_BYTES`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DroppedKind {
    pub count: u64,
    pub first_key: String,
}

/// Attributes left out of the labels for want of a label form ([`LabelValue::Dropped`]), per
/// place and kind: a receiver counts and reports them (Pyroscope drops them silently).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DroppedAttributes {
    pub counts: BTreeMap<(Place, ValueKind), DroppedKind>,
}

impl DroppedAttributes {
    /// Counts one; the key is copied only for the first of its place and kind (at most one
    /// short string per pair, whatever the request holds).
    pub fn add(&mut self, place: Place, kind: ValueKind, key: &str) {
        match self.counts.entry((place, kind)) {
            Entry::Occupied(mut e) => {
                let d = e.get_mut();
                d.count = d.count.saturating_add(1);
            }
            Entry::Vacant(e) => {
                e.insert(DroppedKind {
                    count: 1,
                    first_key: truncate(key, MAX_KEY_BYTES).to_owned(),
                });
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.counts
            .values()
            .fold(0u64, |a, d| a.saturating_add(d.count))
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// `s` cut to at most `max` bytes, on a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
