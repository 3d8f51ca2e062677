//! `scraper check FILE...`: every error of every file, each with its position and a caret.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::components;
use crate::runtime;
use crate::syntax::diag::Source;

pub(super) fn check(files: &[PathBuf]) -> ExitCode {
    let registry = components::builtin();
    let mut errors = 0;
    let mut failed_files = 0;
    for path in files {
        let name = path.display().to_string();
        let src = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                eprintln!("Error: reading {name}: {e}");
                errors += 1;
                failed_files += 1;
                continue;
            }
        };
        let diags = runtime::check(&registry, &name, &src);
        let source = Source::new(name, src);
        for d in &diags {
            eprint!("{}", source.render(d));
        }
        let n = diags.iter().filter(|d| d.is_error()).count();
        if n > 0 {
            errors += n;
            failed_files += 1;
        }
    }
    if errors == 0 {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "Error: {errors} {} in {failed_files} {}",
        plural(errors, "error", "errors"),
        plural(failed_files, "file", "files")
    );
    ExitCode::FAILURE
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}
