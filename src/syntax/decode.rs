//! Decoding evaluated block bodies into component argument structs, through serde.
//!
//! # Mapping
//!
//! * Attributes map to struct fields of the same name.
//! * A nested block maps to the field named like the block (`profile.memory` needs
//!   `#[serde(rename = "profile.memory")]`). A struct field receives one block; a `Vec<T>` field
//!   receives every block of that name, in order; an `Option<T>` field is `None` when the block
//!   is absent.
//! * Labelled blocks (`profile.custom "name" { ... }`): either a `BTreeMap<String, T>` (or any
//!   map) keyed by label, or a `Vec<T>`/`T` whose struct has a field renamed to
//!   [`LABEL_FIELD`] (`#[serde(rename = "$label")] label: String`), which receives the label.
//!   A label given to a block whose struct has no label field is an error, and so is a missing
//!   or empty label when the struct has one (Alloy's wording for both).
//! * A block decoded into a map (`HashMap<String, T>`) gives its attributes; it may not have a
//!   label or nested blocks.
//! * Objects decode into maps or structs, arrays into sequences.
//!
//! # Attributes versus blocks
//!
//! A struct-typed field is a block. Asking for a scalar, string, number or capsule from a block
//! gives `"x" must be an attribute, but is used as a block`; a struct-typed field given an
//! attribute that is not an object gives `"x" must be a block, but is used as an attribute`.
//! An object attribute is accepted where a block struct is expected (serde cannot tell the two
//! apart); Alloy would reject it, we are lenient there.
//!
//! # Strictness, defaults, null
//!
//! Unknown attributes and blocks are errors (`unrecognized attribute name "x"`,
//! `unrecognized block name "x"`); the struct's field list comes from serde, so a struct using
//! `#[serde(flatten)]` loses this check. A missing required field is
//! `missing required attribute "x"` (or `block` when the name contains a dot, which only block
//! names can), reported at the enclosing block. Defaults are per block: give each block struct
//! `#[serde(default)]` and a `Default` impl and omitted fields keep their default.
//! `x = null` means "use the default"; a required field assigned null gets its zero value
//! (empty string, 0, false, empty list), as in Alloy.
//!
//! Implicit conversions follow Alloy: a number converts to a string field, a numeric string to
//! a number field; null inside a list or object decodes to the zero value.
//!
//! # Errors
//!
//! Every problem becomes a [`Diagnostic`]: value problems are worded like Alloy's
//! (`"a" should be number, got string`, pointing at the innermost literal at fault, or
//! `key_value.object.field1[2] should be number, got string` for a value that came from a
//! reference). As many errors as practical are reported: every unknown name, and one error per
//! bad attribute (the decoder retries without the failing statement to find the next one).
//! Errors raised by a type's own `Deserialize` impl (a `try_from` validation, say) are
//! reported at the enclosing block.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

use serde::de::value::{StrDeserializer, StringDeserializer, U64Deserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};

use super::ast::Span;
use super::diag::Diagnostic;
use super::eval::{
    EvaluatedAttribute, EvaluatedBlock, EvaluatedBody, PathSeg, number_to_string, path_text,
    string_to_number, value_error,
};
use super::stdlib::SECRET_TO_STRING;
use super::types::{CAPSULE_NEWTYPE, SECRET_NEWTYPE, capsule_mark, capsule_reset, put_capsule};
use super::value::{Number, Type, Value};

pub use super::types::LABEL_FIELD;

/// Decodes a component's evaluated body. Missing-field errors have no position; use
/// [`from_body_at`] to point them at the block.
pub fn from_body<T: DeserializeOwned>(body: &EvaluatedBody) -> Result<T, Vec<Diagnostic>> {
    from_body_at(body, None)
}

