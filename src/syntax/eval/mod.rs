//! Expression evaluation with Alloy's semantics, and evaluation of whole block bodies.
//!
//! Error messages follow `syntax/vm` in grafana/alloy: a problem with a value is reported as
//! `<expression text> <message>` at the span of the sub-expression that produced the value
//! (`"a" should be number, got string`, `0 divide by zero error`), and lookups report
//! `identifier "x" does not exist` / `field "x" does not exist`.
//!
//! Values are never cloned on the way through a reference chain: `discovery.relabel.x.output`
//! borrows from the scope until the final value, so large target lists are copied once.
//!
//! # Layout
//!
//! `expr` walks an expression, `ops` gives the operators their meaning, `number` converts
//! number text the way Go does, `locate` and `expr_text` word and place errors, `scope` holds
//! the names expressions see, `body` evaluates whole block bodies and `redact` shows them to the
//! API.

mod body;
mod expr;
mod expr_text;
mod locate;
mod number;
mod ops;
mod redact;
mod scope;

pub use body::{
    EvaluatedAttribute, EvaluatedBlock, EvaluatedBody, Unevaluated, deprecation_warnings,
    eval_body, eval_body_partial,
};
pub use expr::eval_expr;
pub use expr_text::expr_text;
pub use locate::{PathSeg, locate, path_text, value_error};
pub use number::{format_float, number_to_string, parse_number, string_to_number};
pub use ops::values_equal;
pub use redact::value_to_json_redacted;
pub use scope::Scope;

#[cfg(test)]
mod tests;
