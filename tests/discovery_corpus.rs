//! Every `discovery.docker`, `discovery.file` and `discovery.http` block of the Alloy corpus
//! (real-world configs, Alloy's docs) decodes unchanged as our arguments and passes their
//! validation. They are evaluated as written with the standard library only; a block whose
//! attributes refer to another component (a `remote.kubernetes.secret` credential) cannot be
//! evaluated without it and is skipped, and counted.

mod support;

use scraper::components::discovery::{docker, file, http};
use scraper::runtime::Component;
use scraper::syntax::decode::from_body_at;
use scraper::syntax::eval::EvaluatedBody;
use support::corpus;

fn check<C: Component>(
    body: &EvaluatedBody,
    header: scraper::syntax::ast::Span,
) -> Result<(), String>
where
    C::Arguments: serde::de::DeserializeOwned,
{
    let args = from_body_at::<C::Arguments>(body, header).map_err(|ds| {
        ds.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let invalid = C::validate(&args);
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(invalid
            .iter()
            .map(|i| i.message.clone())
            .collect::<Vec<_>>()
            .join("; "))
    }
}

#[test]
fn corpus_discovery_blocks_decode() {
    let Some(root) = corpus::root() else { return };
    let mut decoded = std::collections::BTreeMap::<String, usize>::new();
    let mut failures = Vec::new();
    let mut skipped = 0;
    let names = ["discovery.docker", "discovery.file", "discovery.http"];
    for block in corpus::component_blocks(&root, &names, &[]) {
        let body = match &block.body {
            Ok(b) => b,
            Err(e) if e.contains("does not exist") => {
                skipped += 1;
                continue;
            }
            Err(e) => {
                failures.push(format!("{}: evaluation: {e}", block.name));
                continue;
            }
        };
        let result = match block.component.as_str() {
            "discovery.docker" => check::<docker::Docker>(body, block.header),
            "discovery.file" => check::<file::File>(body, block.header),
            _ => check::<http::Http>(body, block.header),
        };
        match result {
            Ok(()) => *decoded.entry(block.component.clone()).or_default() += 1,
            Err(e) => failures.push(format!("{}: {e}", block.name)),
        }
    }
    eprintln!("decoded: {decoded:?}; skipped (references): {skipped}");
    assert!(failures.is_empty(), "{failures:#?}");
    for name in names {
        assert!(
            decoded.get(name).is_some_and(|&n| n >= 1),
            "no {name} block found: {decoded:?}"
        );
    }
}
