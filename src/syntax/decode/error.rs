//! The decoder's serde error and how it becomes a [`Diagnostic`]. Errors start as a message about
//! a path inside a value and only get a position once they reach the attribute or block that
//! owns the value, so one error type must carry both states; the statement at fault rides along
//! so the next round can hide it and look for further errors.

use std::fmt;

use serde::de;

use crate::syntax::ast::Span;
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::{PathSeg, path_text};
use crate::syntax::value::Value;

/// Identifies a statement: the index of an attribute or block at each nesting level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum StmtId {
    Attr(usize),
    Block(usize),
}

pub(super) type StmtPath = Vec<StmtId>;

/// The serde error type of the decoder. Public only because serde needs it; callers get
/// [`Diagnostic`]s.
#[derive(Debug)]
pub struct Error(pub(super) Box<Inner>);

#[derive(Debug)]
pub(super) enum Inner {
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
pub(super) struct Located {
    pub(super) diag: Diagnostic,
    /// The statement at fault, hidden on the next round to find further errors.
    pub(super) stmt: Option<StmtPath>,
    /// For a missing field: the block whose body lacks it, and its name.
    pub(super) missing: Option<(StmtPath, String)>,
}

impl Error {
    pub(super) fn value(message: impl Into<String>) -> Self {
        Error(Box::new(Inner::Value {
            path: Vec::new(),
            message: message.into(),
            missing: None,
        }))
    }

    pub(super) fn type_mismatch(expected: &str, got: &Value) -> Self {
        Error::value(format!("should be {expected}, got {}", got.ty()))
    }

    pub(super) fn located(diag: Diagnostic, stmt: Option<StmtPath>) -> Self {
        Error(Box::new(Inner::Located(Located {
            diag,
            stmt,
            missing: None,
        })))
    }

    /// Records that the error happened inside element/field `seg` of the current value.
    pub(super) fn prefixed(mut self, seg: PathSeg) -> Self {
        if let Inner::Value { path, .. } = self.0.as_mut() {
            path.insert(0, seg);
        }
        self
    }

    /// An unlocated error that escaped to block level, placed at the block.
    pub(super) fn located_at(self, span: Option<Span>, stmt: &[StmtId]) -> Located {
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

pub(super) fn diag_at(span: Option<Span>, message: String) -> Diagnostic {
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
