//! Evaluated block bodies: every attribute of a body and its nested blocks evaluated, with the
//! spans and expressions decoding needs to point its errors into the source.

use std::sync::atomic::{AtomicBool, Ordering};

use super::expr::eval_expr;
use super::scope::Scope;
use crate::syntax::ast::{self, Expr, Span};
use crate::syntax::diag::Diagnostic;
use crate::syntax::stdlib;
use crate::syntax::value::Value;

/// A block body with every attribute evaluated, ready to decode into component arguments.
///
/// Equality ignores spans and expressions: re-evaluating an unchanged block after an edit
/// elsewhere in the file gives an equal body, so the runtime can skip the component's update.
#[derive(Clone, Debug, Default)]
pub struct EvaluatedBody {
    pub attributes: Vec<EvaluatedAttribute>,
    pub blocks: Vec<EvaluatedBlock>,
}

#[derive(Debug)]
pub struct EvaluatedAttribute {
    pub name: String,
    pub value: Value,
    /// The whole `name = value` statement.
    pub span: Span,
    /// The value expression; decode errors point into it.
    pub value_span: Span,
    /// The expression the value came from, kept so decode errors can quote the innermost
    /// literal at fault as Alloy does. `None` for bodies built by hand.
    pub expr: Option<Box<Expr>>,
    /// Set by the decoder when the component's arguments take this attribute as a secret, so
    /// that a plain string written in the config (`password = "..."`) is redacted from the
    /// API like a secret value. Interior mutability because decoding borrows the body.
    pub sensitive: AtomicBool,
}

impl Clone for EvaluatedAttribute {
    fn clone(&self) -> Self {
        EvaluatedAttribute {
            name: self.name.clone(),
            value: self.value.clone(),
            span: self.span,
            value_span: self.value_span,
            expr: self.expr.clone(),
            sensitive: AtomicBool::new(self.is_sensitive()),
        }
    }
}

impl EvaluatedAttribute {
    pub fn is_sensitive(&self) -> bool {
        self.sensitive.load(Ordering::Relaxed)
    }

    pub(crate) fn mark_sensitive(&self) {
        self.sensitive.store(true, Ordering::Relaxed);
    }
}

#[derive(Clone, Debug)]
pub struct EvaluatedBlock {
    /// The dotted name, `profile.memory`.
    pub name: String,
    pub label: Option<String>,
    pub body: EvaluatedBody,
    /// The whole block.
    pub span: Span,
    /// The name and label, where errors about the block as a whole point.
    pub header_span: Span,
}

impl PartialEq for EvaluatedBody {
    fn eq(&self, other: &Self) -> bool {
        self.attributes == other.attributes && self.blocks == other.blocks
    }
}

impl PartialEq for EvaluatedAttribute {
    fn eq(&self, other: &Self) -> bool {
        // Value's PartialEq (not `values_equal`): functions and capsules compare by identity,
        // so an unchanged receiver does not look different.
        self.name == other.name && self.value == other.value
    }
}

impl PartialEq for EvaluatedBlock {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.label == other.label && self.body == other.body
    }
}

impl EvaluatedAttribute {
    /// An attribute built by hand (no source expression).
    pub fn new(name: impl Into<String>, value: Value, span: Span) -> Self {
        EvaluatedAttribute {
            name: name.into(),
            value,
            span,
            value_span: span,
            expr: None,
            sensitive: AtomicBool::new(false),
        }
    }
}

impl EvaluatedBody {
    pub fn attribute(&self, name: &str) -> Option<&EvaluatedAttribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    pub fn blocks_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a EvaluatedBlock> {
        self.blocks.iter().filter(move |b| b.name == name)
    }
}

/// Evaluates every attribute of a body and of its nested blocks. All failing attributes are
/// reported, not just the first.
pub fn eval_body(body: &ast::Body, scope: &Scope) -> Result<EvaluatedBody, Vec<Diagnostic>> {
    let mut failed = Vec::new();
    let out = eval_body_into(body, scope, &mut failed, false);
    if failed.is_empty() {
        Ok(out)
    } else {
        Err(failed.into_iter().map(|f| f.error).collect())
    }
}

/// An attribute whose value could not be evaluated.
#[derive(Clone, Debug)]
pub struct Unevaluated {
    /// The whole `name = value` statement.
    pub span: Span,
    pub error: Diagnostic,
}

/// Evaluates what can be evaluated: the body has every attribute, those that failed with a
/// null value, and the failures are returned beside it, so that the rest of the block can still
/// be decoded and checked (see `decode::from_body_lenient`).
pub fn eval_body_partial(body: &ast::Body, scope: &Scope) -> (EvaluatedBody, Vec<Unevaluated>) {
    let mut failed = Vec::new();
    let out = eval_body_into(body, scope, &mut failed, true);
    (out, failed)
}

fn eval_body_into(
    body: &ast::Body,
    scope: &Scope,
    failed: &mut Vec<Unevaluated>,
    keep_failed: bool,
) -> EvaluatedBody {
    let mut out = EvaluatedBody::default();
    for stmt in &body.stmts {
        match stmt {
            ast::Stmt::Attribute(a) => {
                let value = match eval_expr(&a.value, scope) {
                    Ok(value) => value,
                    Err(error) => {
                        failed.push(Unevaluated {
                            span: a.span,
                            error,
                        });
                        if !keep_failed {
                            continue;
                        }
                        Value::Null
                    }
                };
                out.attributes.push(EvaluatedAttribute {
                    name: a.name.name.clone(),
                    value,
                    span: a.span,
                    value_span: a.value.span,
                    expr: Some(Box::new(a.value.clone())),
                    sensitive: AtomicBool::new(false),
                });
            }
            ast::Stmt::Block(b) => {
                let inner = eval_body_into(&b.body, scope, failed, keep_failed);
                out.blocks.push(EvaluatedBlock {
                    name: b.full_name(),
                    label: b.label.as_ref().map(|l| l.value.clone()),
                    body: inner,
                    span: b.span,
                    header_span: b.header_span(),
                });
            }
        }
    }
    out
}

/// Warnings for uses of deprecated standard-library names (`env(...)`, `concat(...)`) in a
/// body, with Alloy's wording. Names the runtime has shadowed with a component are the caller's
/// business: pass `scope` so that only names still bound to the stdlib are reported.
pub fn deprecation_warnings(body: &ast::Body, scope: &Scope) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    body.for_each_reference(&mut |parts, span| {
        if let Some(first) = parts.first()
            && stdlib::is_deprecated(first)
            && scope
                .get(first)
                .is_some_and(|v| Some(v) == stdlib::identifiers().get(*first))
        {
            out.push(Diagnostic::warning(span, stdlib::DEPRECATION_MESSAGE));
        }
    });
    out
}
