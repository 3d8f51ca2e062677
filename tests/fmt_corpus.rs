//! Formatter conformance against the shared Alloy corpus (`../shared/alloy-corpus`, see its
//! README.md). Skipped, with a message, when the corpus is not present.
//!
//! For every file in `valid/` and `profiling/`:
//! * formatting is idempotent in one pass (also for the files Alloy itself needs two passes for),
//! * the formatted text parses to the same syntax tree, spans aside,
//! * every comment survives, in order.
//!
//! Additionally every file marked `canon` in the index formats to itself byte for byte, and every
//! printer golden pair `NAME.in.alloy` formats to `NAME.expect.alloy` (compared as Alloy's own
//! test does, after trimming trailing whitespace).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use scraper::syntax::ast::{Block, Body, Expr, ExprKind, File, Span, Stmt};
use scraper::syntax::parser::parse_file;
use scraper::syntax::printer::format_file;

/// Files known not to match, with the reason. The test fails if one of these starts passing, so
/// the list cannot go stale.
const EXCEPTIONS: &[(&str, &str)] = &[];

fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/alloy-corpus");
    dir.join("README.md").is_file().then_some(dir)
}

/// The `fmt` column of the `valid/` index table: file name -> `canon` / `fmt` / `2pass`.
fn fmt_index(readme: &str) -> BTreeMap<String, String> {
    let mut index = BTreeMap::new();
    let mut in_valid = false;
    for line in readme.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            in_valid = heading.trim() == "valid/";
            continue;
        }
        if !in_valid || !line.starts_with('|') {
            continue;
        }
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        // | file | repo | commit | path | extracted | kind | fmt | notes |
        if cols.len() >= 9 && cols[1].ends_with(".alloy") {
            index.insert(cols[1].to_string(), cols[7].to_string());
        }
    }
    index
}

fn zero_spans_expr(e: &mut Expr) {
    e.span = Span::default();
    match &mut e.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Array(items) => items.iter_mut().for_each(zero_spans_expr),
        ExprKind::Object(fields) => {
            for f in fields {
                f.key_span = Span::default();
                zero_spans_expr(&mut f.value);
            }
        }
        ExprKind::Access { value, name } => {
            name.span = Span::default();
            zero_spans_expr(value);
        }
        ExprKind::Index { value, index } => {
            zero_spans_expr(value);
            zero_spans_expr(index);
        }
        ExprKind::Call { func, args } => {
            zero_spans_expr(func);
            args.iter_mut().for_each(zero_spans_expr);
        }
        ExprKind::Unary { expr, .. } => zero_spans_expr(expr),
        ExprKind::Binary { lhs, rhs, .. } => {
            zero_spans_expr(lhs);
            zero_spans_expr(rhs);
        }
        ExprKind::Paren(inner) => zero_spans_expr(inner),
    }
}

fn zero_spans_block(b: &mut Block) {
    b.span = Span::default();
    b.rbrace = Span::default();
    for part in &mut b.name {
        part.span = Span::default();
    }
    if let Some(label) = &mut b.label {
        label.span = Span::default();
        // Labels are re-quoted the way Alloy does it; only their value has to survive.
        label.raw.clear();
    }
    zero_spans_body(&mut b.body);
}

fn zero_spans_body(body: &mut Body) {
    for stmt in &mut body.stmts {
        match stmt {
            Stmt::Attribute(a) => {
                a.span = Span::default();
                a.name.span = Span::default();
                zero_spans_expr(&mut a.value);
            }
            Stmt::Block(b) => zero_spans_block(b),
        }
    }
}

fn span_free(file: &File) -> Body {
    let mut body = file.body.clone();
    zero_spans_body(&mut body);
    body
}

fn comment_texts(file: &File) -> Vec<&str> {
    file.comments
        .iter()
        .map(|c| c.text.trim_end_matches(['\n', '\r']))
        .collect()
}

/// The first line where two texts differ, for failure messages.
fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i), g.get(i));
        if a != b {
            return format!("line {}:\n    want {:?}\n    got  {:?}", i + 1, a, b);
        }
    }
    "texts differ only in line endings or the final newline".to_string()
}

#[derive(Default)]
struct Report {
    checked: usize,
    failures: BTreeMap<String, Vec<String>>,
}

impl Report {
    fn fail(&mut self, name: &str, what: String) {
        self.failures
            .entry(name.to_string())
            .or_default()
            .push(what);
    }
}

