//! Every block of one name in a body, decoded as a whole: one block for a struct field, all of
//! them in order for a `Vec`, or a map keyed by label. A separate deserializer because serde
//! asks the field's type what it wants only after the blocks have been grouped.

use std::collections::HashSet;

use serde::de::value::StrDeserializer;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::body::{BodyDe, at_block};
use super::error::{Error, StmtPath};
use super::rounds::Ctx;
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::EvaluatedBlock;
use crate::syntax::types::{
    CAPSULE_NEWTYPE, LABEL_FIELD, SECRET_NEWTYPE, VALUE_NEWTYPE, VIEW_NEWTYPE,
};

/// Every (non-hidden) block of one name in a body.
pub(super) struct GroupDe<'a> {
    pub(super) name: &'a str,
    pub(super) blocks: Vec<(StmtPath, &'a EvaluatedBlock)>,
    pub(super) ctx: &'a Ctx,
}

impl<'a> GroupDe<'a> {
    fn block_de(&self, idx: usize, with_label: bool) -> Option<BodyDe<'a>> {
        let (path, b) = self.blocks.get(idx)?;
        Some(BodyDe {
            body: &b.body,
            path: path.clone(),
            name: Some(&b.name),
            label: if with_label { b.label.as_deref() } else { None },
            span: Some(b.header_span),
            seq_element: false,
            ctx: self.ctx,
        })
    }

    fn first(&self) -> Result<BodyDe<'a>, Error> {
        self.block_de(0, true)
            .ok_or_else(|| Error::value("internal error: empty block group"))
    }

    /// The single block of a non-repeatable field.
    fn single(&self) -> Result<BodyDe<'a>, Error> {
        if let Some((path, b)) = self.blocks.get(1) {
            return Err(Error::located(
                Diagnostic::error(
                    b.header_span,
                    format!("block {:?} may only be specified once", self.name),
                ),
                Some(path.clone()),
            ));
        }
        self.first()
    }
}

macro_rules! group_to_first {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.first()?.$method(visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for GroupDe<'_> {
    type Error = Error;

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let n = self.blocks.len();
        visitor.visit_seq(GroupSeq {
            group: self,
            next: 0,
            len: n,
        })
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

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.single()?.deserialize_struct(name, fields, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let labelled = self
            .blocks
            .first()
            .is_some_and(|(_, b)| b.label.as_deref().is_some_and(|l| !l.is_empty()));
        if !labelled {
            return self.single()?.deserialize_map(visitor);
        }
        // Labelled blocks keyed by label.
        let mut seen = HashSet::new();
        for (path, b) in &self.blocks {
            let label = b.label.as_deref().unwrap_or("");
            if label.is_empty() {
                return Err(Error::located(
                    Diagnostic::error(
                        b.header_span,
                        format!("block {:?} requires non-empty label", self.name),
                    ),
                    Some(path.clone()),
                ));
            }
            if !seen.insert(label) {
                return Err(Error::located(
                    Diagnostic::error(
                        b.header_span,
                        format!(
                            "block {:?} with label {label:?} may only be specified once",
                            self.name
                        ),
                    ),
                    Some(path.clone()),
                ));
            }
        }
        let n = self.blocks.len();
        visitor.visit_map(GroupMap {
            group: self,
            next: 0,
            len: n,
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == CAPSULE_NEWTYPE
            || name == SECRET_NEWTYPE
            || name == VALUE_NEWTYPE
            || name == VIEW_NEWTYPE
        {
            return self.single()?.deserialize_newtype_struct(name, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.blocks.len() == 1 {
            self.first()?.deserialize_any(visitor)
        } else {
            self.deserialize_seq(visitor)
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.single()?.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.first()?.deserialize_enum(name, variants, visitor)
    }

    group_to_first! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_identifier
    }
}

struct GroupSeq<'a> {
    group: GroupDe<'a>,
    next: usize,
    len: usize,
}

impl<'de> SeqAccess<'de> for GroupSeq<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some(de) = self.group.block_de(self.next, true) else {
            return Ok(None);
        };
        let de = BodyDe {
            seq_element: true,
            ..de
        };
        let (path, b) = &self.group.blocks[self.next];
        self.next += 1;
        seed.deserialize(de)
            .map(Some)
            .map_err(|e| at_block(e, b, path))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.next)
    }
}

struct GroupMap<'a> {
    group: GroupDe<'a>,
    next: usize,
    len: usize,
}

impl<'de> MapAccess<'de> for GroupMap<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((_, b)) = self.group.blocks.get(self.next) else {
            return Ok(None);
        };
        let label = b.label.as_deref().unwrap_or("");
        seed.deserialize(StrDeserializer::<Error>::new(label))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        // The label became the key; a struct with a `$label` field still gets it.
        let Some(de) = self.group.block_de(self.next, true) else {
            return Err(Error::value("internal error: value requested before key"));
        };
        let (path, b) = &self.group.blocks[self.next];
        self.next += 1;
        seed.deserialize(LabelOptional(de))
            .map_err(|e| at_block(e, b, path))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.next)
    }
}

/// A block reached through a label-keyed map: its struct may or may not have a label field.
struct LabelOptional<'a>(BodyDe<'a>);

macro_rules! label_optional_forward {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.0.$method(visitor)
            }
        )*
    };
}

/// A map of labelled blocks needs block-shaped values; anything else means the map was meant
/// to hold the attributes of a single unlabelled block.
macro_rules! label_optional_reject {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
                Err(self.requires_empty_label())
            }
        )*
    };
}

impl LabelOptional<'_> {
    fn requires_empty_label(&self) -> Error {
        self.0.fail(format!(
            "block {:?} requires empty label",
            self.0.block_name()
        ))
    }
}

impl<'de> Deserializer<'de> for LabelOptional<'_> {
    type Error = Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let de = if fields.contains(&LABEL_FIELD) {
            self.0
        } else {
            BodyDe {
                label: None,
                ..self.0
            }
        };
        de.deserialize_struct(name, fields, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        BodyDe {
            label: None,
            ..self.0
        }
        .deserialize_map(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == CAPSULE_NEWTYPE || name == SECRET_NEWTYPE || name == VALUE_NEWTYPE {
            return Err(self.requires_empty_label());
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.requires_empty_label())
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.requires_empty_label())
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.requires_empty_label())
    }

    label_optional_forward! {
        deserialize_any deserialize_unit deserialize_ignored_any
    }

    label_optional_reject! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_seq deserialize_identifier
    }
}
