//! `pyroscope.relabel` in a running pipeline (`pyroscope.scrape` → `pyroscope.relabel` →
//! `pyroscope.write` → a recording Pyroscope), and the Alloy corpus's configs that use it.

mod scrape_support;
mod support;

use std::time::Duration;

use scrape_support::{Behavior, FaultServer, Scraper, captured, metric};
use scraper::syntax::ast::{Block, Stmt};
use scraper::syntax::diag::{Diagnostic, Source};
use scraper::syntax::parser::parse_file;
use support::corpus;
use support::pyroscope_receiver::PyroscopeReceiver;

fn target(addr: &str, path: &str, service: &str, env: &str) -> String {
    format!(
        r#"{{"__address__" = "{addr}", "__profile_path__" = "{path}", "service_name" = "{service}", "env" = "{env}"}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_profiles_are_relabelled_and_dropped_by_rule() {
    let profile = captured("goapp-heap-1.pb.gz");
    let server = FaultServer::start(vec![
        ("/prod", Behavior::Profile(profile.clone())),
        ("/dev", Behavior::Profile(profile)),
    ])
    .await;
    let addr = server.addr.to_string();
    let rx = PyroscopeReceiver::start().await;
    let config = format!(
        r#"
pyroscope.scrape "apps" {{
  targets         = [{prod}, {dev}]
  forward_to      = [pyroscope.relabel.filter.receiver]
  scrape_interval = "1s"
{profiling}}}

pyroscope.relabel "filter" {{
  forward_to = [pyroscope.write.rx.receiver]

  rule {{
    source_labels = ["env"]
    regex         = "dev"
    action        = "drop"
  }}
  rule {{
    source_labels = ["env", "service_name"]
    regex         = "(.+);(.+)"
    target_label  = "service_name"
    replacement   = "$1/$2"
  }}
  rule {{
    regex  = "env"
    action = "labeldrop"
  }}
}}

pyroscope.write "rx" {{
  endpoint {{
    url = "{url}"
  }}
}}
"#,
        profiling = support::alloy::profiling_config(&["goroutine"]),
        prod = target(&addr, "/prod", "checkout", "prod"),
        dev = target(&addr, "/dev", "cart", "dev"),
        url = rx.url(),
    );
    let scraper = Scraper::start(|_| config).await;
    let id = [("component_id", "pyroscope.relabel.filter")];

    // Three scrapes of each target: enough for cache hits, and the dev target was scraped.
    let mut text;
    let settled = scraper
        .wait(Duration::from_secs(30), |_| {
            rx.count() >= 3 && server.requests("/dev").len() >= 3
        })
        .await;
    assert!(
        settled,
        "received {}, dev scraped {} times:\n{}",
        rx.count(),
        server.requests("/dev").len(),
        scraper.logs()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let counted = loop {
        text = scraper.metrics().await;
        let at_least = |name: &str, n: f64| metric(&text, name, &id).unwrap_or(0.0) >= n;
        if at_least("pyroscope_relabel_profiles_dropped", 2.0)
            && at_least("pyroscope_relabel_cache_hits", 2.0)
        {
            break true;
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(counted, "{text}");

    // Only the prod target's profiles arrived, with service_name rewritten and env gone.
    let received = rx.received();
    for p in &received {
        assert_eq!(p.label("service_name"), Some("prod/checkout"), "{p:?}");
        assert_eq!(p.label("env"), None, "{p:?}");
        assert_eq!(p.label("__name__"), Some("goroutine"), "{p:?}");
    }

    // Alloy's metric names, exactly (no `_total`), per component.
    let value = |name: &str| metric(&text, name, &id).unwrap_or_else(|| panic!("{name}: {text}"));
    let (processed, written, dropped) = (
        value("pyroscope_relabel_profiles_processed"),
        value("pyroscope_relabel_profiles_written"),
        value("pyroscope_relabel_profiles_dropped"),
    );
    assert!(processed >= written + dropped && written >= 3.0, "{text}");
    // Two label sets (one per target), scraped over and over.
    assert_eq!(value("pyroscope_relabel_cache_misses"), 2.0, "{text}");
    assert_eq!(value("pyroscope_relabel_cache_size"), 2.0, "{text}");
    assert!(text.contains("# TYPE pyroscope_relabel_profiles_dropped unknown"));

    let info = &scraper.component("pyroscope.relabel.filter").await["debugInfo"];
    assert_eq!(info["rules"], 3, "{info}");
    assert_eq!(info["max_cache_size"], 10000, "{info}");
    assert!(info["profiles_dropped"].as_u64() >= Some(2), "{info}");
}

/// The top-level block whose span contains `offset`.
fn block_at(blocks: &[&Block], offset: usize) -> Option<String> {
    blocks
        .iter()
        .find(|b| (b.span.start as usize) <= offset && offset < b.span.end as usize)
        .map(|b| b.full_name())
}

/// Whether a diagnostic is about `component` (the block it sits in, or a reference to one of
/// its instances' exports). The "supported components" list of an unknown-component error names
/// every component, so a bare mention does not count.
fn concerns(d: &Diagnostic, blocks: &[&Block], component: &str) -> bool {
    let at = d.span.and_then(|s| block_at(blocks, s.start as usize));
    at.as_deref() == Some(component)
        || d.message.contains(&format!("\"{component}\""))
        || d.message.contains(&format!("{component}."))
}

#[test]
fn corpus_configs_with_pyroscope_relabel_pass_check() {
    let Some(root) = corpus::root() else { return };
    let registry = scraper::components::builtin();
    let implemented: Vec<&str> = registry.names().collect();
    let mut failures = Vec::new();
    let mut relabel_blocks = 0;
    let mut complete = 0;
    for path in corpus::alloy_files(&root.join("profiling")) {
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !src.contains("pyroscope.relabel") {
            continue;
        }
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let (file, _) = parse_file(&src);
        let blocks: Vec<&Block> = file
            .body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Block(b) => Some(b),
                _ => None,
            })
            .collect();
        relabel_blocks += blocks
            .iter()
            .filter(|b| b.full_name() == "pyroscope.relabel")
            .count();
        // Top-level components scraper does not have (`declare` is not a component either).
        let mut missing: Vec<String> = blocks
            .iter()
            .map(|b| b.full_name())
            .filter(|n| n != "logging" && !implemented.contains(&n.as_str()))
            .collect();
        missing.sort();
        missing.dedup();

        let diags = scraper::runtime::check(&registry, &name, &src);
        let source = Source::new(name.clone(), src.clone());
        for d in &diags {
            if concerns(d, &blocks, "pyroscope.relabel") {
                failures.push(format!("about pyroscope.relabel: {}", source.short(d)));
            }
        }
        // Every error is about a component scraper does not implement; a file using only
        // components it has passes with no error at all.
        for d in diags.iter().filter(|d| d.is_error()) {
            if !missing.iter().any(|m| concerns(d, &blocks, m)) {
                failures.push(format!(
                    "not about a missing component ({missing:?}): {}",
                    source.short(d)
                ));
            }
        }
        if missing.is_empty() {
            complete += 1;
        }
        eprintln!(
            "{name}: {} errors, missing components {missing:?}",
            diags.iter().filter(|d| d.is_error()).count()
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        complete >= 2,
        "expected the docs and rideshare configs (receive_http, relabel, write) to use only \
         components scraper has, found {complete}"
    );
    assert!(
        relabel_blocks >= 8,
        "found only {relabel_blocks} top-level pyroscope.relabel blocks"
    );
}

/// `check` really decodes pyroscope.relabel blocks: a bad argument injected into the docs
/// example is reported, at the relabel block.
#[test]
fn corpus_relabel_block_errors_are_reported() {
    let Some(root) = corpus::root() else { return };
    let path = root.join("profiling").join(
        "alloy__docs__sources__reference__components__pyroscope__pyroscope.relabel.md__L91.alloy",
    );
    let Ok(src) = std::fs::read_to_string(&path) else {
        panic!("{} missing from the corpus", path.display());
    };
    let header = "pyroscope.relabel \"filter_profiles\" {";
    assert!(src.contains(header), "{src}");
    let broken = src.replacen(header, &format!("{header}\n    max_cache_size = 0"), 1);
    let diags = scraper::runtime::check(&scraper::components::builtin(), "docs.alloy", &broken);
    let source = Source::new("docs.alloy", broken.clone());
    let messages: Vec<String> = diags.iter().map(|d| source.short(d)).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("max_cache_size: must provide a positive size")),
        "{messages:#?}"
    );
}