/// Formats one file and checks the properties every file must have. Returns the formatted text.
fn check_file(report: &mut Report, name: &str, src: &str) -> Option<String> {
    report.checked += 1;
    let (ast, diags) = parse_file(src);
    if diags.iter().any(|d| d.is_error()) {
        report.fail(name, format!("input does not parse: {:?}", diags[0]));
        return None;
    }
    let once = format_file(&ast, src);
    let (ast2, diags2) = parse_file(&once);
    if diags2.iter().any(|d| d.is_error()) {
        report.fail(
            name,
            format!("formatted text does not parse: {:?}\n{once}", diags2[0]),
        );
        return Some(once);
    }
    if span_free(&ast) != span_free(&ast2) {
        report.fail(name, "formatting changed the syntax tree".to_string());
    }
    if comment_texts(&ast) != comment_texts(&ast2) {
        report.fail(name, "formatting lost or reordered comments".to_string());
    }
    let twice = format_file(&ast2, &once);
    if twice != once {
        report.fail(
            name,
            format!("not idempotent: {}", first_difference(&once, &twice)),
        );
    }
    Some(once)
}

#[test]
fn corpus_formatting() {
    let Some(dir) = corpus_dir() else {
        eprintln!(
            "SKIPPED fmt_corpus: no corpus at {}/../shared/alloy-corpus",
            env!("CARGO_MANIFEST_DIR")
        );
        return;
    };
    let readme = fs::read_to_string(dir.join("README.md")).expect("corpus README.md is readable");
    let index = fmt_index(&readme);
    assert!(
        index.len() > 700,
        "could not read the valid/ index from README.md ({} rows)",
        index.len()
    );

    let mut report = Report::default();
    let (mut canon_total, mut canon_ok, mut golden_total, mut golden_ok) = (0, 0, 0, 0);

    for sub in ["valid", "profiling"] {
        let mut names: Vec<String> = fs::read_dir(dir.join(sub))
            .expect("corpus folder is readable")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".alloy"))
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(sub).join(&name);
            let src = fs::read_to_string(&path).expect("corpus file is UTF-8");
            let label = format!("{sub}/{name}");
            let Some(formatted) = check_file(&mut report, &label, &src) else {
                continue;
            };
            if sub != "valid" {
                continue;
            }
            if index.get(&name).map(String::as_str) == Some("canon") {
                canon_total += 1;
                if formatted == src {
                    canon_ok += 1;
                } else {
                    report.fail(
                        &label,
                        format!("canon file changed: {}", first_difference(&src, &formatted)),
                    );
                }
            }
            if let Some(stem) = name.strip_suffix(".in.alloy") {
                golden_total += 1;
                let expect_path = dir.join(sub).join(format!("{stem}.expect.alloy"));
                let expect = fs::read_to_string(&expect_path).expect("golden .expect exists");
                let want = expect.trim_end();
                let got = formatted.strip_suffix('\n').unwrap_or(&formatted);
                if want == got {
                    golden_ok += 1;
                } else {
                    report.fail(
                        &label,
                        format!("golden mismatch: {}", first_difference(want, got)),
                    );
                }
            }
        }
    }

    let canon_in_index = index.values().filter(|v| *v == "canon").count();
    eprintln!(
        "fmt_corpus: {} files checked, {} with failures; canon {canon_ok}/{canon_total} \
         (index lists {canon_in_index}); golden pairs {golden_ok}/{golden_total}",
        report.checked,
        report.failures.len()
    );

    let failing: BTreeSet<&str> = report.failures.keys().map(String::as_str).collect();
    let allowed: BTreeSet<&str> = EXCEPTIONS.iter().map(|(name, _)| *name).collect();
    for (name, problems) in &report.failures {
        if !allowed.contains(name.as_str()) {
            for p in problems {
                eprintln!("FAIL {name}: {p}");
            }
        }
    }
    let unexpected: Vec<&&str> = failing.difference(&allowed).collect();
    let fixed: Vec<&&str> = allowed.difference(&failing).collect();
    assert!(
        unexpected.is_empty(),
        "{} files fail outside the allow-list: {unexpected:?}",
        unexpected.len()
    );
    assert!(
        fixed.is_empty(),
        "allow-listed files now pass; remove them from EXCEPTIONS: {fixed:?}"
    );
    assert_eq!(canon_total, canon_in_index, "every canon file was checked");
}

/// The formatter is also handed the partial trees of files that fail to parse (for instance by
/// an editor integration); it must never panic on them.
#[test]
fn corpus_invalid_inputs_do_not_panic() {
    let Some(dir) = corpus_dir() else {
        eprintln!(
            "SKIPPED fmt_corpus: no corpus at {}/../shared/alloy-corpus",
            env!("CARGO_MANIFEST_DIR")
        );
        return;
    };
    let mut count = 0;
    for entry in fs::read_dir(dir.join("invalid")).expect("corpus folder is readable") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_none_or(|e| e != "alloy") {
            continue;
        }
        let bytes = fs::read(&path).expect("corpus file is readable");
        let src = String::from_utf8_lossy(&bytes);
        let (file, _) = parse_file(&src);
        let _ = format_file(&file, &src);
        count += 1;
    }
    eprintln!("fmt_corpus: formatted {count} invalid inputs without panicking");
    assert!(count > 50);
}
