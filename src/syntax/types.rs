//! Serde helper types for component arguments: durations in Go syntax, secrets, capsules.
//!
//! Capsules and secrets cannot travel through serde's data model as themselves, so the
//! decoder (`decode`) and these types agree on reserved newtype-struct names:
//!
//! * [`CapsuleRef<T>`] asks for the newtype [`CAPSULE_NEWTYPE`]. The decoder puts the capsule
//!   into a thread-local side table and hands the visitor its index as a `u64`; the visitor
//!   takes it out and downcasts. A value that is not a capsule is handed over as a string
//!   describing its type, so the error can say `expected capsule(T), got number`.
//! * [`SecretString`] asks for the newtype [`SECRET_NEWTYPE`]; the decoder hands it the text
//!   of a string or of a secret. A plain `String` field never receives a secret's text: the
//!   decoder rejects it with Alloy's "secrets may not be converted into strings".

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::gocompat::time::{DurationError, format_go_duration, parse_go_duration_nanos};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::value::{Number, Value};

/// Newtype name a [`CapsuleRef`] asks the decoder for.
pub const CAPSULE_NEWTYPE: &str = "$scraper::capsule";
/// Newtype name asking for a capsule that stands for an object (see
/// `value::ObjectView`): the decoder hands a view capsule over as a slot index (`visit_u64`,
/// then [`take_view`]), and decodes anything else through `visit_newtype_struct`, so the same
/// type still decodes from a plain object (or from JSON).
pub const VIEW_NEWTYPE: &str = "$scraper::view";
/// Newtype name a [`RawValue`] asks the decoder for.
pub const VALUE_NEWTYPE: &str = "$scraper::value";
/// Newtype name a [`SecretString`] asks the decoder for.
pub const SECRET_NEWTYPE: &str = "$scraper::secret";
/// Field name that receives a block's label when a block decodes into a struct (see
/// `decode`): `#[serde(rename = "$label")] label: String`.
pub const LABEL_FIELD: &str = "$label";

// ---------------------------------------------------------------------------------------------
// Capsule side table
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Values (capsules, raw values) handed from the decoder to a `CapsuleRef` or `RawValue`
    /// visitor. Decoding is synchronous, so a slot is filled and emptied within one
    /// `deserialize` call on this thread.
    static CAPSULES: RefCell<Vec<Option<Value>>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// Raised when the decoder hands a value to a [`SecretString`]; the attribute decoder reads
    /// and clears it to learn that the attribute it is decoding holds a secret.
    static SECRET_DECODED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(crate) fn note_secret_decoded() {
    SECRET_DECODED.with(|f| f.set(true));
}

/// Returns and clears the flag.
pub(crate) fn take_secret_decoded() -> bool {
    SECRET_DECODED.with(|f| f.replace(false))
}

/// Stores a value for a visitor to take; returns its slot index.
pub(crate) fn put_capsule(c: Value) -> u64 {
    CAPSULES.with(|t| {
        let mut t = t.borrow_mut();
        t.push(Some(c));
        (t.len() - 1) as u64
    })
}

/// The host value of the view capsule the decoder put in slot `idx`.
pub fn take_view<T: Any + Send + Sync>(idx: u64) -> Option<Arc<T>> {
    match take_capsule(idx) {
        Some(Value::Capsule(c)) => c.downcast::<T>(),
        _ => None,
    }
}

/// Takes the value in slot `idx`, if any.
fn take_capsule(idx: u64) -> Option<Value> {
    CAPSULES.with(|t| {
        let mut t = t.borrow_mut();
        let slot = t.get_mut(usize::try_from(idx).ok()?)?.take();
        // Trim emptied slots at the end so the table does not grow across decodes.
        while matches!(t.last(), Some(None)) {
            t.pop();
        }
        slot
    })
}

/// Length of the side table; the decoder truncates back to it when a decode ends, dropping
/// capsules no visitor took (after an error).
pub(crate) fn capsule_mark() -> usize {
    CAPSULES.with(|t| t.borrow().len())
}

pub(crate) fn capsule_reset(mark: usize) {
    CAPSULES.with(|t| t.borrow_mut().truncate(mark));
}

/// `std::any::type_name` without module paths: `scraper::components::pyroscope::write::Receiver` -> `Receiver`.
pub fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut segment = String::new();
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            segment.clear();
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            segment.push(c);
        } else {
            out.push_str(&segment);
            segment.clear();
            out.push(c);
        }
    }
    out.push_str(&segment);
    out
}

// ---------------------------------------------------------------------------------------------
// CapsuleRef
// ---------------------------------------------------------------------------------------------

/// A capsule value decoded into its host type: a component argument such as
/// `forward_to: Vec<CapsuleRef<Receiver>>` receives the `Arc<Receiver>` that another component
/// exported. Equality is identity, like the capsule's.
pub struct CapsuleRef<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for CapsuleRef<T> {
    fn clone(&self) -> Self {
        CapsuleRef(self.0.clone())
    }
}

