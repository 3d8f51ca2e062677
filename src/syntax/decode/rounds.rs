//! What one decoding round leaves for the next. Serde stops at the first error, so the decoder
//! runs again with the failing statement hidden (or a null zero-filled) to find the next one;
//! this is the state carried between rounds and the judgement of why a field was missing.

use std::cell::RefCell;
use std::collections::HashSet;

use super::error::{StmtId, StmtPath};
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::EvaluatedBody;
use crate::syntax::value::Value;

pub(super) enum MissingCause {
    /// The field was given as `null`; this path should be zero-filled.
    Null(StmtPath),
    /// The field's statement was hidden: after an earlier error, or left out by the caller.
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

pub(super) fn classify_missing(
    root: &EvaluatedBody,
    ctx: &Ctx,
    block: &[StmtId],
    name: &str,
) -> MissingCause {
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
pub(super) struct Ctx {
    pub(super) hidden: HashSet<StmtPath>,
    pub(super) null_zero: HashSet<StmtPath>,
    /// Errors that do not stop decoding (unknown names), gathered during one round.
    pub(super) collected: RefCell<Vec<Diagnostic>>,
}

impl Ctx {
    pub(super) fn collect(&self, d: Diagnostic) {
        self.collected.borrow_mut().push(d);
    }

    /// Moves this round's collected errors into `errors`, skipping ones an earlier round found.
    pub(super) fn keep_collected(&self, errors: &mut Vec<Diagnostic>) {
        for d in self.collected.borrow_mut().drain(..) {
            if !errors.contains(&d) {
                errors.push(d);
            }
        }
    }

    /// Whether a statement strictly inside `block` is hidden.
    pub(super) fn hides_inside(&self, block: &[StmtId]) -> bool {
        self.hidden
            .iter()
            .any(|p| p.len() > block.len() && p.starts_with(block))
    }
}
