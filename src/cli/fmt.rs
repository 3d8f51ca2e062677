//! `scraper fmt [-w] FILE...`: prints (or rewrites) files in Alloy's canonical format.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::parser::parse_file;
use crate::syntax::printer::format_file;

pub(super) fn fmt(files: &[PathBuf], write: bool) -> ExitCode {
    let mut ok = true;
    for path in files {
        let name = path.display().to_string();
        let src = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("Error: reading {name}: {e}");
                ok = false;
                continue;
            }
        };
        let (file, diags) = parse_file(&src);
        if diags.iter().any(Diagnostic::is_error) {
            let source = Source::new(name, src);
            eprint!("{}", source.render_all(&diags));
            ok = false;
            continue;
        }
        let formatted = format_file(&file, &src);
        if write {
            // Leave untouched files alone (mtime, file watchers).
            if formatted != src
                && let Err(e) = std::fs::write(path, &formatted)
            {
                eprintln!("Error: writing {name}: {e}");
                ok = false;
            }
        } else if let Err(e) = std::io::stdout().write_all(formatted.as_bytes()) {
            eprintln!("Error: writing to stdout: {e}");
            return ExitCode::FAILURE;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
