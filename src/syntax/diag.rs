//! Diagnostics: every error the front end reports carries a span, and is rendered as
//! `file:line:col: message` followed by the source line and a caret (via codespan-reporting).

use std::fmt;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

use super::ast::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One problem in a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// `None` for problems that have no position (rare: e.g. a whole-file decode error).
    pub span: Option<Span>,
    pub message: String,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            span: Some(span),
            message: message.into(),
        }
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            span: Some(span),
            message: message.into(),
        }
    }

    pub fn unspanned(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            span: None,
            message: message.into(),
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A source file's name and text, used to turn byte offsets into `line:col` and to render carets.
#[derive(Clone)]
pub struct Source {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

/// The text is left out: a config holds secrets, and errors end up in logs via `{:?}`.
impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("len", &self.text.len())
            .finish()
    }
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column of a byte offset. Columns count bytes, like Alloy's `token.Position`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        (line + 1, offset - self.line_starts[line] + 1)
    }

    /// `file:line:col: message`, the one-line form (no snippet).
    pub fn short(&self, d: &Diagnostic) -> String {
        match d.span {
            Some(span) => {
                let (line, col) = self.line_col(span.start as usize);
                format!("{}:{}:{}: {}", self.name, line, col, d.message)
            }
            None => format!("{}: {}", self.name, d.message),
        }
    }

    /// The full rendering: the `file:line:col: message` header, the source line and a caret.
    pub fn render(&self, d: &Diagnostic) -> String {
        let file = SimpleFile::new(self.name.as_str(), self.text.as_str());
        let header = self.short(d);
        let mut cs = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        }
        .with_message(header);
        if let Some(span) = d.span {
            // An empty span (an error at EOF) still needs a caret; codespan clamps it to the text.
            let end = (span.end as usize).max(span.start as usize);
            let start = (span.start as usize).min(self.text.len());
            cs = cs.with_labels(vec![Label::primary((), start..end.min(self.text.len()))]);
        }
        let config = Config::default();
        match term::emit_into_string(&config, &file, &cs) {
            Ok(text) => text,
            Err(_) => format!("{}\n", self.short(d)),
        }
    }

    /// Renders several diagnostics, in order.
    pub fn render_all(&self, diags: &[Diagnostic]) -> String {
        diags.iter().map(|d| self.render(d)).collect()
    }
}

/// Diagnostics for one file, as an error type for callers that just want to fail.
#[derive(Clone, Debug)]
pub struct Diagnostics {
    pub source: Source,
    pub items: Vec<Diagnostic>,
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: Vec<&Diagnostic> = self.items.iter().filter(|d| d.is_error()).collect();
        for (i, d) in errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(&self.source.short(d))?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}
