//! Alloy config snippets the integration tests share.

/// The profile types `pyroscope.scrape` scrapes by default.
const DEFAULT_TYPES: [&str; 5] = ["process_cpu", "memory", "goroutine", "mutex", "block"];

/// A `profiling_config` block (indented for a component body) that enables exactly `enabled`
/// of the default profile types and disables the rest.
pub fn profiling_config(enabled: &[&str]) -> String {
    let mut s = String::from("  profiling_config {\n");
    for t in DEFAULT_TYPES {
        s.push_str(&format!(
            "    profile.{t} {{\n      enabled = {}\n    }}\n",
            enabled.contains(&t)
        ));
    }
    s.push_str("  }\n");
    s
}

/// The upgrade-window tests' pipeline: `pyroscope.scrape "app"` scraping `targets` (each a list
/// of labels, `__address__` first) every 3 s with 2 s CPU profiles, the `types` enabled, into
/// `pyroscope.store "local"` at `store`.
pub fn scrape_into_store(
    targets: &[&[(&str, &str)]],
    types: &[&str],
    store: &std::path::Path,
) -> String {
    let targets: Vec<String> = targets
        .iter()
        .map(|labels| {
            let pairs: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k:?} = {v:?}"))
                .collect();
            format!("    {{{}}},\n", pairs.join(", "))
        })
        .collect();
    format!(
        r#"
pyroscope.scrape "app" {{
  targets = [
{}  ]
  forward_to               = [pyroscope.store.local.receiver]
  scrape_interval          = "3s"
  delta_profiling_duration = "2s"
{profiling}}}

pyroscope.store "local" {{
  path = {store:?}
}}
"#,
        targets.concat(),
        store = store.display().to_string(),
        profiling = profiling_config(types),
    )
}
