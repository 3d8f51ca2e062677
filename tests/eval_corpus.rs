//! Runs the evaluator and decoder over the `invalid/` cases of the shared Alloy corpus
//! (`../shared/alloy-corpus`, see its README) that fail at the `eval` stage, and the `decode`
//! cases that decode into a syntax-test schema (the `.expect` has a `schema` key). Every such
//! case must be rejected; the first expected error's `line:col` and message must match.
//! Cases that need components (component argument validation) are listed as skipped.
//! The test passes vacuously, saying so, when the corpus is not there.

mod support;

use std::collections::BTreeMap;
use std::fmt::Debug;

use scraper::syntax::ast::Span;
use scraper::syntax::decode::from_body_at;
use scraper::syntax::diag::{Diagnostic, Source};
use scraper::syntax::eval::{Scope, eval_body, eval_expr};
use scraper::syntax::parser::{parse_expression, parse_file};
use scraper::syntax::types::RawValue;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use support::corpus::{self, Expect};

/// Splits `test:4:25: message` / `1:1: message` / `message` into position and message.
fn split_expected(e: &str) -> (Option<(usize, usize)>, String) {
    let parts: Vec<&str> = e.splitn(4, ':').collect();
    let num = |s: &str| s.trim().parse::<usize>().ok();
    if parts.len() >= 3
        && let (Some(l), Some(c)) = (num(parts[0]), num(parts[1]))
    {
        let rest = e.splitn(3, ':').nth(2).unwrap_or("").trim();
        return (Some((l, c)), rest.to_string());
    }
    if parts.len() == 4
        && let (Some(l), Some(c)) = (num(parts[1]), num(parts[2]))
    {
        // A file-name prefix ("test:").
        return (Some((l, c)), parts[3].trim().to_string());
    }
    (None, e.to_string())
}

enum Outcome {
    /// Rejected with these diagnostics.
    Rejected(Vec<Diagnostic>),
    /// Accepted: a failure of this test.
    Accepted,
    Skipped(String),
}

fn scope_for(expect: &Expect) -> Scope {
    let mut scope = Scope::stdlib();
    // `scope: name = <alloy expression>`
    let decl = expect.get("scope").unwrap_or("");
    if let Some((name, value)) = decl.split_once(" = ") {
        let expr = parse_expression(value.trim()).expect("scope expression parses");
        let v = eval_expr(&expr, &Scope::stdlib()).expect("scope expression evaluates");
        scope.set(name.trim(), v);
    }
    scope
}

fn eval_case(src: &str, expect: &Expect) -> Outcome {
    let scope = scope_for(expect);
    if expect.expression_entry {
        let expr = match parse_expression(src.trim_end_matches('\n')) {
            Ok(e) => e,
            Err(d) => return Outcome::Skipped(format!("does not parse: {d:?}")),
        };
        return match eval_expr(&expr, &scope) {
            Ok(_) => Outcome::Accepted,
            Err(d) => Outcome::Rejected(vec![d]),
        };
    }
    let (file, diags) = parse_file(src);
    if !diags.is_empty() {
        return Outcome::Skipped(format!("does not parse: {diags:?}"));
    }
    match eval_body(&file.body, &scope) {
        Ok(_) => Outcome::Accepted,
        Err(d) => Outcome::Rejected(d),
    }
}

