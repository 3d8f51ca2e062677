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
use super::types::{
    CAPSULE_NEWTYPE, SECRET_NEWTYPE, VALUE_NEWTYPE, VIEW_NEWTYPE, capsule_mark, capsule_reset,
    note_secret_decoded, put_capsule, take_secret_decoded,
};
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
            seq_element: false,
            ctx: &ctx,
        });
        capsule_reset(mark);
        let located = match res {
            Ok(v) => {
                ctx.keep_collected(&mut errors);
                if errors.is_empty() {
                    return Ok(v);
                }
                return Err(finish(errors));
            }
            Err(e) => e.located_at(span, &[]),
        };
        // Unknown names found on the way are real errors whatever happens to this round.
        ctx.keep_collected(&mut errors);
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
        // An error about a whole block (a `try_from` validation) after one of its statements was
        // hidden is most likely caused by the default that took the hidden statement's place
        // (`action = "Replace"` hidden, then "replace action requires 'target_label'"): the real
        // error is already recorded, so this one is not.
        let consequence = stmt.as_ref().is_some_and(|p| ctx.hides_inside(p));
        if !consequence {
            errors.push(diag);
        }
        match stmt {
            Some(p) if !p.is_empty() && !ctx.hidden.contains(&p) => {
                ctx.hidden.insert(p);
            }
            _ => break,
        }
    }
    ctx.keep_collected(&mut errors);
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

    /// Moves this round's collected errors into `errors`, skipping ones an earlier round found.
    fn keep_collected(&self, errors: &mut Vec<Diagnostic>) {
        for d in self.collected.borrow_mut().drain(..) {
            if !errors.contains(&d) {
                errors.push(d);
            }
        }
    }

    /// Whether a statement strictly inside `block` is hidden.
    fn hides_inside(&self, block: &[StmtId]) -> bool {
        self.hidden
            .iter()
            .any(|p| p.len() > block.len() && p.starts_with(block))
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
    /// An element of a repeated block: only a struct makes sense (a map here would be a list of
    /// objects, which is an attribute).
    seq_element: bool,
    ctx: &'a Ctx,
}

