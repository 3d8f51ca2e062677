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
    /// A hint shown under the message ("did you mean ...?"). Kept apart from the message so
    /// that the message stays Alloy's wording, which tools and the corpus compare.
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            span: Some(span),
            message: message.into(),
            help: None,
        }
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            span: Some(span),
            message: message.into(),
            help: None,
        }
    }

    pub fn unspanned(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            span: None,
            message: message.into(),
            help: None,
        }
    }

    /// Adds a hint; an existing one is kept in front of it.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        let help = help.into();
        self.help = Some(match self.help.take() {
            Some(first) => format!("{first}; {help}"),
            None => help,
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The text of a config, one file or several (a directory, which Alloy loads as one config),
/// used to turn byte offsets into `file:line:col` and to render carets.
///
/// Spans are offsets into [`Source::text`], every file's text one after the other with a
/// newline between them, so one span type serves a whole directory. The newline keeps an
/// error at the very end of one file (`expected }, got EOF`) apart from the start of the next.
#[derive(Clone)]
pub struct Source {
    /// The config's name: the file's path, or the directory's for several files.
    pub name: String,
    pub text: String,
    files: Vec<SourceFile>,
}

#[derive(Clone)]
struct SourceFile {
    name: String,
    /// Where the file's text starts and ends in [`Source::text`].
    start: usize,
    end: usize,
    /// Offsets (in [`Source::text`]) at which the file's lines start.
    line_starts: Vec<usize>,
}

/// The text is left out: a config holds secrets, and errors end up in logs via `{:?}`.
impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("files", &self.files.len())
            .field("len", &self.text.len())
            .finish()
    }
}

impl Source {
    /// A config of one file.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let name = name.into();
        Source::from_files(name.clone(), vec![(name, text.into())])
    }

    /// A config of several files (`name` is the directory), in the order given.
    pub fn from_files(name: impl Into<String>, files: Vec<(String, String)>) -> Self {
        let mut text = String::new();
        let mut out = Vec::with_capacity(files.len());
        for (i, (file_name, file_text)) in files.into_iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            let start = text.len();
            text.push_str(&file_text);
            let mut line_starts = vec![start];
            line_starts.extend(file_text.match_indices('\n').map(|(i, _)| start + i + 1));
            out.push(SourceFile {
                name: file_name,
                start,
                end: text.len(),
                line_starts,
            });
        }
        Source {
            name: name.into(),
            text,
            files: out,
        }
    }

    /// Each file's name and where its text lies in [`Source::text`] (for parsing them one by
    /// one, as Alloy does).
    pub fn files(&self) -> impl Iterator<Item = (&str, std::ops::Range<usize>)> {
        self.files.iter().map(|f| (f.name.as_str(), f.start..f.end))
    }

    /// The file an offset falls in (the separator after a file belongs to it).
    fn file_at(&self, offset: usize) -> Option<&SourceFile> {
        let i = self.files.partition_point(|f| f.start <= offset);
        self.files.get(i.saturating_sub(1))
    }

    /// 1-based line and column of a byte offset within its file. Columns count bytes, like
    /// Alloy's `token.Position`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let Some(file) = self.file_at(offset) else {
            return (1, offset + 1);
        };
        let line = match file.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let line_start = file.line_starts.get(line).copied().unwrap_or(file.start);
        (line + 1, offset.saturating_sub(line_start) + 1)
    }

    /// `file:line:col` of a byte offset.
    pub fn position(&self, offset: usize) -> String {
        let name = self.file_at(offset).map_or(self.name.as_str(), |f| &f.name);
        let (line, col) = self.line_col(offset);
        format!("{name}:{line}:{col}")
    }

    /// `file:line:col: message`, the one-line form (no snippet); a hint follows in brackets.
    pub fn short(&self, d: &Diagnostic) -> String {
        let mut out = match d.span {
            Some(span) => format!("{}: {}", self.position(span.start as usize), d.message),
            None => format!("{}: {}", self.name, d.message),
        };
        if let Some(help) = &d.help {
            out.push_str(&format!(" ({help})"));
        }
        out
    }

    /// The full rendering: the `file:line:col: message` header, the source line, a caret and
    /// the hint, if any.
    pub fn render(&self, d: &Diagnostic) -> String {
        let header = match d.span {
            Some(span) => format!("{}: {}", self.position(span.start as usize), d.message),
            None => format!("{}: {}", self.name, d.message),
        };
        let mut cs = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        }
        .with_message(header);
        if let Some(help) = &d.help {
            cs = cs.with_notes(vec![format!("help: {help}")]);
        }
        let file = d.span.and_then(|s| self.file_at(s.start as usize));
        let (name, text, base) = match file {
            Some(f) => (f.name.as_str(), &self.text[f.start..f.end], f.start),
            None => (self.name.as_str(), "", 0),
        };
        if let Some(span) = d.span {
            // An empty span (an error at EOF) still needs a caret; codespan clamps it to the
            // text. Offsets are made relative to the file's own text.
            let start = (span.start as usize).saturating_sub(base).min(text.len());
            let end = (span.end as usize)
                .saturating_sub(base)
                .clamp(start, text.len());
            cs = cs.with_labels(vec![Label::primary((), start..end)]);
        }
        let file = SimpleFile::new(name, text);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets into the files of a directory map back to each file's own lines, an empty file
    /// included, and a file's end (where `got EOF` errors are) stays in that file.
    #[test]
    fn positions_in_several_files() {
        let source = Source::from_files(
            "dir",
            vec![
                ("dir/a.alloy".into(), "a {\n  x = 1\n".into()),
                ("dir/b.alloy".into(), String::new()),
                ("dir/c.alloy".into(), "\nc \"x\" {}\n".into()),
            ],
        );
        let a_len = "a {\n  x = 1\n".len();
        let c = a_len + 2;
        let cases: &[(usize, &str)] = &[
            (0, "dir/a.alloy:1:1"),
            (6, "dir/a.alloy:2:3"),
            (a_len, "dir/a.alloy:3:1"),
            (a_len + 1, "dir/b.alloy:1:1"),
            (c, "dir/c.alloy:1:1"),
            (c + 1, "dir/c.alloy:2:1"),
            (c + 5, "dir/c.alloy:2:5"),
        ];
        for (offset, want) in cases {
            assert_eq!(source.position(*offset), *want, "offset {offset}");
        }
        let files: Vec<(&str, std::ops::Range<usize>)> = source.files().collect();
        assert_eq!(files[2], ("dir/c.alloy", c..source.text.len()));

        let d = Diagnostic::error(Span::new(c + 1, c + 2), "boom").with_help("did you mean?");
        assert_eq!(source.short(&d), "dir/c.alloy:2:1: boom (did you mean?)");
        let rendered = source.render(&d);
        assert!(rendered.contains("┌─ dir/c.alloy:2:1"), "{rendered}");
        assert!(rendered.contains("2 │ c \"x\" {}"), "{rendered}");
        assert!(rendered.contains("= help: did you mean?"), "{rendered}");
    }
}
