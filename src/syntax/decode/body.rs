//! Block bodies as serde maps: the root body and each nested block's. Owns the checks that
//! only a body can make (unknown and repeated names, labels given or required, a block used
//! where an attribute is expected) and the source order errors are met in.

use std::collections::{BTreeMap, HashSet};

use serde::de::value::{StrDeserializer, U64Deserializer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::attr::AttrDe;
use super::error::{Error, Inner, StmtId, StmtPath, diag_at};
use super::group::GroupDe;
use super::rounds::Ctx;
use crate::syntax::ast::Span;
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::{EvaluatedAttribute, EvaluatedBlock, EvaluatedBody};
use crate::syntax::types::{
    CAPSULE_NEWTYPE, LABEL_FIELD, SECRET_NEWTYPE, VALUE_NEWTYPE, put_capsule, take_secret_decoded,
};
use crate::syntax::value::Value;

/// A body: the component's own (root) or a nested block's.
pub(super) struct BodyDe<'a> {
    pub(super) body: &'a EvaluatedBody,
    /// The statement path of the block owning this body (empty for the root).
    pub(super) path: StmtPath,
    /// The block's name; `None` for the root body.
    pub(super) name: Option<&'a str>,
    /// The block's label when it should be offered to a `$label` field.
    pub(super) label: Option<&'a str>,
    /// Where errors about the body as a whole point.
    pub(super) span: Option<Span>,
    /// An element of a repeated block: only a struct makes sense (a map here would be a list of
    /// objects, which is an attribute).
    pub(super) seq_element: bool,
    pub(super) ctx: &'a Ctx,
}

/// Adds "did you mean ...?" to an unknown-name error when a field of the block is a likely
/// spelling of `name`.
fn with_suggestion(d: Diagnostic, name: &str, fields: Option<&[&str]>) -> Diagnostic {
    let candidates = fields
        .unwrap_or_default()
        .iter()
        .copied()
        .filter(|f| *f != LABEL_FIELD);
    match crate::syntax::suggest::did_you_mean(name, candidates) {
        Some(help) => d.with_help(help),
        None => d,
    }
}

/// Places an error that escaped a block's decoding at that block.
pub(super) fn at_block(e: Error, b: &EvaluatedBlock, path: &[StmtId]) -> Error {
    Error(Box::new(Inner::Located(
        e.located_at(Some(b.header_span), path),
    )))
}

enum Entry<'a> {
    Label(&'a str),
    Attr(StmtPath, &'a EvaluatedAttribute),
    Group(&'a str, Vec<(StmtPath, &'a EvaluatedBlock)>),
}

impl Entry<'_> {
    fn key(&self) -> &str {
        match self {
            Entry::Label(_) => LABEL_FIELD,
            Entry::Attr(_, a) => &a.name,
            Entry::Group(name, _) => name,
        }
    }
}

impl<'a> BodyDe<'a> {
    fn child(&self, id: StmtId) -> StmtPath {
        let mut p = self.path.clone();
        p.push(id);
        p
    }

    pub(super) fn block_name(&self) -> &str {
        self.name.unwrap_or("")
    }

