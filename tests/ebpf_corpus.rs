//! Every `pyroscope.ebpf` and `discovery.process` block of the Alloy corpus (Alloy's docs and
//! tests, Helm charts, Pyroscope's examples) decodes unchanged as our arguments. References to
//! other components (`targets`, `forward_to`, `join`) are replaced by `[]`; everything else is
//! evaluated and decoded as written.

mod support;

use scraper::syntax::ast::{Expr, ExprKind, Stmt};
use scraper::syntax::decode::from_body_at;
use scraper::syntax::diag::Diagnostic;
use scraper::syntax::eval::EvaluatedBody;
use scraper::syntax::eval::{Scope, eval_body};
use scraper::syntax::parser::parse_file;
use support::corpus;

type Decoder = fn(&EvaluatedBody, scraper::syntax::ast::Span) -> Result<(), Vec<Diagnostic>>;

#[test]
fn corpus_ebpf_and_process_blocks_decode() {
    let Some(root) = corpus::root() else { return };
    let decoders: [(&str, Decoder); 2] = [
        ("pyroscope.ebpf", |b, s| {
            from_body_at::<scraper::ebpf::args::Arguments>(b, s).map(|_| ())
        }),
        ("discovery.process", |b, s| {
            from_body_at::<scraper::discovery::process::Arguments>(b, s).map(|_| ())
        }),
    ];
    let mut decoded = std::collections::BTreeMap::<&str, usize>::new();
    let mut failures = Vec::new();
    for dir in ["profiling", "valid"] {
        for path in corpus::alloy_files(&root.join(dir)) {
            let src = std::fs::read_to_string(&path).expect("read");
            if !src.contains("pyroscope.ebpf") && !src.contains("discovery.process") {
                continue;
            }
            let (file, diags) = parse_file(&src);
            if diags.iter().any(|d| d.is_error()) {
                continue;
            }
            for stmt in &file.body.stmts {
                let Stmt::Block(block) = stmt else { continue };
                let full = block.full_name();
                let Some((kind, decode)) = decoders.iter().find(|(k, _)| *k == full) else {
                    continue;
                };
                let mut body = block.body.clone();
                for s in &mut body.stmts {
                    if let Stmt::Attribute(a) = s
                        && matches!(a.name.name.as_str(), "targets" | "forward_to" | "join")
                    {
                        a.value = Expr {
                            kind: ExprKind::Array(Vec::new()),
                            span: a.value.span,
                        };
                    }
                }
                let name = format!(
                    "{}: {full} {}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    block.label.as_ref().map_or("", |l| l.value.as_str())
                );
                let evaluated = match eval_body(&body, &Scope::stdlib()) {
                    Ok(b) => b,
                    Err(e) => {
                        failures.push(format!("{name}: evaluation: {e:?}"));
                        continue;
                    }
                };
                match decode(&evaluated, block.header_span()) {
                    Ok(()) => *decoded.entry(kind).or_default() += 1,
                    Err(ds) => failures.push(format!(
                        "{name}: {}",
                        ds.iter()
                            .map(|d| d.message.as_str())
                            .collect::<Vec<_>>()
                            .join("; ")
                    )),
                }
            }
        }
    }
    eprintln!("decoded: {decoded:?}");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        decoded.get("pyroscope.ebpf").copied().unwrap_or(0) >= 10,
        "{decoded:?}"
    );
    assert!(
        decoded.get("discovery.process").copied().unwrap_or(0) >= 3,
        "{decoded:?}"
    );
}