/// Decodes a component's evaluated body; errors about the body as a whole (missing required
/// attributes, validation in the type's `Deserialize`) point at `block_span`, typically the
/// block's header span.
pub fn from_body_at<T: DeserializeOwned>(
    body: &EvaluatedBody,
    block_span: impl Into<Option<Span>>,
) -> Result<T, Vec<Diagnostic>> {
    let span = block_span.into();
    let mut ctx = Ctx::default();
    let mut errors: Vec<Diagnostic> = Vec::new();
    // Each retry hides one more statement or zero-fills one more null, so this bounds the loop.
    let max_rounds = count_stmts(body) * 2 + 2;
    for _ in 0..max_rounds {
        ctx.collected.borrow_mut().clear();
        let mark = capsule_mark();
        let res = T::deserialize(BodyDe {
            body,
            path: Vec::new(),
            name: None,
            label: None,
            span,
            ctx: &ctx,
        });
        capsule_reset(mark);
        let located = match res {
            Ok(v) => {
                errors.extend(ctx.collected.borrow_mut().drain(..));
                if errors.is_empty() {
                    return Ok(v);
                }
                return Err(finish(errors));
            }
            Err(e) => e.located_at(span, &[]),
        };
        let Located {
            diag,
            stmt,
            missing,
        } = located;
        if let Some((block_path, name)) = missing {
            match classify_missing(body, &ctx, &block_path, &name) {
                MissingCause::Null(p) => {
                    // A required field assigned null: decode it as its zero value.
                    ctx.null_zero.insert(p);
                    continue;
                }
                MissingCause::Hidden => {
                    // The field is missing only because we hid its failing statement; that
                    // error is already recorded. Hide the enclosing block to go on.
                    if block_path.is_empty() || !ctx.hidden.insert(block_path) {
                        break;
                    }
                    continue;
                }
                MissingCause::Real => {
                    errors.push(diag);
                    if block_path.is_empty() || !ctx.hidden.insert(block_path) {
                        break;
                    }
                    continue;
                }
            }
        }
        errors.push(diag);
        match stmt {
            Some(p) if !p.is_empty() && !ctx.hidden.contains(&p) => {
                ctx.hidden.insert(p);
            }
            _ => break,
        }
    }
    errors.extend(ctx.collected.borrow_mut().drain(..));
    Err(finish(errors))
}

/// Decodes a single value (an export, an object) with the same conversions. The error text is
/// `<path> <message>` relative to the value.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    let mark = capsule_mark();
    let res = T::deserialize(ValueDe { value });
    capsule_reset(mark);
    res.map_err(|e| match *e.0 {
        Inner::Value { path, message, .. } => {
            let p = path_text(&path);
            if p.is_empty() {
                message
            } else {
                format!("{p} {message}")
            }
        }
        Inner::Located(l) => l.diag.message,
    })
}

/// Sorts by position (unpositioned last) and drops exact duplicates.
fn finish(mut errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    errors.sort_by_key(|d| d.span.map(|s| (0, s.start)).unwrap_or((1, 0)));
    errors.dedup();
    errors
}

