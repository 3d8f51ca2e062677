//! `scraper check` rejects the corpus's eval-stage cases that need only the standard library.
//!
//! Those cases are single expressions (Alloy's expression entry point); `check` takes files, so
//! each expression is placed as the value of an attribute of the `logging` block, which `check`
//! evaluates like any other block. The error must come out of the real binary with its message
//! and a `file:line:col` pointing into the expression.

mod support;

use std::process::Command;

use support::corpus;

#[test]
fn scraper_check_rejects_stdlib_eval_cases() {
    let Some(root) = corpus::root() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in corpus::invalid_cases(&root) {
        // Cases with a `scope` need variables from the upstream Go test; not a stdlib-only case.
        if case.stage != "eval" || case.get("scope").is_some() {
            continue;
        }
        let expr = String::from_utf8_lossy(&case.input);
        let path = dir.path().join(format!("{}.alloy", case.name));
        std::fs::write(
            &path,
            format!("logging {{\n\tlevel = {}\n}}\n", expr.trim_end()),
        )
        .expect("write config");
        let out = Command::new(env!("CARGO_BIN_EXE_scraper"))
            .arg("check")
            .arg(&path)
            .output()
            .expect("run scraper check");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = case.errors.first().cloned().unwrap_or_default();
        // Strip a leading `line:col: ` (positions are relative to the bare expression).
        let message = match want.split_once(": ") {
            Some((pos, rest))
                if pos
                    .split(':')
                    .all(|p| p.bytes().all(|b| b.is_ascii_digit())) =>
            {
                rest.to_string()
            }
            _ => want.clone(),
        };
        let located = format!("{}:2:", path.display());
        if out.status.code() != Some(1) || !stderr.contains(&message) || !stderr.contains(&located)
        {
            failures.push(format!(
                "{}: want {message:?} at line 2, got:\n{stderr}",
                case.name
            ));
        }
        checked += 1;
    }
    assert!(checked >= 10, "expected the eval cases, found {checked}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("scraper check rejected {checked} stdlib eval cases");
}
