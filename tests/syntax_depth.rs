//! Deeply nested configs get one clear error instead of overflowing the stack. Every way the
//! tree can nest is tried just inside the limit (parse, evaluate, format, `scraper check` and
//! drop all succeed on a thread with tokio's 2 MiB worker stack) and just past it (exactly one
//! "nesting too deep" error, at the token that went too deep), plus a huge input for each.
//! A stack overflow aborts this test binary, so these tests can fail.

use scraper::syntax::diag::Diagnostic;
use scraper::syntax::eval::{Scope, eval_body};
use scraper::syntax::parser::{MAX_DEPTH, parse_expression, parse_file};
use scraper::syntax::printer::format_file;

/// Tokio's default worker stack; a config reload runs on one.
const WORKER_STACK: usize = 2 << 20;

/// One way to nest: a name and a builder of a whole file with `n` levels below the file body.
struct Shape {
    name: &'static str,
    build: fn(usize) -> String,
}

fn attr(value: String) -> String {
    format!("a = {value}\n")
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "arrays",
        build: |n| attr(format!("{}1{}", "[".repeat(n), "]".repeat(n))),
    },
    Shape {
        name: "objects",
        build: |n| attr(format!("{}1{}", "{k = ".repeat(n), "}".repeat(n))),
    },
    Shape {
        name: "parentheses",
        build: |n| attr(format!("{}1{}", "(".repeat(n), ")".repeat(n))),
    },
    Shape {
        name: "unary minus",
        build: |n| attr(format!("{}1", "-".repeat(n))),
    },
    Shape {
        name: "logical not",
        build: |n| attr(format!("{}true", "!".repeat(n))),
    },
    Shape {
        name: "power (right-associative)",
        build: |n| attr(format!("{}1", "1^".repeat(n))),
    },
    Shape {
        name: "addition chain (left-associative)",
        build: |n| attr(format!("1{}", "+1".repeat(n))),
    },
    Shape {
        name: "field access chain",
        build: |n| attr(format!("x{}", ".y".repeat(n))),
    },
    Shape {
        name: "index chain",
        build: |n| attr(format!("x{}", "[0]".repeat(n))),
    },
    Shape {
        name: "call chain",
        build: |n| attr(format!("f{}", "()".repeat(n))),
    },
    Shape {
        name: "blocks",
        build: |n| format!("{}{}", "b {\n".repeat(n), "}\n".repeat(n)),
    },
];

fn too_deep(d: &Diagnostic) -> bool {
    d.message.starts_with("nesting too deep")
}

/// Everything a config goes through, on a small stack. Returns the parse diagnostics.
fn run_on_worker_stack(src: String) -> Vec<Diagnostic> {
    std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let (file, diags) = parse_file(&src);
            let _ = eval_body(&file.body, &Scope::stdlib());
            let formatted = format_file(&file, &src);
            let (again, _) = parse_file(&formatted);
            drop(again);
            let registry = scraper::components::builtin();
            let _ = scraper::runtime::check(&registry, "deep.alloy", &src);
            drop(file);
            diags
        })
        .expect("spawn")
        .join()
        .expect("no panic")
}

#[test]
fn nesting_up_to_the_limit_works_on_a_worker_stack() {
    // The file body is the first level.
    for shape in SHAPES {
        let diags = run_on_worker_stack((shape.build)(MAX_DEPTH - 1));
        assert!(
            !diags.iter().any(too_deep),
            "{}: {} levels must be accepted: {diags:?}",
            shape.name,
            MAX_DEPTH - 1
        );
    }
}

#[test]
fn one_level_past_the_limit_is_one_error() {
    for shape in SHAPES {
        let src = (shape.build)(MAX_DEPTH);
        let diags = run_on_worker_stack(src.clone());
        assert_eq!(diags.len(), 1, "{}: {diags:?}", shape.name);
        assert!(too_deep(&diags[0]), "{}: {diags:?}", shape.name);
        let span = diags[0].span.expect("positioned");
        assert!(
            (span.start as usize) < src.len() && span.end > span.start,
            "{}: {span:?}",
            shape.name
        );
    }
}

#[test]
fn huge_nesting_is_refused_without_overflowing() {
    for shape in SHAPES {
        let diags = run_on_worker_stack((shape.build)(200_000));
        assert_eq!(diags.len(), 1, "{}: {diags:?}", shape.name);
        assert!(too_deep(&diags[0]), "{}: {diags:?}", shape.name);
    }
}

#[test]
fn the_limit_applies_to_single_expressions_and_is_counted_per_path() {
    let deep = format!(
        "{}1{}",
        "[".repeat(MAX_DEPTH + 1),
        "]".repeat(MAX_DEPTH + 1)
    );
    let errs = parse_expression(&deep).expect_err("too deep");
    assert!(errs.iter().any(too_deep), "{errs:?}");
    // Depth is per path, not per file: many siblings at a modest depth are fine.
    let wide = (0..2_000)
        .map(|_| format!("{}1{}", "[".repeat(50), "]".repeat(50)))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(parse_expression(&format!("[{wide}]")).is_ok());
}