fn count_stmts(body: &EvaluatedBody) -> usize {
    body.attributes.len()
        + body
            .blocks
            .iter()
            .map(|b| 1 + count_stmts(&b.body))
            .sum::<usize>()
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Identifies a statement: the index of an attribute or block at each nesting level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum StmtId {
    Attr(usize),
    Block(usize),
}

type StmtPath = Vec<StmtId>;

/// The serde error type of the decoder. Public only because serde needs it; callers get
/// [`Diagnostic`]s.
#[derive(Debug)]
pub struct Error(Box<Inner>);

#[derive(Debug)]
enum Inner {
    /// Not yet tied to a position: a problem with the value at `path` inside the value being
    /// decoded. `missing` is set for serde's missing-field errors.
    Value {
        path: Vec<PathSeg>,
        message: String,
        missing: Option<String>,
    },
    Located(Located),
}

#[derive(Debug)]
struct Located {
    diag: Diagnostic,
    /// The statement at fault, hidden on the next round to find further errors.
    stmt: Option<StmtPath>,
    /// For a missing field: the block whose body lacks it, and its name.
    missing: Option<(StmtPath, String)>,
}

impl Error {
    fn value(message: impl Into<String>) -> Self {
        Error(Box::new(Inner::Value {
            path: Vec::new(),
            message: message.into(),
            missing: None,
        }))
    }

    fn type_mismatch(expected: &str, got: &Value) -> Self {
        Error::value(format!("should be {expected}, got {}", got.ty()))
    }

    fn located(diag: Diagnostic, stmt: Option<StmtPath>) -> Self {
        Error(Box::new(Inner::Located(Located {
            diag,
            stmt,
            missing: None,
        })))
    }

    /// Records that the error happened inside element/field `seg` of the current value.
    fn prefixed(mut self, seg: PathSeg) -> Self {
        if let Inner::Value { path, .. } = self.0.as_mut() {
            path.insert(0, seg);
        }
        self
    }

    /// An unlocated error that escaped to block level, placed at the block.
    fn located_at(self, span: Option<Span>, stmt: &[StmtId]) -> Located {
        match *self.0 {
            Inner::Located(l) => l,
            Inner::Value {
                path,
                missing: Some(name),
                ..
            } if path.is_empty() => {
                // Only block names contain dots.
                let what = if name.contains('.') {
                    "block"
                } else {
                    "attribute"
                };
                Located {
                    diag: diag_at(span, format!("missing required {what} {name:?}")),
                    stmt: Some(stmt.to_vec()),
                    missing: Some((stmt.to_vec(), name)),
                }
            }
            Inner::Value { path, message, .. } => {
                let p = path_text(&path);
                let message = if p.is_empty() {
                    message
                } else {
                    format!("{} {message}", p.trim_start_matches('.'))
                };
                Located {
                    diag: diag_at(span, message),
                    stmt: Some(stmt.to_vec()),
                    missing: None,
                }
            }
        }
    }
}

fn diag_at(span: Option<Span>, message: String) -> Diagnostic {
    match span {
        Some(s) => Diagnostic::error(s, message),
        None => Diagnostic::unspanned(message),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_ref() {
            Inner::Value { path, message, .. } => {
                let p = path_text(path);
                if p.is_empty() {
                    f.write_str(message)
                } else {
                    write!(f, "{p} {message}")
                }
            }
            Inner::Located(l) => f.write_str(&l.diag.message),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::value(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Error(Box::new(Inner::Value {
            path: Vec::new(),
            message: format!("missing required field {field:?}"),
            missing: Some(field.to_string()),
        }))
    }
}

enum MissingCause {
    /// The field was given as `null`; this path should be zero-filled.
    Null(StmtPath),
    /// The field's statement was hidden after an earlier error.
    Hidden,
    Real,
}

fn body_at<'a>(root: &'a EvaluatedBody, path: &[StmtId]) -> Option<&'a EvaluatedBody> {
    let mut cur = root;
    for id in path {
        match id {
            StmtId::Block(i) => cur = &cur.blocks.get(*i)?.body,
            StmtId::Attr(_) => return None,
        }
    }
    Some(cur)
}

fn classify_missing(root: &EvaluatedBody, ctx: &Ctx, block: &[StmtId], name: &str) -> MissingCause {
    let Some(body) = body_at(root, block) else {
        return MissingCause::Real;
    };
    let with = |id: StmtId| {
        let mut p = block.to_vec();
        p.push(id);
        p
    };
    if let Some(i) = body.attributes.iter().position(|a| a.name == name) {
        let p = with(StmtId::Attr(i));
        if ctx.hidden.contains(&p) {
            return MissingCause::Hidden;
        }
        if matches!(body.attributes[i].value, Value::Null) && !ctx.null_zero.contains(&p) {
            return MissingCause::Null(p);
        }
        return MissingCause::Real;
    }
    let blocks: Vec<StmtPath> = body
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.name == name)
        .map(|(i, _)| with(StmtId::Block(i)))
        .collect();
    if !blocks.is_empty() && blocks.iter().all(|p| ctx.hidden.contains(p)) {
        return MissingCause::Hidden;
    }
    MissingCause::Real
}

#[derive(Default)]
struct Ctx {
    hidden: HashSet<StmtPath>,
    null_zero: HashSet<StmtPath>,
    /// Errors that do not stop decoding (unknown names), gathered during one round.
    collected: RefCell<Vec<Diagnostic>>,
}

impl Ctx {
    fn collect(&self, d: Diagnostic) {
        self.collected.borrow_mut().push(d);
    }
}

// ---------------------------------------------------------------------------------------------
// Bodies and blocks
// ---------------------------------------------------------------------------------------------