impl<T: ?Sized> PartialEq for CapsuleRef<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: ?Sized> fmt::Debug for CapsuleRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "capsule({})", short_type_name::<T>())
    }
}

impl<T: ?Sized> std::ops::Deref for CapsuleRef<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: Any + Send + Sync> Deserialize<'de> for CapsuleRef<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Outer<T>(PhantomData<T>);
        struct Inner<T>(PhantomData<T>);

        impl<'de, T: Any + Send + Sync> Visitor<'de> for Outer<T> {
            type Value = CapsuleRef<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "capsule({})", short_type_name::<T>())
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_any(Inner(PhantomData))
            }
        }

        impl<'de, T: Any + Send + Sync> Visitor<'de> for Inner<T> {
            type Value = CapsuleRef<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "capsule({})", short_type_name::<T>())
            }
            fn visit_u64<E: de::Error>(self, idx: u64) -> Result<Self::Value, E> {
                let Some(Value::Capsule(c)) = take_capsule(idx) else {
                    return Err(E::custom("internal error: capsule slot is empty"));
                };
                match c.downcast::<T>() {
                    Some(arc) => Ok(CapsuleRef(arc)),
                    None => Err(E::custom(format!(
                        "expected capsule({}), got capsule({})",
                        short_type_name::<T>(),
                        c.type_name
                    ))),
                }
            }
            /// The decoder describes a non-capsule value by its type name.
            fn visit_str<E: de::Error>(self, got: &str) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "expected capsule({}), got {got}",
                    short_type_name::<T>()
                )))
            }
        }

        d.deserialize_newtype_struct(CAPSULE_NEWTYPE, Outer(PhantomData))
    }
}

// ---------------------------------------------------------------------------------------------
// RawValue
// ---------------------------------------------------------------------------------------------

/// An argument kept as an Alloy value, unconverted (capsules and secrets included): for
/// arguments whose shape is dynamic. A block decodes to an object of its attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct RawValue(pub Value);

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Outer;
        struct Inner;

        impl<'de> Visitor<'de> for Outer {
            type Value = RawValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_any(Inner)
            }
        }

        // The Alloy decoder hands over a side-table index; any other deserializer (JSON in
        // tests) gives plain data, converted as Alloy converts JSON.
        impl<'de> Visitor<'de> for Inner {
            type Value = RawValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, idx: u64) -> Result<RawValue, E> {
                take_capsule(idx)
                    .map(RawValue)
                    .ok_or_else(|| E::custom("internal error: value slot is empty"))
            }
            fn visit_i64<E: de::Error>(self, i: i64) -> Result<RawValue, E> {
                Ok(RawValue(Value::Number(Number::Int(i))))
            }
            fn visit_f64<E: de::Error>(self, f: f64) -> Result<RawValue, E> {
                Ok(RawValue(Value::Number(Number::Float(f))))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<RawValue, E> {
                Ok(RawValue(Value::Bool(b)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawValue, E> {
                Ok(RawValue(Value::string(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawValue, E> {
                Ok(RawValue(Value::Null))
            }
            fn visit_none<E: de::Error>(self) -> Result<RawValue, E> {
                Ok(RawValue(Value::Null))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<RawValue, A::Error> {
                let mut out = Vec::new();
                while let Some(RawValue(v)) = a.next_element_seed(Seed)? {
                    out.push(v);
                }
                Ok(RawValue(Value::Array(out)))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<RawValue, A::Error> {
                let mut out = std::collections::BTreeMap::new();
                while let Some(k) = a.next_key::<String>()? {
                    let RawValue(v) = a.next_value_seed(Seed)?;
                    out.insert(k, v);
                }
                Ok(RawValue(Value::Object(out)))
            }
        }

        struct Seed;
        impl<'de> de::DeserializeSeed<'de> for Seed {
            type Value = RawValue;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawValue, D::Error> {
                d.deserialize_any(Inner)
            }
        }

        d.deserialize_newtype_struct(VALUE_NEWTYPE, Outer)
    }
}

// ---------------------------------------------------------------------------------------------
// SecretString
// ---------------------------------------------------------------------------------------------

/// A sensitive string argument (a password, a bearer token). Accepts a string or a secret;
/// Debug and Display print `(secret)`. Serializes as `"(secret)"` so it cannot leak through a
/// JSON dump of the arguments.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct SecretString(String);

impl SecretString {
    pub fn new(s: impl Into<String>) -> Self {
        SecretString(s.into())
    }

    /// The secret text. Call only where it is sent to its destination.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(secret)")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(secret)")
    }
}

impl Serialize for SecretString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("(secret)")
    }
}

impl<'de> Deserialize<'de> for SecretString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SecretString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or secret")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                String::deserialize(d).map(SecretString)
            }
            // Other deserializers (JSON in tests, say) pass plain strings.
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(SecretString(s.to_string()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(SecretString(s))
            }
        }
        d.deserialize_newtype_struct(SECRET_NEWTYPE, V)
    }
}

// ---------------------------------------------------------------------------------------------
// Duration
// ---------------------------------------------------------------------------------------------

/// A duration written as Go's `time.ParseDuration` accepts it: a sequence of decimal numbers
/// with units `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h` (`"15s"`, `"1h30m"`, `"0.5s"`; no `d`).
/// Negative durations are rejected (no component argument wants one). Serializes back in Go's
/// `Duration.String()` form (`"1h30m0s"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const ZERO: Duration = Duration(std::time::Duration::ZERO);

    pub fn from_secs(s: u64) -> Self {
        Duration(std::time::Duration::from_secs(s))
    }

    pub fn from_millis(ms: u64) -> Self {
        Duration(std::time::Duration::from_millis(ms))
    }

    pub fn get(self) -> std::time::Duration {
        self.0
    }

    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Duration(d)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        d.0
    }
}