// Rust equivalents of the schemas grafana/alloy's syntax/vm tests decode into.

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct NumberOnly {
    number: f64,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct NumberString {
    number: f64,
    string: String,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct ChildAttr {
    attr: bool,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct WithChild {
    child: ChildAttr,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct ValueChildBlock {
    value: f64,
    #[serde(rename = "child.block")]
    child: ChildAttr,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct ValueOnly {
    value: f64,
}
#[derive(Debug, Deserialize)]
struct Empty {}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Labelled {
    #[serde(rename = "$label")]
    label: String,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Settings {
    #[serde(rename = "some.settings")]
    settings: BTreeMap<String, RawValue>,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Key {
    key: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
}
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct KeyString {
    key: String,
}

/// Decodes the first block (the block itself, label included) into `T`.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct FirstBlock<T> {
    some_block: T,
}

fn decode_with<T: DeserializeOwned + Debug>(src: &str, scope: &Scope) -> Outcome {
    let (file, diags) = parse_file(src);
    if !diags.is_empty() {
        return Outcome::Skipped(format!("does not parse: {diags:?}"));
    }
    let body = match eval_body(&file.body, scope) {
        Ok(b) => b,
        Err(d) => return Outcome::Rejected(d),
    };
    match from_body_at::<T>(&body, Span::new(0, 0)) {
        Ok(_) => Outcome::Accepted,
        // Errors without a position in Alloy are placed at the start of the file here; the
        // comparison below ignores positions the expectation does not have.
        Err(d) => Outcome::Rejected(d),
    }
}

fn decode_case(src: &str, expect: &Expect) -> Outcome {
    let scope = scope_for(expect);
    let schema = expect.get("schema").unwrap_or("");
    match schema {
        "body of the first block: number = number (required attribute); nothing else allowed"
        | "body of the first block: number = number (required attribute)" => {
            decode_with::<FirstBlock<NumberOnly>>(src, &scope)
        }
        "body of the first block: number = number (required attribute), string = string (required attribute)" => {
            decode_with::<FirstBlock<NumberString>>(src, &scope)
        }
        "body of the first block: child { attr = bool } (required block)" => {
            decode_with::<FirstBlock<WithChild>>(src, &scope)
        }
        "body of the first block: value = number (required attribute), child.block { attr = bool } (required block)" => {
            decode_with::<FirstBlock<ValueChildBlock>>(src, &scope)
        }
        "body of the first block: value = number (required attribute); nothing else allowed" => {
            decode_with::<FirstBlock<ValueOnly>>(src, &scope)
        }
        "first block: takes no label, empty body" => decode_with::<FirstBlock<Empty>>(src, &scope),
        "first block: requires a label, empty body" => {
            decode_with::<FirstBlock<Labelled>>(src, &scope)
        }
        "file body: some.settings (required block, decoded into a map of attributes)" => {
            decode_with::<Settings>(src, &scope)
        }
        "key = object { object = object { field1 = list(number) } } (all attributes)" => {
            decode_with::<Key>(src, &scope)
        }
        "key = string (attribute)" => decode_with::<KeyString>(src, &scope),
        "" => Outcome::Skipped(format!(
            "needs component {}",
            expect
                .get("component-args-of")
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("?")
        )),
        other => Outcome::Skipped(format!("no Rust schema for {other:?}")),
    }
}

#[test]
fn invalid_eval_and_decode_cases_are_rejected() {
    let Some(root) = corpus::root() else {
        return;
    };
    let mut failures = Vec::new();
    let (mut checked, mut exact, mut skipped) = (0, 0, 0);
    for expect in corpus::invalid_cases(&root) {
        let stage = expect.stage.as_str();
        if stage != "eval" && stage != "decode" {
            continue;
        }
        let src = String::from_utf8_lossy(&expect.input).into_owned();
        let name = expect.name.clone();
        let outcome = if stage == "eval" {
            eval_case(&src, &expect)
        } else {
            decode_case(&src, &expect)
        };
        match outcome {
            Outcome::Skipped(why) => {
                skipped += 1;
                println!("SKIP {name}: {why}");
            }
            Outcome::Accepted => {
                checked += 1;
                failures.push(format!("{name}: accepted, expected {:?}", expect.errors));
            }
            Outcome::Rejected(diags) => {
                checked += 1;
                let source = Source::new("", src.as_str());
                let first = &diags[0];
                let got_pos = first.span.map(|s| source.line_col(s.start as usize));
                let Some(want) = expect.errors.first() else {
                    continue;
                };
                let (want_pos, want_msg) = split_expected(want);
                let substring = expect.get("match") != Some("exact");
                let msg_ok = if substring {
                    first.message.contains(&want_msg)
                } else {
                    first.message == want_msg
                };
                let pos_ok = want_pos.is_none() || want_pos == got_pos;
                if msg_ok && pos_ok {
                    exact += 1;
                    println!("OK   {name}: {:?} {}", got_pos, first.message);
                } else {
                    failures.push(format!(
                        "{name}: got {:?} {:?}, want {want:?}",
                        got_pos, first.message
                    ));
                }
            }
        }
    }
    println!("checked {checked}, matching position and message {exact}, skipped {skipped}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 0, "no case was checked");
}

/// Every attribute of the valid corpus files that references only standard-library names
/// evaluates without error (attributes referencing components or module arguments are left
/// out: their values only exist at run time).
#[test]
fn valid_files_evaluate_with_the_stdlib() {
    let Some(root) = corpus::root() else {
        return;
    };
    let paths = corpus::alloy_files(&root.join("valid"));
    let scope = Scope::stdlib();
    let (mut evaluated, mut skipped) = (0, 0);
    let mut failures = Vec::new();

    fn walk(
        body: &scraper::syntax::ast::Body,
        scope: &Scope,
        f: &mut dyn FnMut(&scraper::syntax::ast::Attribute, bool),
    ) {
        for stmt in &body.stmts {
            match stmt {
                scraper::syntax::ast::Stmt::Attribute(a) => {
                    let mut stdlib_only = true;
                    a.value.for_each_reference(&mut |parts, _| {
                        if parts.first().is_none_or(|r| scope.get(r).is_none()) {
                            stdlib_only = false;
                        }
                    });
                    f(a, stdlib_only);
                }
                scraper::syntax::ast::Stmt::Block(b) => walk(&b.body, scope, f),
            }
        }
    }

    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable");
        let (file, diags) = parse_file(&src);
        if !diags.is_empty() {
            // The parser's own corpus test reports these.
            continue;
        }
        let source = Source::new(path.to_string_lossy(), src.as_str());
        walk(&file.body, &scope, &mut |a, stdlib_only| {
            if !stdlib_only {
                skipped += 1;
                return;
            }
            evaluated += 1;
            if let Err(d) = eval_expr(&a.value, &scope) {
                failures.push(source.short(&d));
            }
        });
    }
    println!("evaluated {evaluated} attributes, skipped {skipped} that reference run-time values");
    // Valid syntax that Alloy also fails to evaluate.
    const EXPECTED: &[(&str, &str)] = &[
        // `sys "sys" {}` is a component shadowing the stdlib namespace; `sys.sys.env` is its
        // export, which only the runtime provides.
        (
            "validator__testdata__default__stdlib.txtar__main.alloy:11:17:",
            "field \"sys\" does not exist",
        ),
        // The validator test only checks stability levels; evaluating fails in Alloy too.
        (
            "validator__testdata__default__valid.txtar__main.alloy:229:43:",
            "merge conditions must not be empty",
        ),
        (
            "validator__testdata__default__valid.txtar__main.alloy:230:43:",
            "merge conditions must not be empty",
        ),
        // A parser test: `1 == 2 != 3 < 4` compares a bool with `<`.
        (
            "parser__testdata__valid__expressions.alloy:61:15:",
            "for binop <, got bool",
        ),
    ];
    failures.retain(|f| {
        !EXPECTED
            .iter()
            .any(|(at, msg)| f.contains(at) && f.contains(msg))
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