    /// The body's statements in source order, minus hidden ones, unknown names (collected as
    /// errors) and null attributes (defaults apply), blocks grouped by name.
    fn entries(
        &self,
        fields: Option<&[&str]>,
        allow_blocks: bool,
    ) -> Result<Vec<Entry<'a>>, Error> {
        let ctx = self.ctx;
        let known = |name: &str| fields.is_none_or(|f| f.contains(&name));
        let mut items: Vec<(u32, Entry<'a>)> = Vec::new();
        let mut seen_attrs: HashSet<&str> = HashSet::new();
        for (i, a) in self.body.attributes.iter().enumerate() {
            let p = self.child(StmtId::Attr(i));
            if ctx.hidden.contains(&p) {
                continue;
            }
            if !seen_attrs.insert(a.name.as_str()) {
                ctx.collect(Diagnostic::error(
                    a.span,
                    format!("attribute {:?} may only be provided once", a.name),
                ));
                continue;
            }
            if !known(&a.name) || a.name == LABEL_FIELD {
                ctx.collect(with_suggestion(
                    Diagnostic::error(a.span, format!("unrecognized attribute name {:?}", a.name)),
                    &a.name,
                    fields,
                ));
                continue;
            }
            if matches!(a.value, Value::Null) && !ctx.null_zero.contains(&p) {
                continue;
            }
            items.push((a.span.start, Entry::Attr(p, a)));
        }
        let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, b) in self.body.blocks.iter().enumerate() {
            let p = self.child(StmtId::Block(i));
            if ctx.hidden.contains(&p) {
                continue;
            }
            if !allow_blocks {
                return Err(Error::located(
                    Diagnostic::error(b.span, "nested blocks not supported here"),
                    Some(p),
                ));
            }
            if !known(&b.name) {
                ctx.collect(with_suggestion(
                    Diagnostic::error(
                        b.header_span,
                        format!("unrecognized block name {:?}", b.name),
                    ),
                    &b.name,
                    fields,
                ));
                continue;
            }
            if seen_attrs.contains(b.name.as_str()) {
                ctx.collect(Diagnostic::error(
                    b.header_span,
                    format!(
                        "{:?} is defined both as an attribute and as a block",
                        b.name
                    ),
                ));
                continue;
            }
            match groups.get(b.name.as_str()) {
                Some(&idx) => {
                    if let Entry::Group(_, blocks) = &mut items[idx].1 {
                        blocks.push((p, b));
                    }
                }
                None => {
                    groups.insert(&b.name, items.len());
                    items.push((b.span.start, Entry::Group(&b.name, vec![(p, b)])));
                }
            }
        }
        // Source order, so errors come in the order a reader meets them.
        items.sort_by_key(|(start, _)| *start);
        let mut out: Vec<Entry<'a>> = Vec::with_capacity(items.len() + 1);
        if let Some(label) = self.label
            && fields.is_some_and(|f| f.contains(&LABEL_FIELD))
        {
            out.push(Entry::Label(label));
        }
        out.extend(items.into_iter().map(|(_, e)| e));
        Ok(out)
    }

    pub(super) fn fail(&self, message: String) -> Error {
        Error::located(diag_at(self.span, message), Some(self.path.clone()))
    }

    fn not_an_attribute(&self) -> Error {
        match self.name {
            Some(name) => self.fail(format!(
                "{name:?} must be an attribute, but is used as a block"
            )),
            None => self.fail("a block body cannot be decoded into a value".to_string()),
        }
    }

    /// Places errors escaping a struct or map visitor at this block.
    fn finish_err(&self, e: Error) -> Error {
        Error(Box::new(Inner::Located(
            e.located_at(self.span, &self.path),
        )))
    }

    fn visit_body<'de, V: Visitor<'de>>(
        self,
        fields: Option<&'static [&'static str]>,
        allow_blocks: bool,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let entries = self.entries(fields, allow_blocks)?;
        let ctx = self.ctx;
        let res = visitor.visit_map(BodyMap {
            entries: entries.into_iter(),
            pending: None,
            ctx,
        });
        res.map_err(|e| self.finish_err(e))
    }
}

macro_rules! body_not_attribute {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
                Err(self.not_an_attribute())
            }
        )*
    };
}

