//! Alloy-syntax fuzz target: arbitrary bytes as a config file (src/syntax, and `scraper check`).
//!
//! Checks that nothing panics (or overflows the stack, or allocates without bound) in the
//! lexer, the parser (file and single-expression entry points), the diagnostic renderer, the
//! formatter, evaluation with the standard library, and `scraper check` (loading, graph,
//! evaluation and decoding of every builtin component's arguments, without building any).
//!
//! For every file that parses without errors, `scraper fmt`'s promises (see
//! src/syntax/printer/mod.rs and tests/fmt_corpus.rs) are asserted: the formatted text parses, to
//! the same syntax tree (spans aside) with the same comments, and formatting it again changes
//! nothing.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use scraper::runtime::Registry;
use scraper::syntax::ast::{Block, Body, Expr, ExprKind, File, Span, Stmt};
use scraper::syntax::diag::{Diagnostic, Source};
use scraper::syntax::eval::{Scope, deprecation_warnings, eval_body, eval_expr, expr_text};
use scraper::syntax::lexer::{Lexer, TokenKind};
use scraper::syntax::parser::{parse_expression, parse_file, parse_file_bytes};
use scraper::syntax::printer::format_file;

static REGISTRY: LazyLock<Registry> = LazyLock::new(scraper::components::builtin);
static STDLIB: LazyLock<Scope> = LazyLock::new(Scope::stdlib);

const NAME: &str = "fuzz.alloy";

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        // Bytes that are not UTF-8 are errors at their offset (as in Alloy), never a panic;
        // `scraper check` reads such a file lossily.
        let (_, diags) = parse_file_bytes(data);
        assert!(
            diags.iter().any(Diagnostic::is_error),
            "invalid UTF-8 accepted"
        );
        let lossy = String::from_utf8_lossy(data);
        check(&lossy);
        return;
    };

    // The lexer on its own reaches EOF: every token but a terminator consumes input.
    let mut lexer = Lexer::new(src);
    let mut tokens = 0;
    while lexer.next_token().kind != TokenKind::Eof {
        tokens += 1;
        assert!(tokens <= 2 * src.len() + 2, "the lexer does not reach EOF");
    }
    let _ = lexer.take_diagnostics();

    let (file, diags) = parse_file(src);
    if diags.iter().any(Diagnostic::is_error) {
        render(src, &diags);
    } else {
        formats(&file, src);
        if let Ok(body) = eval_body(&file.body, &STDLIB) {
            let _ = body.to_json_redacted().to_string();
        }
        let _ = deprecation_warnings(&file.body, &STDLIB);
    }
    check(src);

    match parse_expression(src) {
        Ok(expr) => {
            let _ = expr_text(&expr);
            match eval_expr(&expr, &STDLIB) {
                Ok(value) => {
                    let _ = format!("{value:?}");
                    let _ = scraper::syntax::eval::value_to_json_redacted(&value).to_string();
                }
                Err(d) => {
                    let _ = Source::new(NAME, src).render(&d);
                }
            }
        }
        Err(diags) => render(src, &diags),
    }
});

/// `scraper check`: every diagnostic, rendered.
fn check(src: &str) {
    render(src, &scraper::runtime::check(&REGISTRY, NAME, src));
}

/// Every diagnostic in its one-line form, the first few with a snippet as `scraper check`
/// shows them (codespan-reporting re-reads the whole text per diagnostic: rendering them all
/// would cost most of the run for no more coverage).
fn render(src: &str, diags: &[Diagnostic]) {
    let source = Source::new(NAME, src);
    for d in diags {
        let _ = source.short(d);
    }
    let _ = source.render_all(&diags[..diags.len().min(3)]);
}

/// `scraper fmt`'s properties for a file that parsed without errors.
fn formats(file: &File, src: &str) {
    let once = format_file(file, src);
    let (again, diags) = parse_file(&once);
    if let Some(d) = diags.iter().find(|d| d.is_error()) {
        panic!(
            "formatted text does not parse: {}\n--- input\n{src}\n--- formatted\n{once}",
            Source::new(NAME, once.as_str()).short(d)
        );
    }
    assert!(
        span_free(file) == span_free(&again),
        "formatting changed the syntax tree\n--- input\n{src}\n--- formatted\n{once}"
    );
    assert_eq!(
        comment_texts(file),
        comment_texts(&again),
        "formatting lost or reordered comments\n--- formatted\n{once}"
    );
    let twice = format_file(&again, &once);
    assert!(
        twice == once,
        "formatting is not idempotent\n--- input\n{src}\n--- once\n{once}\n--- twice\n{twice}"
    );
}

// Span-free comparison of syntax trees, as tests/fmt_corpus.rs does it.

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