/// A body: the component's own (root) or a nested block's.
struct BodyDe<'a> {
    body: &'a EvaluatedBody,
    /// The statement path of the block owning this body (empty for the root).
    path: StmtPath,
    /// The block's name; `None` for the root body.
    name: Option<&'a str>,
    /// The block's label when it should be offered to a `$label` field.
    label: Option<&'a str>,
    /// Where errors about the body as a whole point.
    span: Option<Span>,
    ctx: &'a Ctx,
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

    fn block_name(&self) -> &str {
        self.name.unwrap_or("")
    }

    /// The body's statements in source order, minus hidden ones, unknown names (collected as
    /// errors) and null attributes (defaults apply), blocks grouped by name.
    fn entries(&self, fields: Option<&[&str]>, allow_blocks: bool) -> Result<Vec<Entry<'a>>, Error> {
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
                ctx.collect(Diagnostic::error(
                    a.span,
                    format!("unrecognized attribute name {:?}", a.name),
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
                ctx.collect(Diagnostic::error(
                    b.header_span,
                    format!("unrecognized block name {:?}", b.name),
                ));
                continue;
            }
            if seen_attrs.contains(b.name.as_str()) {
                ctx.collect(Diagnostic::error(
                    b.header_span,
                    format!("{:?} is defined both as an attribute and as a block", b.name),
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

    fn fail(&self, message: String) -> Error {
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
        Error(Box::new(Inner::Located(e.located_at(self.span, &self.path))))
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
                    return Err(self.fail(format!(
                        "block {name:?} does not support specifying labels"
                    )));
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
                Diagnostic::error(b.header_span, format!("unrecognized block name {:?}", b.name)),
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

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, Error> {
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

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
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
            Some(Entry::Attr(path, attr)) => seed.deserialize(AttrDe {
                attr,
                path,
            }),
            Some(Entry::Group(name, blocks)) => seed.deserialize(GroupDe {
                name,
                blocks,
                ctx: self.ctx,
            }),
            None => Err(Error::value("internal error: value requested before key")),
        }
    }
}

/// Every (non-hidden) block of one name in a body.
struct GroupDe<'a> {
    name: &'a str,
    blocks: Vec<(StmtPath, &'a EvaluatedBlock)>,
    ctx: &'a Ctx,
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

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
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
        if name == CAPSULE_NEWTYPE || name == SECRET_NEWTYPE {
            return self.first()?.deserialize_newtype_struct(name, visitor);
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

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let Some(de) = self.group.block_de(self.next, true) else {
            return Ok(None);
        };
        self.next += 1;
        seed.deserialize(de).map(Some)
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

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
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
        self.next += 1;
        let de = BodyDe {
            label: de.label,
            ..de
        };
        seed.deserialize(LabelOptional(de))
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
        self.0.deserialize_newtype_struct(name, visitor)
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
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        self.0.deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.0.deserialize_tuple_struct(name, len, visitor)
    }

    label_optional_forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_unit deserialize_seq deserialize_identifier deserialize_ignored_any
    }
}

// ---------------------------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------------------------

/// One attribute: decodes its value and turns value errors into diagnostics pointing into the
/// attribute's expression.
struct AttrDe<'a> {
    attr: &'a EvaluatedAttribute,
    path: StmtPath,
}

impl AttrDe<'_> {
    fn finish_err(&self, e: Error) -> Error {
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

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/// A value, decoded with Alloy's conversions. Errors carry the path inside the value.
struct ValueDe<'a> {
    value: &'a Value,
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
            Value::Function(_) | Value::Capsule(_) => {
                Err(Error::value(format!("cannot decode {} here", self.describe())))
            }
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
        if name == CAPSULE_NEWTYPE {
            return match self.value {
                Value::Capsule(c) => {
                    let idx = put_capsule(c.clone());
                    visitor.visit_newtype_struct(U64Deserializer::<Error>::new(idx))
                }
                _ => visitor.visit_newtype_struct(StringDeserializer::<Error>::new(self.describe())),
            };
        }
        if name == SECRET_NEWTYPE {
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

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
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
                Some((k, v)) => visitor.visit_enum(ValueEnum { variant: k, value: v }),
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

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
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

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((k, v)) = self.iter.next() else {
            return Ok(None);
        };
        self.pending = Some((k, v));
        seed.deserialize(StrDeserializer::<Error>::new(k))
            .map(Some)
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

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self::Variant), Error> {
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

