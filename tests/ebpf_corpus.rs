//! Every `pyroscope.ebpf` and `discovery.process` block of the Alloy corpus (Alloy's docs and
//! tests, Helm charts, Pyroscope's examples) decodes unchanged as our arguments. References to
//! other components (`targets`, `forward_to`, `join`) are replaced by `[]`; everything else is
//! evaluated and decoded as written.

mod support;

use std::collections::BTreeMap;

use scraper::syntax::decode::from_body_at;
use support::corpus;

#[test]
fn corpus_ebpf_and_process_blocks_decode() {
    let Some(root) = corpus::root() else { return };
    let mut decoded = BTreeMap::<String, usize>::new();
    let mut failures = Vec::new();
    let blocks = corpus::component_blocks(
        &root,
        &["pyroscope.ebpf", "discovery.process"],
        &["targets", "forward_to", "join"],
    );
    for block in blocks {
        let body = match &block.body {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{}: evaluation: {e}", block.name));
                continue;
            }
        };
        let result = if block.component == "pyroscope.ebpf" {
            from_body_at::<scraper::components::pyroscope::ebpf::args::Arguments>(
                body,
                block.header,
            )
            .map(|_| ())
        } else {
            from_body_at::<scraper::components::discovery::process::Arguments>(body, block.header)
                .map(|_| ())
        };
        match result {
            Ok(()) => *decoded.entry(block.component).or_default() += 1,
            Err(ds) => failures.push(corpus::decode_failure(&block.name, &ds)),
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
