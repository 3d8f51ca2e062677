//! `scraper fmt [-w] FILE...`: prints (or rewrites) files in Alloy's canonical format. `-` is
//! standard input, formatted to standard output, as `alloy fmt -` does.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::parser::parse_file;
use crate::syntax::printer::format_file;

pub(super) fn fmt(files: &[PathBuf], write: bool) -> ExitCode {
    let stdin = Path::new("-");
    if write && files.iter().any(|f| f == stdin) {
        eprintln!("Error: cannot use -w with standard input");
        return ExitCode::FAILURE;
    }
    let mut ok = true;
    for path in files {
        let (name, read) = if path == stdin {
            let mut s = String::new();
            let read = std::io::stdin().read_to_string(&mut s).map(|_| s);
            ("<stdin>".to_string(), read)
        } else {
            (path.display().to_string(), std::fs::read_to_string(path))
        };
        let src = match read {
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
