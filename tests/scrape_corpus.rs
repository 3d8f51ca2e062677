//! Every `pyroscope.scrape` block of the Alloy corpus (real-world configs, Alloy's docs, Helm
//! charts) decodes unchanged as our arguments. The blocks' `targets` and `forward_to` refer to
//! other components, so those two expressions are replaced by `[]`; everything else is
//! evaluated and decoded as written.

mod support;

use scraper::syntax::ast::{Expr, ExprKind, Stmt};
use scraper::syntax::decode::from_body_at;
use scraper::syntax::eval::{Scope, eval_body};
use scraper::syntax::parser::parse_file;
use support::corpus;

#[test]
fn corpus_scrape_blocks_decode() {
    let Some(root) = corpus::root() else { return };
    let mut decoded = 0;
    let mut failures = Vec::new();
    for dir in ["profiling", "valid"] {
        for path in corpus::alloy_files(&root.join(dir)) {
            let src = std::fs::read_to_string(&path).expect("read");
            if !src.contains("pyroscope.scrape") {
                continue;
            }
            let (file, diags) = parse_file(&src);
            if diags.iter().any(|d| d.is_error()) {
                continue;
            }
            for stmt in &file.body.stmts {
                let Stmt::Block(block) = stmt else { continue };
                if block.full_name() != "pyroscope.scrape" {
                    continue;
                }
                let mut body = block.body.clone();
                for s in &mut body.stmts {
                    if let Stmt::Attribute(a) = s
                        && matches!(a.name.name.as_str(), "targets" | "forward_to")
                    {
                        a.value = Expr {
                            kind: ExprKind::Array(Vec::new()),
                            span: a.value.span,
                        };
                    }
                }
                let name = format!(
                    "{}: {}",
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
                match from_body_at::<scraper::scrape::Arguments>(&evaluated, block.header_span()) {
                    Ok(_) => decoded += 1,
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
    eprintln!("{decoded} pyroscope.scrape blocks decoded");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(decoded >= 20, "only {decoded} blocks found");
}
