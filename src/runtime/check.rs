//! `scraper check`: every problem in a file, without starting anything.

use super::analyze::analyze;
use super::registry::Registry;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::Scope;
use crate::syntax::parser::parse_source;

/// Parses, loads, evaluates and decodes `src` (named `file_name` in messages) and returns every
/// error and warning. Components are not built: references see their initial exports.
///
/// Syntax errors stop the analysis there: the parser skips what it cannot read, and analysing
/// the remainder would report references to the skipped blocks as missing.
pub fn check(registry: &Registry, file_name: &str, src: &str) -> Vec<Diagnostic> {
    check_source(registry, &Source::new(file_name, src))
}

/// [`check`] for a config of one file or several (a directory, see `runtime::source`).
pub fn check_source(registry: &Registry, source: &Source) -> Vec<Diagnostic> {
    let (file, mut diags) = parse_source(source);
    if diags.iter().any(Diagnostic::is_error) {
        return diags;
    }
    let base = Scope::stdlib();
    let analysis = analyze(source, &file, registry, &base, &|decl| {
        decl.registration.initial_exports()
    });
    diags.extend(analysis.diags);
    diags
}
