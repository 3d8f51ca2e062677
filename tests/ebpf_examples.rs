//! What the shipped `pyroscope.ebpf` configurations ask for: every block in config/ and the
//! Helm chart demangles C++ and Rust names (`demangle = "simplified"`; the component's own
//! default stays Alloy's `none`), and the host-wide example samples every process, not only
//! those discovery has listed so far.
//!
//! The chart is checked in its template and values, and, when Helm is installed
//! (charts/tools/install.sh), in the config it renders.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::tools::{self, repo};

/// The `pyroscope.ebpf` blocks of an Alloy file, each from its header to its closing brace.
fn ebpf_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("pyroscope.ebpf \"") {
        let block = &rest[at..];
        let Some(open) = block.find('{') else { break };
        let mut depth = 0usize;
        let mut end = block.len();
        for (i, c) in block[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        blocks.push(&block[..end]);
        rest = &block[end..];
    }
    blocks
}

/// The value of attribute `name` in a block, as written.
fn attribute<'a>(block: &'a str, name: &str) -> Option<&'a str> {
    block.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == name).then(|| value.trim())
    })
}

fn alloy_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(alloy_files(&path));
        } else if path.extension().is_some_and(|e| e == "alloy") {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn example_configs_demangle_and_the_host_example_samples_every_process() {
    let mut blocks = 0;
    for path in alloy_files(&repo().join("config")) {
        let text = std::fs::read_to_string(&path).expect("read example");
        for block in ebpf_blocks(&text) {
            blocks += 1;
            assert_eq!(
                attribute(block, "demangle"),
                Some("\"simplified\""),
                "{}:\n{block}",
                path.display()
            );
        }
    }
    assert!(blocks > 0, "no pyroscope.ebpf block in config/");

    let host = std::fs::read_to_string(repo().join("config/ebpf-host.alloy")).expect("example");
    let blocks = ebpf_blocks(&host);
    assert_eq!(blocks.len(), 1, "{host}");
    // With `targets_only = true` a process newer than discovery's last walk is not sampled.
    assert_eq!(
        attribute(blocks[0], "targets_only"),
        Some("false"),
        "{}",
        blocks[0]
    );
}

#[test]
fn the_chart_demangles_by_default() {
    let template = std::fs::read_to_string(repo().join("charts/scraper/templates/_config.tpl"))
        .expect("template");
    let blocks = ebpf_blocks(&template);
    assert_eq!(blocks.len(), 1, "{template}");
    assert_eq!(
        attribute(blocks[0], "demangle"),
        Some("{{ .Values.ebpf.demangle | quote }}"),
        "{}",
        blocks[0]
    );
    let values: serde_json::Value = serde_norway::from_str(
        &std::fs::read_to_string(repo().join("charts/scraper/values.yaml")).expect("values"),
    )
    .expect("values.yaml parses");
    assert_eq!(values["ebpf"]["demangle"], "simplified");

    let Some(helm) = tools::helm() else { return };
    let home = tempfile::tempdir().expect("tempdir");
    let out = Command::new(helm)
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .current_dir(repo())
        .args([
            "template",
            "demo",
            "charts/scraper",
            "--set",
            "ebpf.enabled=true",
        ])
        .output()
        .expect("run helm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = String::from_utf8_lossy(&out.stdout);
    let blocks = ebpf_blocks(&rendered);
    assert_eq!(blocks.len(), 1, "{rendered}");
    assert_eq!(
        attribute(blocks[0], "demangle"),
        Some("\"simplified\""),
        "{}",
        blocks[0]
    );
}
