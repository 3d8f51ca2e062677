//! One attribute of a body. Its value decodes like any value; this layer adds what only an
//! attribute knows: where its expression is, so value errors point at the innermost literal at
//! fault, and that a struct-typed field given an attribute was meant to be a block.

use serde::de::{Deserializer, Visitor};

use super::error::{Error, Inner, StmtPath};
use super::value::ValueDe;
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::{EvaluatedAttribute, path_text, value_error};
use crate::syntax::value::Value;

/// One attribute: decodes its value and turns value errors into diagnostics pointing into the
/// attribute's expression.
pub(super) struct AttrDe<'a> {
    pub(super) attr: &'a EvaluatedAttribute,
    pub(super) path: StmtPath,
}

impl AttrDe<'_> {
    pub(super) fn finish_err(&self, e: Error) -> Error {
        match *e.0 {
            Inner::Value { path, message, .. } => {
                let diag = match &self.attr.expr {
                    Some(expr) => value_error(expr, &path, &message),
                    None => Diagnostic::error(
                        self.attr.value_span,
                        format!("{}{} {message}", self.attr.name, path_text(&path)),
                    ),
                };
                Error::located(diag, Some(self.path.clone()))
            }
            located @ Inner::Located(_) => Error(Box::new(located)),
        }
    }

    fn value(&self) -> ValueDe<'_> {
        ValueDe {
            value: &self.attr.value,
        }
    }
}

macro_rules! attr_forward {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                let r = self.value().$method(visitor);
                r.map_err(|e| self.finish_err(e))
            }
        )*
    };
}

impl<'de> Deserializer<'de> for AttrDe<'_> {
    type Error = Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if !matches!(self.attr.value, Value::Object(_) | Value::Null) {
            // Struct-typed fields are blocks.
            return Err(Error::located(
                Diagnostic::error(
                    self.attr.span,
                    format!(
                        "{:?} must be a block, but is used as an attribute",
                        self.attr.name
                    ),
                ),
                Some(self.path.clone()),
            ));
        }
        let r = self.value().deserialize_struct(name, fields, visitor);
        r.map_err(|e| self.finish_err(e))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.attr.value {
            Value::Null => visitor.visit_none(),
            // Keep AttrDe for the inner value so struct/attribute checks still apply.
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let r = self.value().deserialize_newtype_struct(name, visitor);
        r.map_err(|e| self.finish_err(e))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let r = self.value().deserialize_unit_struct(name, visitor);
        r.map_err(|e| self.finish_err(e))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let r = self.value().deserialize_enum(name, variants, visitor);
        r.map_err(|e| self.finish_err(e))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        let r = self.value().deserialize_tuple(len, visitor);
        r.map_err(|e| self.finish_err(e))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let r = self.value().deserialize_tuple_struct(name, len, visitor);
        r.map_err(|e| self.finish_err(e))
    }

    attr_forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_unit deserialize_seq deserialize_map deserialize_identifier
        deserialize_ignored_any
    }
}
