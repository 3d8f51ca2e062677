//! `scraper check`: every problem in a file, without starting anything.

use super::analyze::analyze;
use super::registry::Registry;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::Scope;
use crate::syntax::parser::parse_file;

/// Parses, loads, evaluates and decodes `src` (named `file_name` in messages) and returns every
/// error and warning. Components are not built: references see their initial exports.
///
/// Syntax errors stop the analysis there: the parser skips what it cannot read, and analysing
/// the remainder would report references to the skipped blocks as missing.
pub fn check(registry: &Registry, file_name: &str, src: &str) -> Vec<Diagnostic> {
    let (file, mut diags) = parse_file(src);
    if diags.iter().any(Diagnostic::is_error) {
        return diags;
    }
    let source = Source::new(file_name, src);
    let base = Scope::stdlib();
    let analysis = analyze(&source, &file, registry, &base, &|decl| {
        decl.registration.initial_exports()
    });
    diags.extend(analysis.diags);
    diags
}
