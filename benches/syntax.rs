//! Parser throughput: the largest file of the Alloy corpus (2,486 lines), plus a generated
//! config of the same shape so the benchmark also runs on a checkout without the corpus.
//!
//! Goal (issue 2): < 1 ms per 1,000 lines. Run: `cargo bench --bench syntax`.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use scraper::syntax::parser::parse_file;

const LARGEST: &str = "../shared/alloy-corpus/valid/k8s-monitoring-helm__charts__k8s-monitoring__docs__examples__meta-monitoring__alloy.alloy";

/// A realistic profiling config repeated until it has about `lines` lines.
fn generated(lines: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.lines().count() < lines {
        out.push_str(&format!(
            r#"discovery.relabel "pods_{i}" {{
  targets = discovery.kubernetes.pods.targets
  // Keep only pods that opted in.
  rule {{
    source_labels = ["__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_scrape"]
    action        = "keep"
    regex         = "true"
  }}
  rule {{
    source_labels = ["__address__", "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_port"]
    regex         = "(.+?)(?::\\d+)?;(\\d+)"
    replacement   = "$1:$2"
    target_label  = "__address__"
  }}
}}

pyroscope.scrape "scrape_{i}" {{
  targets    = array.concat(discovery.relabel.pods_{i}.output, [{{"__address__" = "localhost:12345", "service_name" = "self"}}])
  forward_to = [pyroscope.write.default.receiver]
  profiling_config {{
    profile.process_cpu {{ enabled = true }}
    profile.memory {{
      enabled = true
      path    = `/debug/pprof/allocs`
    }}
  }}
}}

"#
        ));
        i += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let mut inputs = vec![("generated-2500-lines".to_string(), generated(2500))];
    let largest = Path::new(env!("CARGO_MANIFEST_DIR")).join(LARGEST);
    match std::fs::read_to_string(&largest) {
        Ok(text) => inputs.push(("corpus-largest".to_string(), text)),
        Err(_) => eprintln!(
            "corpus not found at {}: benchmarking the generated input only",
            largest.display()
        ),
    }
    let mut group = c.benchmark_group("parse_file");
    for (name, text) in &inputs {
        let lines = text.lines().count() as u64;
        // Elements = lines, so criterion reports lines/s; 1 ms per 1,000 lines = 1 Melem/s.
        group.throughput(Throughput::Elements(lines));
        group.bench_function(format!("{name} ({lines} lines)"), |b| {
            b.iter(|| {
                let (file, diags) = parse_file(std::hint::black_box(text));
                assert!(diags.is_empty());
                file
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
