//! Values decoded with Alloy's implicit conversions (number to string, numeric string to
//! number, null to the zero value) and the capsule and secret newtypes. Knows nothing about
//! positions: errors carry a path inside the value and are placed by whoever owns it.

use std::collections::BTreeMap;

use serde::de::value::{StrDeserializer, StringDeserializer, U64Deserializer};
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use super::error::Error;
use crate::syntax::eval::{PathSeg, number_to_string, string_to_number};
use crate::syntax::stdlib::SECRET_TO_STRING;
use crate::syntax::types::{
    CAPSULE_NEWTYPE, SECRET_NEWTYPE, VALUE_NEWTYPE, VIEW_NEWTYPE, note_secret_decoded, put_capsule,
};
use crate::syntax::value::{Number, Type, Value};

/// A value, decoded with Alloy's conversions. Errors carry the path inside the value.
pub(super) struct ValueDe<'a> {
    pub(super) value: &'a Value,
}

/// A number as the visitor of an integer type wants it: floats truncate toward zero like Go's
/// conversion, when they fit.
fn visit_integer<'de, V: Visitor<'de>>(n: Number, visitor: V) -> Result<V::Value, Error> {
    match n {
        Number::Int(i) => visitor.visit_i64(i),
        Number::Uint(u) => visitor.visit_u64(u),
        Number::Float(f) if f.is_finite() && f >= 0.0 && f < u64::MAX as f64 => {
            visitor.visit_u64(f.trunc() as u64)
        }
        Number::Float(f) if f.is_finite() && f < 0.0 && f >= i64::MIN as f64 => {
            visitor.visit_i64(f.trunc() as i64)
        }
        Number::Float(f) => visitor.visit_f64(f),
    }
}

impl<'a> ValueDe<'a> {
    /// The number an attribute of number type receives: numbers as is, numeric strings
    /// converted, null as zero.
    fn number(&self) -> Result<Number, Error> {
        match self.value {
            Value::Number(n) => Ok(*n),
            Value::Null => Ok(Number::Int(0)),
            Value::String(s) => {
                string_to_number(s).ok_or_else(|| Error::type_mismatch("number", self.value))
            }
            other => Err(Error::type_mismatch("number", other)),
        }
    }

    fn integer<'de, V: Visitor<'de>>(&self, visitor: V) -> Result<V::Value, Error> {
        visit_integer(self.number()?, visitor)
    }

    fn float<'de, V: Visitor<'de>>(&self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_f64(self.number()?.as_f64())
    }

    fn string<'de, V: Visitor<'de>>(&self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_str(s),
            Value::Number(n) => visitor.visit_string(number_to_string(*n)),
            Value::Null => visitor.visit_str(""),
            Value::Secret(_) => Err(Error::value(SECRET_TO_STRING)),
            other => Err(Error::type_mismatch("string", other)),
        }
    }

    fn describe(&self) -> String {
        match self.value {
            Value::Capsule(c) => format!("capsule({})", c.type_name),
            other => other.ty().to_string(),
        }
    }
}