/// Places an error that escaped a block's decoding at that block.
fn at_block(e: Error, b: &EvaluatedBlock, path: &[StmtId]) -> Error {
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

    fn block_name(&self) -> &str {
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

/// Parses, evaluates (standard library only) and decodes `src` as the body of a block, with
/// errors as `line:col: message`: what component argument tests need.
#[cfg(test)]
pub(crate) fn decode_source<T: DeserializeOwned>(src: &str) -> Result<T, Vec<String>> {
    let (file, diags) = crate::syntax::parser::parse_file(src);
    assert!(diags.is_empty(), "{diags:?}");
    let body = crate::syntax::eval::eval_body(&file.body, &crate::syntax::eval::Scope::stdlib())
        .expect("eval");
    let source = crate::syntax::diag::Source::new("t", src);
    from_body(&body).map_err(|ds| {
        ds.iter()
            .map(|d| {
                let (l, c) = source.line_col(d.span.map_or(0, |s| s.start as usize));
                format!("{l}:{c}: {}", d.message)
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::marker::PhantomData;
    use std::sync::Arc;

    use serde::Deserialize;

    use super::*;
    use crate::syntax::diag::Source;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;
    use crate::syntax::types::{CapsuleRef, Duration, SecretString};
    use crate::syntax::value::{Capsule, Secret};

    #[derive(Debug, PartialEq)]
    struct Receiver(&'static str);

    fn scope() -> Scope {
        let mut s = Scope::stdlib();
        s.set("secret", Value::Secret(Secret::new("hunter2")));
        s.insert_path(
            &["pyroscope", "write", "a", "receiver"],
            Value::Capsule(Capsule::new(
                "pyroscope.Appendable",
                Arc::new(Receiver("a")),
            )),
        );
        s.insert_path(
            &["other", "capsule"],
            Value::Capsule(Capsule::new("other.Thing", Arc::new(7u32))),
        );
        let mut kv = BTreeMap::new();
        let mut obj = BTreeMap::new();
        obj.insert(
            "field1".to_string(),
            Value::Array(vec![
                Value::Number(Number::Int(15)),
                Value::Number(Number::Int(30)),
                Value::string("Hello, world!"),
            ]),
        );
        kv.insert("object".to_string(), Value::Object(obj));
        s.set("key_value", Value::Object(kv));
        s
    }

    /// Parses and evaluates `src` as a body, then decodes it; errors as `line:col: message`
    /// (or just the message when unpositioned).
    fn decode<T: DeserializeOwned>(src: &str) -> Result<T, Vec<String>> {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &scope()).map_err(|d| vec![format!("eval: {d:?}")])?;
        let source = Source::new("", src);
        from_body_at(&body, Span::new(0, 0)).map_err(|ds| {
            ds.iter()
                .map(|d| match d.span {
                    Some(s) => {
                        let (l, c) = source.line_col(s.start as usize);
                        format!("{l}:{c}: {}", d.message)
                    }
                    None => d.message.clone(),
                })
                .collect()
        })
    }

    fn err<T: DeserializeOwned + fmt::Debug>(src: &str) -> Vec<String> {
        match decode::<T>(src) {
            Ok(v) => panic!("{src}: expected errors, got {v:?}"),
            Err(e) => e,
        }
    }

    // A component-like schema.

    trait ProfileKind {
        const PATH: &'static str;
        const ENABLED: bool;
    }
    #[derive(Debug, PartialEq)]
    struct Memory;
    impl ProfileKind for Memory {
        const PATH: &'static str = "/debug/pprof/allocs";
        const ENABLED: bool = true;
    }
    #[derive(Debug, PartialEq)]
    struct Mutex;
    impl ProfileKind for Mutex {
        const PATH: &'static str = "/debug/pprof/mutex";
        const ENABLED: bool = false;
    }

    /// Blocks of the same shape with different defaults: one type per block, via a marker.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(default, bound = "")]
    struct Profile<K: ProfileKind> {
        enabled: bool,
        path: String,
        delta: bool,
        #[serde(skip)]
        _k: PhantomData<K>,
    }
    impl<K: ProfileKind> Default for Profile<K> {
        fn default() -> Self {
            Profile {
                enabled: K::ENABLED,
                path: K::PATH.to_string(),
                delta: false,
                _k: PhantomData,
            }
        }
    }

    #[derive(Debug, PartialEq, Deserialize, Default)]
    #[serde(default)]
    struct Custom {
        #[serde(rename = "$label")]
        label: String,
        path: String,
        enabled: bool,
    }

    #[derive(Debug, PartialEq, Deserialize, Default)]
    #[serde(default)]
    struct ProfilingConfig {
        #[serde(rename = "profile.memory")]
        memory: Profile<Memory>,
        #[serde(rename = "profile.mutex")]
        mutex: Profile<Mutex>,
        #[serde(rename = "profile.custom")]
        custom: Vec<Custom>,
        path_prefix: String,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct BasicAuth {
        username: String,
        password: Option<SecretString>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(default)]
    struct Args {
        targets: Vec<BTreeMap<String, String>>,
        forward_to: Vec<CapsuleRef<Receiver>>,
        job_name: Option<String>,
        scrape_interval: Duration,
        scrape_timeout: Duration,
        port: u16,
        ratio: f64,
        enabled: bool,
        profiling_config: ProfilingConfig,
        basic_auth: Option<BasicAuth>,
        bearer_token: SecretString,
    }

    impl Default for Args {
        fn default() -> Self {
            Args {
                targets: Vec::new(),
                forward_to: Vec::new(),
                job_name: None,
                scrape_interval: Duration::from_secs(15),
                scrape_timeout: Duration::from_secs(10),
                port: 80,
                ratio: 1.0,
                enabled: true,
                profiling_config: ProfilingConfig::default(),
                basic_auth: None,
                bearer_token: SecretString::default(),
            }
        }
    }

    #[test]
    fn decodes_a_component() {
        let src = r#"
targets    = [{"__address__" = "localhost:4100", "port" = 4100}]
forward_to = [pyroscope.write.a.receiver]
job_name   = null
scrape_interval = "1m30s"
port = "8080"
ratio = "0.5"
bearer_token = secret
basic_auth {
  username = "u"
  password = "p"
}
profiling_config {
  profile.mutex {
    enabled = true
  }
  profile.custom "one" {
    path = "/one"
  }
  profile.custom "two" {
    path    = "/two"
    enabled = true
  }
}
"#;
        let a: Args = decode(src).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(a.targets.len(), 1);
        // number -> string conversion inside a map.
        assert_eq!(a.targets[0].get("port").map(String::as_str), Some("4100"));
        assert_eq!(a.forward_to.len(), 1);
        assert_eq!(*a.forward_to[0], Receiver("a"));
        assert_eq!(a.job_name, None);
        assert_eq!(a.scrape_interval, Duration::from_secs(90));
        // Omitted: default kept.
        assert_eq!(a.scrape_timeout, Duration::from_secs(10));
        // Numeric strings convert to numbers.
        assert_eq!(a.port, 8080);
        assert_eq!(a.ratio, 0.5);
        assert!(a.enabled);
        assert_eq!(a.bearer_token.expose(), "hunter2");
        let auth = a
            .basic_auth
            .as_ref()
            .map(|b| (b.username.as_str(), b.password.as_ref().map(|p| p.expose())));
        assert_eq!(auth, Some(("u", Some("p"))));
        let pc = &a.profiling_config;
        // Defaults per block: the omitted block keeps its defaults, the written one keeps
        // the defaults of the fields it does not set.
        assert_eq!(pc.memory, Profile::<Memory>::default());
        assert!(pc.mutex.enabled);
        assert_eq!(pc.mutex.path, "/debug/pprof/mutex");
        assert_eq!(
            pc.custom,
            vec![
                Custom {
                    label: "one".into(),
                    path: "/one".into(),
                    enabled: false
                },
                Custom {
                    label: "two".into(),
                    path: "/two".into(),
                    enabled: true
                },
            ]
        );
    }

    #[test]
    fn labelled_blocks_as_map() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Inner {
            path: String,
        }
        #[derive(Debug, Deserialize)]
        struct Outer {
            #[serde(rename = "profile.custom", default)]
            custom: BTreeMap<String, Inner>,
        }
        let o: Outer = decode(
            "profile.custom \"b\" { path = \"/b\" }\nprofile.custom \"a\" { path = \"/a\" }\n",
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(o.custom.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(o.custom["b"].path, "/b");
        let o: Outer = decode("").unwrap_or_else(|e| panic!("{e:?}"));
        assert!(o.custom.is_empty());
        assert_eq!(
            err::<Outer>(
                "profile.custom \"a\" { path = \"/a\" }\nprofile.custom \"a\" { path = \"/b\" }\n"
            ),
            ["2:1: block \"profile.custom\" with label \"a\" may only be specified once"]
        );
        assert_eq!(
            err::<Outer>(
                "profile.custom \"a\" { path = \"/a\" }\nprofile.custom { path = \"/b\" }\n"
            ),
            ["2:1: block \"profile.custom\" requires non-empty label"]
        );
    }

    #[test]
    fn strictness_errors() {
        let cases: &[(&str, &[&str])] = &[
            (
                "bogus = 1\n",
                &["1:1: unrecognized attribute name \"bogus\""],
            ),
            ("bogus { }\n", &["1:1: unrecognized block name \"bogus\""]),
            (
                "profiling_config {\n  profile.nope { }\n  path_prefix = \"/x\"\n  wat = 1\n}\n",
                &[
                    "2:3: unrecognized block name \"profile.nope\"",
                    "4:3: unrecognized attribute name \"wat\"",
                ],
            ),
            (
                "basic_auth {\n  password = \"x\"\n}\n",
                &["1:1: missing required attribute \"username\""],
            ),
            (
                "basic_auth = 5\n",
                &["1:1: \"basic_auth\" must be a block, but is used as an attribute"],
            ),
            (
                "port { }\n",
                &["1:1: \"port\" must be an attribute, but is used as a block"],
            ),
            (
                "targets { }\n",
                &["1:1: \"targets\" must be an attribute, but is used as a block"],
            ),
            (
                "basic_auth { username = \"a\" }\nbasic_auth { username = \"b\" }\n",
                &["2:1: block \"basic_auth\" may only be specified once"],
            ),
            (
                "basic_auth \"x\" { username = \"a\" }\n",
                &["1:1: block \"basic_auth\" does not support specifying labels"],
            ),
            (
                "profiling_config {\n  profile.custom { path = \"/x\" }\n}\n",
                &["2:3: block \"profile.custom\" requires non-empty label"],
            ),
            (
                "profiling_config {\n  profile.custom \"\" { path = \"/x\" }\n}\n",
                &["2:3: block \"profile.custom\" requires non-empty label"],
            ),
            (
                "port = 1\nport = 2\n",
                &["2:1: attribute \"port\" may only be provided once"],
            ),
        ];
        for (src, want) in cases {
            assert_eq!(err::<Args>(src), *want, "{src}");
        }
    }

    #[test]
    fn type_errors() {
        let cases: &[(&str, &[&str])] = &[
            ("port = true\n", &["1:8: true should be number, got bool"]),
            (
                "port = \"80x\"\n",
                &["1:8: \"80x\" should be number, got string"],
            ),
            (
                "port = 70000\n",
                &["1:8: 70000 invalid value: integer `70000`, expected u16"],
            ),
            (
                "enabled = \"yes\"\n",
                &["1:11: \"yes\" should be bool, got string"],
            ),
            (
                "job_name = [0, 1, 2]\n",
                &["1:12: [0, 1, 2] should be string, got array"],
            ),
            (
                "scrape_interval = \"1d\"\n",
                &["1:19: \"1d\" time: unknown unit \"d\" in duration \"1d\""],
            ),
            (
                "scrape_interval = 5\n",
                &["1:19: 5 time: missing unit in duration \"5\""],
            ),
            (
                "targets = [{a = \"x\"}, 5]\n",
                &["1:23: 5 should be object, got number"],
            ),
            (
                "targets = [{a = \"x\", b = [1]}]\n",
                &["1:26: [1] should be string, got array"],
            ),
            (
                "job_name = secret\n",
                &["1:12: secret secrets may not be converted into strings"],
            ),
            (
                "forward_to = [1]\n",
                &["1:15: 1 expected capsule(Receiver), got number"],
            ),
            (
                "forward_to = [other.capsule]\n",
                &["1:15: other.capsule expected capsule(Receiver), got capsule(other.Thing)"],
            ),
            (
                "forward_to = pyroscope.write.a.receiver\n",
                &["1:14: pyroscope.write.a.receiver should be array, got capsule"],
            ),
            (
                "bearer_token = [1]\n",
                &["1:16: [1] should be secret, got array"],
            ),
            // Every bad attribute is reported, in source order, nested ones included.
            (
                "port = true\nenabled = 1\nprofiling_config {\n  profile.mutex { enabled = \"no\" }\n  path_prefix = [1]\n}\nratio = \"x\"\nbogus = 1\n",
                &[
                    "1:8: true should be number, got bool",
                    "2:11: 1 should be bool, got number",
                    "4:29: \"no\" should be bool, got string",
                    "5:17: [1] should be string, got array",
                    "7:9: \"x\" should be number, got string",
                    "8:1: unrecognized attribute name \"bogus\"",
                ],
            ),
            // An error inside a required block also reports the rest.
            (
                "basic_auth { username = [1] }\nport = false\n",
                &[
                    "1:25: [1] should be string, got array",
                    "2:8: false should be number, got bool",
                ],
            ),
        ];
        for (src, want) in cases {
            assert_eq!(err::<Args>(src), *want, "{src}");
        }
    }

    #[test]
    fn nulls() {
        // null means "use the default".
        let a: Args = decode("port = null\nscrape_interval = null\nforward_to = null\n")
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(a.port, 80);
        assert_eq!(a.scrape_interval, Duration::from_secs(15));
        assert!(a.forward_to.is_empty());

        // A required attribute assigned null gets its zero value (Alloy's behaviour).
        #[derive(Debug, Deserialize)]
        struct Req {
            targets: Vec<String>,
            name: String,
            n: u32,
        }
        let r: Req =
            decode("targets = null\nname = null\nn = null\n").unwrap_or_else(|e| panic!("{e:?}"));
        assert!(r.targets.is_empty());
        assert_eq!(r.name, "");
        assert_eq!(r.n, 0);
        assert_eq!(
            err::<Req>("name = null\n"),
            ["1:1: missing required attribute \"targets\""]
        );
        // null inside lists decodes to the zero value.
        let r: Req = decode("targets = [\"a\", null]\nname = \"x\"\nn = 1\n")
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(r.targets, ["a", ""]);
    }

    #[test]
    fn secrets_and_strings() {
        #[derive(Debug, Deserialize)]
        struct S {
            a: SecretString,
            b: SecretString,
            c: String,
            d: Option<SecretString>,
        }
        let s: S = decode(
            "a = secret\nb = \"plain\"\nc = convert.nonsensitive(secret)\nd = \"x\" + secret\n",
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(s.a.expose(), "hunter2");
        assert_eq!(s.b.expose(), "plain");
        assert_eq!(s.c, "hunter2");
        assert_eq!(s.d.as_ref().map(|d| d.expose()), Some("xhunter2"));
        assert_eq!(format!("{:?}", s.a), "(secret)");
        // A secret never reaches a plain string or an untyped target, and errors do not
        // show it.
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct P {
            #[serde(default)]
            c: String,
            #[serde(default)]
            any: Option<serde_json::Value>,
        }
        for src in [
            "c = secret\n",
            "c = \"a\" + secret\n",
            "any = secret\n",
            "any = [secret]\n",
        ] {
            let e = err::<P>(src);
            assert!(
                e[0].contains("secrets may not be converted into strings"),
                "{e:?}"
            );
            assert!(!e[0].contains("hunter2"));
        }
    }

    #[test]
    fn syntax_test_schemas() {
        // Schemas of grafana/alloy's syntax/vm tests (the `decode` cases of the corpus).
        #[derive(Debug, Deserialize)]
        struct NumberOnly {
            #[allow(dead_code)]
            number: f64,
        }
        #[derive(Debug, Deserialize)]
        struct NumberString {
            #[allow(dead_code)]
            number: f64,
            #[allow(dead_code)]
            string: String,
        }
        #[derive(Debug, Deserialize)]
        struct ChildAttr {
            #[allow(dead_code)]
            attr: bool,
        }
        #[derive(Debug, Deserialize)]
        struct WithChild {
            #[allow(dead_code)]
            child: ChildAttr,
        }
        #[derive(Debug, Deserialize)]
        struct WithChildBlock {
            #[allow(dead_code)]
            value: f64,
            #[serde(rename = "child.block")]
            #[allow(dead_code)]
            child: ChildAttr,
        }
        #[derive(Debug, Deserialize)]
        struct ValueOnly {
            #[allow(dead_code)]
            value: f64,
        }
        #[derive(Debug, Deserialize)]
        struct Labelled {
            #[serde(rename = "$label")]
            #[allow(dead_code)]
            label: String,
        }
        #[derive(Debug, Deserialize)]
        struct Empty {}
        #[derive(Debug, Deserialize)]
        struct Key {
            #[allow(dead_code)]
            key: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
        }
        #[derive(Debug, Deserialize)]
        struct KeyString {
            #[allow(dead_code)]
            key: String,
        }
        #[derive(Debug, Deserialize)]
        struct Settings {
            #[serde(rename = "some.settings")]
            #[allow(dead_code)]
            settings: BTreeMap<String, crate::syntax::types::RawValue>,
        }

        fn first_block<T: DeserializeOwned + fmt::Debug>(src: &str) -> Vec<String> {
            #[derive(Debug, Deserialize)]
            struct Wrap<T> {
                #[allow(dead_code)]
                some_block: T,
            }
            err::<Wrap<T>>(src)
        }

        assert_eq!(
            first_block::<NumberOnly>(
                "some_block {\n\t\t\tnumber  = 15 \n\t\t\tinvalid = \"This attribute does not exist!\"\n\t\t}"
            ),
            ["3:4: unrecognized attribute name \"invalid\""]
        );
        assert_eq!(
            first_block::<WithChild>("some_block {\n\t\t\tchild = 15\n\t\t}"),
            ["2:4: \"child\" must be a block, but is used as an attribute"]
        );
        assert_eq!(
            first_block::<WithChildBlock>("some_block {\n\t\t\tvalue = 15\n\t\t}"),
            ["1:1: missing required block \"child.block\""]
        );
        assert_eq!(
            first_block::<ValueOnly>(
                "some_block {\n\t\t\tvalue = 15\n\n\t\t\tchild.block { attr = true }\n\t\t}"
            ),
            ["4:4: unrecognized block name \"child.block\""]
        );
        assert_eq!(
            first_block::<Empty>("some_block \"label_value_2\" {}"),
            ["1:1: block \"some_block\" does not support specifying labels"]
        );
        assert_eq!(
            first_block::<Labelled>("some_block {}"),
            ["1:1: block \"some_block\" requires non-empty label"]
        );
        assert_eq!(
            first_block::<Labelled>("some_block \"\" {}"),
            ["1:1: block \"some_block\" requires non-empty label"]
        );
        assert_eq!(
            first_block::<NumberOnly>("some_block {\n\t\t\tnumber {} \n\t\t}"),
            ["2:4: \"number\" must be an attribute, but is used as a block"]
        );
        assert_eq!(
            first_block::<NumberString>("some_block {\n\t\t\tnumber = 15 \n\t\t}"),
            ["1:1: missing required attribute \"string\""]
        );
        assert_eq!(
            err::<Settings>(
                "\n\t\t\t\tsome.settings \"foo\" {\n\t\t\t\t\tfield_a = 12345\n\t\t\t\t}\n\t\t\t"
            ),
            ["2:5: block \"some.settings\" requires empty label"]
        );
        assert_eq!(
            err::<Settings>(
                "\n\t\t\t\tsome.settings {\n\t\t\t\t\tinner_map {\n\t\t\t\t\t\tfield_a = 12345\n\t\t\t\t\t}\n\t\t\t\t}\n\t\t\t"
            ),
            ["3:6: nested blocks not supported here"]
        );
        assert_eq!(
            err::<Key>("key = true"),
            ["1:7: true should be object, got bool"]
        );
        assert_eq!(
            err::<Key>(
                "\n\t\t\t\tkey = {\n\t\t\t\t\tobject = {\n\t\t\t\t\t\tfield1 = [15, 30, \"Hello, world!\"],\n\t\t\t\t\t},\n\t\t\t\t}\n\t\t\t"
            ),
            ["4:25: \"Hello, world!\" should be number, got string"]
        );
        assert_eq!(
            err::<Key>("key = key_value"),
            ["1:7: key_value.object.field1[2] should be number, got string"]
        );
        assert_eq!(
            err::<KeyString>("key = [0, 1, 2]"),
            ["1:7: [0, 1, 2] should be string, got array"]
        );
        // And the map form accepts plain attributes.
        let s: Settings = decode("some.settings {\n  a = 1\n  b = \"x\"\n}\n")
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(s.settings.len(), 2);
    }

    #[test]
    fn objects_into_structs_and_enums() {
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(rename_all = "lowercase")]
        enum Role {
            Pod,
            Node,
        }
        #[derive(Debug, Deserialize, PartialEq)]
        struct Sel {
            role: Role,
            label: Option<String>,
        }
        #[derive(Debug, Deserialize)]
        struct S {
            role: Role,
            sel: Vec<Sel>,
            obj: Sel,
        }
        let s: S = decode("role = \"pod\"\nsel = [{role = \"node\"}, {role = \"pod\", label = \"x\"}]\nobj = {role = \"node\"}\n")
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(s.role, Role::Pod);
        assert_eq!(
            s.sel[1],
            Sel {
                role: Role::Pod,
                label: Some("x".into())
            }
        );
        assert_eq!(s.obj.role, Role::Node);
        let e = err::<S>("role = \"pods\"\nsel = []\nobj = {role = \"pod\", x = 1}\n");
        assert_eq!(
            e[0],
            "1:8: \"pods\" unknown variant `pods`, expected `pod` or `node`"
        );
        assert_eq!(
            e[1],
            "3:7: {role = \"pod\", x = 1} has an unrecognized field \"x\""
                .replace("{role", "{ role")
                .replace("1}", "1 }")
        );
        assert_eq!(
            err::<S>("role = \"pod\"\nsel = [{}]\nobj = {role = \"pod\"}\n"),
            ["2:8: {} missing required field \"role\""]
        );
    }

    #[test]
    fn validation_errors_point_at_the_block() {
        #[derive(Debug, Deserialize)]
        #[serde(try_from = "Raw")]
        struct Checked {
            #[allow(dead_code)]
            interval: Duration,
        }
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Raw {
            interval: Duration,
        }
        impl TryFrom<Raw> for Checked {
            type Error = String;
            fn try_from(r: Raw) -> Result<Self, String> {
                if r.interval < Duration::from_secs(2) {
                    return Err("scrape_interval must be at least 2 seconds".into());
                }
                Ok(Checked {
                    interval: r.interval,
                })
            }
        }
        #[derive(Debug, Deserialize)]
        struct Outer {
            #[allow(dead_code)]
            inner: Checked,
        }
        assert_eq!(
            err::<Checked>("interval = \"1s\"\n"),
            ["1:1: scrape_interval must be at least 2 seconds"]
        );
        assert_eq!(
            err::<Outer>("\ninner {\n  interval = \"1s\"\n}\n"),
            ["2:1: scrape_interval must be at least 2 seconds"]
        );
        // Once a bad statement of the block is set aside, a validation failure of the block is
        // the default's doing and is not reported; unknown names found meanwhile are kept.
        assert_eq!(
            err::<Outer>("inner {\n  interval = 1\n  x = 1\n}\n"),
            [
                "2:14: 1 time: missing unit in duration \"1\"",
                "3:3: unrecognized attribute name \"x\""
            ]
        );
    }

    #[test]
    fn values_directly() {
        let v = Value::Array(vec![Value::string("1"), Value::Number(Number::Int(2))]);
        assert_eq!(from_value::<Vec<u32>>(&v), Ok(vec![1, 2]));
        assert_eq!(
            from_value::<Vec<String>>(&v),
            Ok(vec!["1".to_string(), "2".to_string()])
        );
        assert_eq!(
            from_value::<Vec<bool>>(&v),
            Err("[0] should be bool, got string".to_string())
        );
        let c = Value::Capsule(Capsule::new(
            "pyroscope.Appendable",
            Arc::new(Receiver("z")),
        ));
        let r = from_value::<CapsuleRef<Receiver>>(&c).map(|r| r.0.0);
        assert_eq!(r, Ok("z"));
        // Capsules left behind by a failed decode do not accumulate in the side table.
        let bad = Value::Array(vec![c.clone(), Value::Null]);
        assert!(from_value::<(CapsuleRef<Receiver>, CapsuleRef<Receiver>)>(&bad).is_err());
        assert_eq!(crate::syntax::types::capsule_mark(), 0);
    }
}