impl std::ops::Deref for Duration {
    type Target = std::time::Duration;
    fn deref(&self) -> &std::time::Duration {
        &self.0
    }
}

/// Parses a Go duration string into a non-negative [`Duration`].
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let n = parse_go_duration_nanos(s)?;
    if n < 0 {
        return Err(DurationError::Negative(s.to_string()));
    }
    Ok(Duration(std::time::Duration::from_nanos(n as u64)))
}

impl std::str::FromStr for Duration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_go_duration(self.0))
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_go_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"15s\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Duration, E> {
                parse_duration(s).map_err(E::custom)
            }
        }
        // Strings only: the Alloy decoder converts a number to its text first, so `5` gives
        // Go's "missing unit" error and `0` is zero.
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_durations() {
        let ok: &[(&str, u64)] = &[
            ("0", 0),
            ("0s", 0),
            ("5s", 5_000_000_000),
            ("1h30m", 5_400_000_000_000),
            ("0.5s", 500_000_000),
            (".5s", 500_000_000),
            ("1.s", 1_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("100ms", 100_000_000),
            ("10us", 10_000),
            ("10µs", 10_000),
            ("10μs", 10_000),
            ("7ns", 7),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("+5s", 5_000_000_000),
            ("2562047h47m16.854775807s", i64::MAX as u64),
        ];
        for (s, n) in ok {
            assert_eq!(
                parse_duration(s).map(|d| d.0.as_nanos() as u64),
                Ok(*n),
                "{s}"
            );
        }
        let err: &[(&str, &str)] = &[
            ("", "time: invalid duration \"\""),
            ("1", "time: missing unit in duration \"1\""),
            ("1d", "time: unknown unit \"d\" in duration \"1d\""),
            ("s", "time: invalid duration \"s\""),
            (".s", "time: invalid duration \".s\""),
            ("1.2.3s", "time: missing unit in duration \"1.2.3s\""),
            ("-5s", "negative duration \"-5s\" is not allowed"),
            ("3000000h", "time: invalid duration \"3000000h\""),
            ("1 s", "time: unknown unit \" s\" in duration \"1 s\""),
        ];
        for (s, msg) in err {
            assert_eq!(
                parse_duration(s).map_err(|e| e.to_string()),
                Err(msg.to_string()),
                "{s}"
            );
        }
        assert_eq!(parse_go_duration_nanos("-1.5s"), Ok(-1_500_000_000));
    }

    #[test]
    fn secret_string_is_redacted() {
        let s = SecretString::new("hunter2");
        assert_eq!(format!("{s}"), "(secret)");
        assert_eq!(format!("{s:?}"), "(secret)");
        assert_eq!(
            serde_json::to_string(&s).ok().as_deref(),
            Some("\"(secret)\"")
        );
        assert_eq!(s.expose(), "hunter2");
        let back: SecretString = serde_json::from_str("\"x\"").unwrap_or_default();
        assert_eq!(back.expose(), "x");
    }

    #[test]
    fn short_names() {
        assert_eq!(short_type_name::<String>(), "String");
        assert_eq!(short_type_name::<Vec<String>>(), "Vec<String>");
        assert_eq!(
            short_type_name::<std::collections::BTreeMap<String, u8>>(),
            "BTreeMap<String, u8>"
        );
    }

    #[test]
    fn duration_serde() {
        let d: Duration = serde_json::from_str("\"1m30s\"").unwrap_or_default();
        assert_eq!(d, Duration::from_secs(90));
        assert_eq!(serde_json::to_string(&d).ok().as_deref(), Some("\"1m30s\""));
    }
}