macro_rules! value_integers {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.integer(visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for ValueDe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if let Some(m) = self.value.object_view() {
            return ValueDe {
                value: &Value::Object(m),
            }
            .deserialize_any(visitor);
        }
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(Number::Int(i)) => visitor.visit_i64(*i),
            Value::Number(Number::Uint(u)) => visitor.visit_u64(*u),
            Value::Number(Number::Float(f)) => visitor.visit_f64(*f),
            Value::String(s) => visitor.visit_str(s),
            Value::Array(items) => visitor.visit_seq(ValueSeq {
                items: items.iter().enumerate(),
                len: items.len(),
            }),
            Value::Object(m) => visitor.visit_map(ValueMap {
                iter: m.iter(),
                pending: None,
            }),
            // An untyped target would keep the secret's text where nothing redacts it.
            Value::Secret(_) => Err(Error::value(SECRET_TO_STRING)),
            Value::Function(_) | Value::Capsule(_) => Err(Error::value(format!(
                "cannot decode {} here",
                self.describe()
            ))),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Null => visitor.visit_bool(false),
            other => Err(Error::type_mismatch(Type::Bool.as_str(), other)),
        }
    }

    value_integers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.float(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.float(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_bytes(s.as_bytes()),
            _ => self.string(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            other => Err(Error::type_mismatch(Type::Null.as_str(), other)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == VALUE_NEWTYPE {
            let idx = put_capsule(self.value.clone());
            return visitor.visit_newtype_struct(U64Deserializer::<Error>::new(idx));
        }
        if name == VIEW_NEWTYPE {
            // A view capsule is handed over as is (the visitor takes its host value); anything
            // else decodes as the object it must then be.
            if self.value.is_object_view() {
                return visitor.visit_u64(put_capsule(self.value.clone()));
            }
            return visitor.visit_newtype_struct(self);
        }
        if name == CAPSULE_NEWTYPE {
            return match self.value {
                Value::Capsule(_) => {
                    let idx = put_capsule(self.value.clone());
                    visitor.visit_newtype_struct(U64Deserializer::<Error>::new(idx))
                }
                _ => {
                    visitor.visit_newtype_struct(StringDeserializer::<Error>::new(self.describe()))
                }
            };
        }
        if name == SECRET_NEWTYPE {
            note_secret_decoded();
            let text = match self.value {
                Value::Secret(s) => s.expose().to_string(),
                Value::String(s) => s.clone(),
                // Lenient like a string attribute: a number converts to its text.
                Value::Number(n) => number_to_string(*n),
                Value::Null => String::new(),
                other => return Err(Error::type_mismatch(Type::Secret.as_str(), other)),
            };
            return visitor.visit_newtype_struct(StringDeserializer::<Error>::new(text));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => visitor.visit_seq(ValueSeq {
                items: items.iter().enumerate(),
                len: items.len(),
            }),
            Value::Null => visitor.visit_seq(ValueSeq {
                items: [].iter().enumerate(),
                len: 0,
            }),
            other => Err(Error::type_mismatch(Type::Array.as_str(), other)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        static EMPTY: BTreeMap<String, Value> = BTreeMap::new();
        if let Some(m) = self.value.object_view() {
            return ValueDe {
                value: &Value::Object(m),
            }
            .deserialize_map(visitor);
        }
        match self.value {
            Value::Object(m) => visitor.visit_map(ValueMap {
                iter: m.iter(),
                pending: None,
            }),
            Value::Null => visitor.visit_map(ValueMap {
                iter: EMPTY.iter(),
                pending: None,
            }),
            other => Err(Error::type_mismatch(Type::Object.as_str(), other)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if let Some(m) = self.value.object_view() {
            return ValueDe {
                value: &Value::Object(m),
            }
            .deserialize_struct(_name, fields, visitor);
        }
        if let Value::Object(m) = self.value
            && let Some(k) = m.keys().find(|k| !fields.contains(&k.as_str()))
        {
            return Err(Error::value(format!("has an unrecognized field {k:?}")));
        }
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => {
                let d: StrDeserializer<'_, Error> = s.as_str().into_deserializer();
                visitor.visit_enum(d)
            }
            Value::Object(m) if m.len() == 1 => match m.iter().next() {
                Some((k, v)) => visitor.visit_enum(ValueEnum {
                    variant: k,
                    value: v,
                }),
                None => Err(Error::type_mismatch(Type::String.as_str(), self.value)),
            },
            other => Err(Error::type_mismatch(Type::String.as_str(), other)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

struct ValueSeq<'a, I: Iterator<Item = (usize, &'a Value)>> {
    items: I,
    len: usize,
}

impl<'de, 'a, I: Iterator<Item = (usize, &'a Value)>> SeqAccess<'de> for ValueSeq<'a, I> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((i, v)) = self.items.next() else {
            return Ok(None);
        };
        self.len = self.len.saturating_sub(1);
        seed.deserialize(ValueDe { value: v })
            .map(Some)
            .map_err(|e| e.prefixed(PathSeg::Index(i)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len)
    }
}

struct ValueMap<'a> {
    iter: std::collections::btree_map::Iter<'a, String, Value>,
    pending: Option<(&'a String, &'a Value)>,
}

impl<'de> MapAccess<'de> for ValueMap<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((k, v)) = self.iter.next() else {
            return Ok(None);
        };
        self.pending = Some((k, v));
        seed.deserialize(StrDeserializer::<Error>::new(k)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let Some((k, v)) = self.pending.take() else {
            return Err(Error::value("internal error: value requested before key"));
        };
        seed.deserialize(ValueDe { value: v })
            .map_err(|e| e.prefixed(PathSeg::Field(k.clone())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An externally tagged enum written as a one-key object: `{ variant = value }`.
struct ValueEnum<'a> {
    variant: &'a str,
    value: &'a Value,
}

impl<'de, 'a> EnumAccess<'de> for ValueEnum<'a> {
    type Error = Error;
    type Variant = ValueDe<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Error> {
        let v = seed.deserialize(StrDeserializer::<Error>::new(self.variant))?;
        Ok((v, ValueDe { value: self.value }))
    }
}

impl<'de> VariantAccess<'de> for ValueDe<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.value {
            Value::Null => Ok(()),
            Value::Object(m) if m.is_empty() => Ok(()),
            other => Err(Error::type_mismatch(Type::Null.as_str(), other)),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_struct("", fields, visitor)
    }
}
