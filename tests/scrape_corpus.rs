//! Every `pyroscope.scrape` block of the Alloy corpus (real-world configs, Alloy's docs, Helm
//! charts) decodes unchanged as our arguments. The blocks' `targets` and `forward_to` refer to
//! other components, so those two expressions are replaced by `[]`; everything else is
//! evaluated and decoded as written.

mod support;

use scraper::syntax::decode::from_body_at;
use support::corpus;

#[test]
fn corpus_scrape_blocks_decode() {
    let Some(root) = corpus::root() else { return };
    let mut decoded = 0;
    let mut failures = Vec::new();
    for block in corpus::component_blocks(&root, &["pyroscope.scrape"], &["targets", "forward_to"])
    {
        let body = match &block.body {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{}: evaluation: {e}", block.name));
                continue;
            }
        };
        match from_body_at::<scraper::components::pyroscope::scrape::Arguments>(body, block.header)
        {
            Ok(_) => decoded += 1,
            Err(ds) => failures.push(corpus::decode_failure(&block.name, &ds)),
        }
    }
    eprintln!("{decoded} pyroscope.scrape blocks decoded");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(decoded >= 20, "only {decoded} blocks found");
}
