//! `scraper check PATH...`: every error of every config, each with its position and a caret. A
//! path is a file or a directory, whose `*.alloy` files are one config, as in `scraper run`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::components;
use crate::runtime;
use crate::runtime::source::read_config;
use crate::syntax::ast::Span;
use crate::syntax::diag::Source;

pub(super) fn check(paths: &[PathBuf]) -> ExitCode {
    let registry = components::builtin();
    let mut errors = 0;
    let mut failed = 0;
    for path in paths {
        let source = match read_config(path) {
            Ok(source) => source,
            Err(e) => {
                eprintln!("Error: reading {}: {e}", path.display());
                errors += 1;
                failed += 1;
                continue;
            }
        };
        let checked = runtime::check_report(&registry, &source);
        let (source, diags) = (checked.source, checked.diags);
        eprint!("{}", source.render_all(&diags));
        if let Some(line) = unchecked_line(&source, &checked.unchecked) {
            eprintln!("{line}");
        }
        let n = diags.iter().filter(|d| d.is_error()).count();
        if n > 0 {
            errors += n;
            failed += 1;
        }
    }
    if errors == 0 {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "Error: {errors} {} in {failed} {}",
        plural(errors, "error", "errors"),
        plural(failed, "config", "configs")
    );
    ExitCode::FAILURE
}

/// One line naming the attributes `check` left out (data read at run, such as a
/// remote.kubernetes.* object's), so that nothing goes unchecked silently; `None` when all
/// was checked. Not an error: the exit code does not change.
fn unchecked_line(source: &Source, spans: &[Span]) -> Option<String> {
    if spans.is_empty() {
        return None;
    }
    let at: Vec<String> = spans
        .iter()
        .map(|s| source.position(s.start as usize))
        .collect();
    Some(format!(
        "not checked (uses data read at run): {}",
        at.join(", ")
    ))
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}
