//! Compile errors, worded like Go's `regexp/syntax` errors.
//!
//! Users compare our messages with what Alloy and Prometheus print for the same config, so the
//! error codes are Go's exact texts; the two that Go never produces are marked as ours.

use std::fmt;

/// A regex compile error, worded like Go's `regexp/syntax` errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexError {
    /// Go's error code text, e.g. `missing closing )`.
    pub code: &'static str,
    /// The offending part of the **wrapped** expression, as Go quotes it.
    pub expr: String,
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

impl std::error::Error for RegexError {}

pub(super) const ERR_INVALID_CHAR_RANGE: &str = "invalid character class range";
pub(super) const ERR_INVALID_ESCAPE: &str = "invalid escape sequence";
pub(super) const ERR_INVALID_NAMED_CAPTURE: &str = "invalid named capture";
pub(super) const ERR_INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
pub(super) const ERR_INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
pub(super) const ERR_INVALID_REPEAT_SIZE: &str = "invalid repeat count";
pub(super) const ERR_MISSING_BRACKET: &str = "missing closing ]";
pub(super) const ERR_MISSING_PAREN: &str = "missing closing )";
pub(super) const ERR_MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
pub(super) const ERR_TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
pub(super) const ERR_UNEXPECTED_PAREN: &str = "unexpected )";
pub(super) const ERR_NESTING_DEPTH: &str = "expression nests too deeply";
/// Not a Go error: Go would accept the pattern but we cannot guarantee the same meaning.
pub(super) const ERR_UNSUPPORTED: &str =
    "unsupported by scraper (the Rust engine cannot reproduce Go)";
/// Not a Go error: the Rust engine's size limit (Go's own limit is different).
pub(super) const ERR_TOO_LARGE: &str = "expression too large";

pub(super) type PResult<T> = Result<T, RegexError>;

pub(super) fn err(code: &'static str, expr: impl Into<String>) -> RegexError {
    RegexError {
        code,
        expr: expr.into(),
    }
}
