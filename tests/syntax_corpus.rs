//! Conformance of the lexer and parser against the Alloy corpus in ../shared/alloy-corpus:
//! every valid file parses with no diagnostic, and every scan/parse-stage invalid case is
//! rejected at the `line:col` its `.expect` file gives.

mod support;

use scraper::syntax::diag::Source;
use scraper::syntax::parser::{parse_expression, parse_file_bytes};
use support::corpus::{self, Expect};

#[test]
fn valid_and_profiling_files_parse_without_diagnostics() {
    let Some(root) = corpus::root() else { return };
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in ["valid", "profiling"] {
        for path in corpus::alloy_files(&root.join(dir)) {
            count += 1;
            let bytes = std::fs::read(&path).expect("corpus file is readable");
            let (_, diags) = parse_file_bytes(&bytes);
            if !diags.is_empty() {
                let src = Source::new(path.display().to_string(), String::from_utf8_lossy(&bytes));
                failures.push(src.short(&diags[0]));
            }
        }
    }
    assert!(
        count > 800,
        "expected the whole corpus, found {count} files"
    );
    assert!(
        failures.is_empty(),
        "{} files failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{count} valid corpus files parsed");
}

#[test]
fn scan_and_parse_stage_cases_are_rejected_at_the_expected_position() {
    let Some(root) = corpus::root() else { return };
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in corpus::invalid_cases(&root) {
        let parse_stage = matches!(case.stage.as_str(), "scan" | "parse");
        if !parse_stage && !case.parses_no {
            continue;
        }
        checked += 1;
        let diags = if case.expression_entry {
            match parse_expression(&String::from_utf8_lossy(&case.input)) {
                Ok(_) => Vec::new(),
                Err(d) => d,
            }
        } else {
            parse_file_bytes(&case.input).1
        };
        let src = Source::new("", String::from_utf8_lossy(&case.input));
        let got: Vec<String> = diags
            .iter()
            .map(|d| match d.span {
                Some(s) => {
                    let (l, c) = src.line_col(s.start as usize);
                    format!("{l}:{c}: {}", d.message)
                }
                None => d.message.clone(),
            })
            .collect();
        if got.is_empty() {
            failures.push(format!("{}: accepted, want {:?}", case.name, case.errors));
            continue;
        }
        if let Err(msg) = check_expected(&case, &got) {
            failures.push(format!("{}: {msg}", case.name));
        }
    }
    assert!(
        checked >= 30,
        "expected the scan/parse cases, found {checked}"
    );
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{checked} scan/parse-stage invalid cases rejected at the expected position");
}

/// The first expected diagnostic must match our first one; when Alloy's full list of parser
/// diagnostics was recorded (`observed`), we must report exactly that list.
fn check_expected(case: &Expect, got: &[String]) -> Result<(), String> {
    let want_first = case.errors.first().cloned().unwrap_or_default();
    // Alloy's error summary mentions how many more diagnostics follow; we list them all.
    let want_first = match want_first.find(" (and ") {
        Some(i) if want_first.ends_with(" more diagnostics)") => want_first[..i].to_string(),
        _ => want_first,
    };
    let positioned = want_first
        .split(':')
        .take(2)
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if positioned {
        if got[0] != want_first {
            return Err(format!("first error {:?}, want {want_first:?}", got[0]));
        }
    } else if !got[0].ends_with(&want_first) {
        return Err(format!(
            "first error {:?}, want message {want_first:?}",
            got[0]
        ));
    }
    if !case.observed.is_empty() && got != case.observed.as_slice() {
        return Err(format!("got {got:?}, Alloy reports {:?}", case.observed));
    }
    Ok(())
}
