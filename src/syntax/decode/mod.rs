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
//!
//! # Layout
//!
//! Serde drives decoding from the target type, so each shape of input has its own
//! deserializer: `body` for a body (the root or a block's), `group` for the blocks sharing a
//! name, `attr` for an attribute and `value` for the value inside it. `error` is the error
//! they share, and `rounds` the state that lets [`from_body_at`] decode again to find further
//! errors.

mod attr;
mod body;
mod error;
mod group;
mod invalid;
mod rounds;
mod value;

use std::collections::HashSet;

use serde::de::DeserializeOwned;

use super::ast::Span;
use super::diag::Diagnostic;
use super::eval::{EvaluatedBlock, EvaluatedBody, path_text};
use super::types::{capsule_mark, capsule_reset};
use super::value::Value;
use body::BodyDe;
use error::{Inner, Located};
use rounds::{Ctx, MissingCause, classify_missing};
use value::ValueDe;

pub use super::types::LABEL_FIELD;
pub use error::Error;
pub use invalid::{ArgStep, Invalid};

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
    let (value, errors, _) = decode_rounds(body, block_span.into(), Ctx::default());
    match value {
        Some(v) if errors.is_empty() => Ok(v),
        _ => Err(errors),
    }
}

/// What [`from_body_lenient`] found.
pub struct Lenient<T> {
    /// The arguments decoded with every statement at fault left out (their defaults in their
    /// place), if that much decodes.
    pub value: Option<T>,
    pub errors: Vec<Diagnostic>,
    /// The statements (attributes and blocks) that were left out, so that a check of `value`
    /// can tell which values are defaults standing in for what the user wrote.
    pub skipped: Vec<Span>,
}

/// Decodes as much as possible, for `scraper check`: every error, and the value with the
/// statements at fault left out. `unevaluated` holds the statement spans of attributes to
/// leave out (they must be in `body`, with any value): those that could not be evaluated,
/// whose errors the caller reports, and those left out on purpose without an error (values
/// known only once a component is built). They are left out from the
/// start, so the rest of the body is still checked without reporting what follows from their
/// absence (a required attribute missing).
pub fn from_body_lenient<T: DeserializeOwned>(
    body: &EvaluatedBody,
    block_span: impl Into<Option<Span>>,
    unevaluated: &HashSet<Span>,
) -> Lenient<T> {
    let mut ctx = Ctx::default();
    hide_unevaluated(body, &mut Vec::new(), unevaluated, &mut ctx.hidden);
    let (value, errors, ctx) = decode_rounds(body, block_span.into(), ctx);
    let mut skipped = Vec::new();
    skipped_spans(body, &mut Vec::new(), &ctx.hidden, &mut skipped);
    Lenient {
        value,
        errors,
        skipped,
    }
}

/// `body` as the value of [`from_body_lenient`] saw it: without the blocks it left out
/// (`skipped`), so that the `index`-th block of a name is the `index`-th element the value
/// holds. A component's validation numbers the blocks it finds (`Invalid`'s `endpoint[1]`);
/// without this, after a left-out `endpoint` its errors would land on the block before the
/// one at fault. Attributes stay: a left-out one is still where the user wrote it.
pub fn without_skipped_blocks(body: &EvaluatedBody, skipped: &[Span]) -> EvaluatedBody {
    EvaluatedBody {
        attributes: body.attributes.clone(),
        blocks: body
            .blocks
            .iter()
            .filter(|b| !skipped.contains(&b.span))
            .map(|b| EvaluatedBlock {
                name: b.name.clone(),
                label: b.label.clone(),
                body: without_skipped_blocks(&b.body, skipped),
                span: b.span,
                header_span: b.header_span,
            })
            .collect(),
    }
}

fn skipped_spans(
    body: &EvaluatedBody,
    path: &mut Vec<error::StmtId>,
    hidden: &HashSet<error::StmtPath>,
    out: &mut Vec<Span>,
) {
    for (i, a) in body.attributes.iter().enumerate() {
        path.push(error::StmtId::Attr(i));
        if hidden.contains(path) {
            out.push(a.span);
        }
        path.pop();
    }
    for (i, b) in body.blocks.iter().enumerate() {
        path.push(error::StmtId::Block(i));
        if hidden.contains(path) {
            out.push(b.span);
        }
        skipped_spans(&b.body, path, hidden, out);
        path.pop();
    }
}

fn hide_unevaluated(
    body: &EvaluatedBody,
    path: &mut Vec<error::StmtId>,
    unevaluated: &HashSet<Span>,
    hidden: &mut HashSet<error::StmtPath>,
) {
    for (i, a) in body.attributes.iter().enumerate() {
        if unevaluated.contains(&a.span) {
            let mut p = path.clone();
            p.push(error::StmtId::Attr(i));
            hidden.insert(p);
        }
    }
    for (i, b) in body.blocks.iter().enumerate() {
        path.push(error::StmtId::Block(i));
        hide_unevaluated(&b.body, path, unevaluated, hidden);
        path.pop();
    }
}

/// Decodes round after round, each hiding the statement that failed the previous one, until a
/// round succeeds or nothing is left to hide: the value of the successful round, every error
/// found, and the final state (what was hidden).
fn decode_rounds<T: DeserializeOwned>(
    body: &EvaluatedBody,
    span: Option<Span>,
    mut ctx: Ctx,
) -> (Option<T>, Vec<Diagnostic>, Ctx) {
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
                return (Some(v), finish(errors), ctx);
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
                    // The field is missing only because we hid its statement: one that
                    // failed (its error is recorded), or one the caller left out on purpose
                    // (no error is due). Either way, hide the enclosing block to go on.
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
        // error is recorded elsewhere, or none is due because the statement was left out on
        // purpose (`unevaluated`), so this one is not.
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
    (None, finish(errors), ctx)
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
mod tests;
