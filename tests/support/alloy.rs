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
