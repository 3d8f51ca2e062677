//! `scraper check`: every problem in a file, without starting anything.

use super::analyze::analyze;
use super::registry::Registry;
use crate::syntax::ast::Span;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::Scope;
use crate::syntax::parser::parse_source;

/// Parses, loads, evaluates and decodes `src` (named `file_name` in messages) and returns every
/// error and warning. Components are not built: references see their initial exports, except
/// exports only a built component has (`Component::EXPORTS_KNOWN_BEFORE_BUILD`), whose uses
/// are not checked.
///
/// Syntax errors stop the analysis there: the parser skips what it cannot read, and analysing
/// the remainder would report references to the skipped blocks as missing.
pub fn check(registry: &Registry, file_name: &str, src: &str) -> Vec<Diagnostic> {
    check_source(registry, &Source::new(file_name, src))
}

/// [`check`] for a config of one file or several (a directory, see `runtime::source`).
/// Positions inside imported modules need the files they were read from: see
/// [`check_config`].
pub fn check_source(registry: &Registry, source: &Source) -> Vec<Diagnostic> {
    check_config(registry, source).1
}

/// [`check_source`], with the config's files followed by every module it imports: the source
/// to render the diagnostics with.
pub fn check_config(registry: &Registry, source: &Source) -> (Source, Vec<Diagnostic>) {
    let checked = check_report(registry, source);
    (checked.source, checked.diags)
}

/// What [`check_report`] found.
pub struct Checked {
    /// The config's files followed by every module it imports: what positions refer to.
    pub source: Source,
    /// Every error and warning.
    pub diags: Vec<Diagnostic>,
    /// Attributes left out of the checks without an error (statement spans in `source`, in
    /// source order): they use data only a built component has (a remote.kubernetes.*
    /// object's `data`), so only `run` can check them. Not an error or a warning, since the
    /// config may well be right, but a user must be able to see that they were not checked.
    pub unchecked: Vec<Span>,
}

/// [`check_config`], plus the attributes it could not check.
pub fn check_report(registry: &Registry, source: &Source) -> Checked {
    let (file, mut diags) = parse_source(source);
    if diags.iter().any(Diagnostic::is_error) {
        return Checked {
            source: source.clone(),
            diags,
            unchecked: Vec::new(),
        };
    }
    let base = Scope::stdlib();
    // Nothing is built: exports a component reads at build from outside the config (a
    // remote.kubernetes.* object's `data`) are unknown, and the attributes using them are
    // left out of the checks; `run` checks them once it has read the data.
    let analysis = analyze(source, &file, registry, &base, &|decl, _| {
        decl.kind.exports_before_build()
    });
    diags.extend(analysis.diags);
    Checked {
        source: analysis.loaded.source,
        diags,
        unchecked: analysis.unchecked,
    }
}