impl<'de> Deserializer<'de> for BodyDe<'_> {
    type Error = Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if let Some(name) = self.name {
            let wants_label = fields.contains(&LABEL_FIELD);
            let label = self.label.filter(|l| !l.is_empty());
            match (label, wants_label) {
                (Some(_), false) => {
                    return Err(
                        self.fail(format!("block {name:?} does not support specifying labels"))
                    );
                }
                (None, true) => {
                    return Err(self.fail(format!("block {name:?} requires non-empty label")));
                }
                _ => {}
            }
        }
        self.visit_body(Some(fields), true, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.seq_element {
            return Err(self.not_an_attribute());
        }
        if self.label.is_some_and(|l| !l.is_empty()) {
            return Err(self.fail(format!(
                "block {:?} requires empty label",
                self.block_name()
            )));
        }
        self.visit_body(None, false, visitor)
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Untyped targets (serde_json::Value) get everything, label included.
        let entries = self.entries(None, true)?;
        let mut entries = entries;
        if let Some(label) = self.label {
            entries.insert(0, Entry::Label(label));
        }
        let ctx = self.ctx;
        visitor
            .visit_map(BodyMap {
                entries: entries.into_iter(),
                pending: None,
                ctx,
            })
            .map_err(|e| self.finish_err(e))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == VALUE_NEWTYPE {
            if self.seq_element {
                return Err(self.not_an_attribute());
            }
            // A block as a raw value: an object of its attributes.
            if let Some((i, b)) = self.body.blocks.iter().enumerate().next() {
                return Err(Error::located(
                    Diagnostic::error(b.span, "nested blocks not supported here"),
                    Some(self.child(StmtId::Block(i))),
                ));
            }
            let obj = self
                .body
                .attributes
                .iter()
                .map(|a| (a.name.clone(), a.value.clone()))
                .collect();
            let idx = put_capsule(Value::Object(obj));
            return visitor.visit_newtype_struct(U64Deserializer::<Error>::new(idx));
        }
        if name == CAPSULE_NEWTYPE || name == SECRET_NEWTYPE {
            return Err(self.not_an_attribute());
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // A marker block: `foo {}`.
        if let Some(a) = self.body.attributes.first() {
            return Err(Error::located(
                Diagnostic::error(a.span, format!("unrecognized attribute name {:?}", a.name)),
                Some(self.child(StmtId::Attr(0))),
            ));
        }
        if let Some(b) = self.body.blocks.first() {
            return Err(Error::located(
                Diagnostic::error(
                    b.header_span,
                    format!("unrecognized block name {:?}", b.name),
                ),
                Some(self.child(StmtId::Block(0))),
            ));
        }
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.not_an_attribute())
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.not_an_attribute())
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.not_an_attribute())
    }

    body_not_attribute! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_seq
        deserialize_identifier
    }
}

/// `MapAccess` over a body's entries.
struct BodyMap<'a, I: Iterator<Item = Entry<'a>>> {
    entries: I,
    pending: Option<Entry<'a>>,
    ctx: &'a Ctx,
}

impl<'de, 'a, I: Iterator<Item = Entry<'a>>> MapAccess<'de> for BodyMap<'a, I> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        let key: StrDeserializer<'_, Error> = StrDeserializer::new(entry.key());
        let k = seed.deserialize(key)?;
        self.pending = Some(entry);
        Ok(Some(k))
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        match self.pending.take() {
            Some(Entry::Label(l)) => seed.deserialize(StrDeserializer::<Error>::new(l)),
            Some(Entry::Attr(path, attr)) => {
                let de = AttrDe { attr, path };
                // Errors raised after the value was read (a `try_from` check) still belong to
                // the attribute.
                let finish = AttrDe {
                    attr,
                    path: de.path.clone(),
                };
                take_secret_decoded();
                let result = seed.deserialize(de).map_err(|e| finish.finish_err(e));
                if take_secret_decoded() {
                    attr.mark_sensitive();
                }
                result
            }
            Some(Entry::Group(name, blocks)) => {
                let first = blocks.first().map(|(p, b)| (p.clone(), *b));
                seed.deserialize(GroupDe {
                    name,
                    blocks,
                    ctx: self.ctx,
                })
                .map_err(|e| match &first {
                    Some((p, b)) => at_block(e, b, p),
                    None => e,
                })
            }
            None => Err(Error::value("internal error: value requested before key")),
        }
    }
}
