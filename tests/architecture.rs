//! The architecture, checked: docs/ARCHITECTURE.md's `layers` block is the dependency diagram,
//! and this test fails when the tree disagrees with it.
//!
//! * Every module under `src/` belongs to exactly one unit of the diagram, and every unit the
//!   diagram names exists and is described in the document (its folder is mentioned).
//! * A unit uses only units on lower lines: `crate::` paths (including grouped `use crate::{..}`)
//!   and `super::` chains that climb out of the unit are both followed. Units on one line may not
//!   use each other, which is what keeps components apart: `components::pyroscope::*` makes each
//!   component its own unit, so one component reaching into another fails here.
//! * No file has more than [`MAX_CODE_LINES`] lines of code outside its tests.
//!
//! Comments are ignored (a doc link to an upper layer is not a dependency); test code is not,
//! since a unit's tests must not need another component's internals either.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Non-blank, non-comment lines outside `#[cfg(test)]` items, per file.
const MAX_CODE_LINES: usize = 800;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One line of the diagram: a layer's name and its unit patterns (`a::b` or `a::*`).
#[derive(Debug)]
struct Layer {
    name: String,
    units: Vec<String>,
}

/// The fenced block whose info string is `layers`, top layer first.
fn diagram(doc: &str) -> Vec<Layer> {
    let mut layers = Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        let t = line.trim();
        if !inside {
            inside = t == "```layers";
            continue;
        }
        if t.starts_with("```") {
            break;
        }
        // Drawing characters (arrows, bars) may decorate the block; only `name: units` counts.
        let Some((name, units)) = t.split_once(':') else {
            continue;
        };
        let units: Vec<String> = units
            .split_whitespace()
            .filter(|u| u.chars().all(|c| c.is_alphanumeric() || "_:*".contains(c)))
            .map(str::to_string)
            .collect();
        if !units.is_empty() {
            layers.push(Layer {
                name: name.trim().to_string(),
                units,
            });
        }
    }
    assert!(
        !layers.is_empty(),
        "docs/ARCHITECTURE.md has no ```layers block"
    );
    layers
}

/// A source file and its module path (`components::pyroscope::scrape::manager`).
struct Source {
    path: PathBuf,
    module: Vec<String>,
    text: String,
}

fn sources() -> Vec<Source> {
    let src = root().join("src");
    let mut out = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("reading src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).expect("under src");
            let mut module: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            if module == ["main"] {
                // The binary: it sees the library as `scraper::`, like any other user.
                continue;
            }
            let text = fs::read_to_string(&path).expect("reading a source file");
            out.push(Source { path, module, text });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The unit a module path belongs to: the longest matching pattern; `a::*` makes each child
/// of `a` a unit of its own.
fn unit_of(module: &[String], layers: &[Layer]) -> Option<(String, usize)> {
    let mut best: Option<(String, usize)> = None;
    for (level, layer) in layers.iter().enumerate() {
        for pattern in &layer.units {
            let parts: Vec<&str> = pattern.split("::").collect();
            let unit = if parts.last() == Some(&"*") {
                let prefix = &parts[..parts.len() - 1];
                // The namespace's own module (its `mod.rs`, declarations only) counts as one
                // more unit of the same layer.
                if module.len() >= prefix.len() && module.iter().zip(prefix).all(|(m, p)| m == p) {
                    module[..(prefix.len() + 1).min(module.len())].join("::")
                } else {
                    continue;
                }
            } else if module.len() >= parts.len() && module.iter().zip(&parts).all(|(m, p)| m == p)
            {
                pattern.clone()
            } else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, _)| unit.len() > b.len()) {
                best = Some((unit, level));
            }
        }
    }
    best
}

/// The text without comments (line comments, doc comments and block comments), so that only
/// code is searched for paths.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut in_str = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            out.push(c as char);
            if c == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1] as char);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            out.push('"');
            i += 1;
        } else if text[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            let end = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            i = end;
        } else {
            // Multi-byte characters only occur in strings and comments in our code; keep
            // them intact anyway.
            let ch = text[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Module paths a file's code refers to: `crate::a::b`, each item of `crate::{a::b, c}`, and
/// `super::…` resolved against the file's own module.
fn references(source: &Source) -> Vec<Vec<String>> {
    let code = strip_comments(&source.text);
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| is_ident(c) || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(path_of(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(path_of(&item));
        } else {
            out.push(path_of(rest));
        }
    }
    // `super` chains, resolved against the module they are written in: the file's module
    // (in a `mod.rs`, the folder) plus the inline `mod x { .. }` blocks around them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let bytes = code.as_bytes();
    while i < bytes.len() {
        let at_word = i == 0 || !is_ident(code[..i].chars().next_back().unwrap_or(' '));
        let rest = &code[i..];
        if at_word && rest.starts_with("mod ") {
            let name = path_of(&rest[4..]);
            let after = rest[4..].trim_start();
            let after = &after[name.first().map_or(0, String::len)..];
            if name.len() == 1 && after.trim_start().starts_with('{') {
                inline.push((name[0].clone(), depth));
            }
        } else if at_word && rest.starts_with("super::") {
            let mut ups = 0;
            let mut t = rest;
            while let Some(r) = t.strip_prefix("super::") {
                ups += 1;
                t = r;
            }
            let mut module: Vec<String> = source.module.clone();
            module.extend(inline.iter().map(|(n, _)| n.clone()));
            if let Some(base) = module.len().checked_sub(ups) {
                let mut path = module[..base].to_vec();
                path.extend(path_of(t));
                out.push(path);
            }
            i = code.len() - t.len();
            continue;
        } else if rest.starts_with('{') {
            depth += 1;
        } else if rest.starts_with('}') {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The path at the start of `s`: identifiers joined by `::`, stopping at anything else.
fn path_of(s: &str) -> Vec<String> {
    let s = s.trim_start();
    let mut parts = Vec::new();
    let mut rest = s;
    loop {
        let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        parts.push(rest[..end].to_string());
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(is_ident) => rest = r,
            _ => break,
        }
    }
    parts
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("reading docs");
    let layers = diagram(&doc);
    let sources = sources();
    let mut problems = BTreeSet::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in &sources {
        if source.module.is_empty() {
            continue; // lib.rs only declares the top-level modules
        }
        let Some((unit, level)) = unit_of(&source.module, &layers) else {
            problems.insert(format!(
                "{}: module {} is in no unit of the layers diagram",
                source.path.display(),
                source.module.join("::")
            ));
            continue;
        };
        for reference in references(source) {
            let Some((target, target_level)) = unit_of(&reference, &layers) else {
                continue; // an item of the crate root or a macro path, not a module
            };
            if target == unit {
                continue;
            }
            edges
                .entry(unit.clone())
                .or_default()
                .insert(target.clone());
            // Layers are listed top first: a lower layer has a larger index.
            if target_level <= level {
                problems.insert(format!(
                    "{}: {} ({}) uses {} ({}), which is not below it",
                    source.path.display(),
                    unit,
                    layers[level].name,
                    reference.join("::"),
                    layers[target_level].name,
                ));
            }
        }
    }
    for (unit, targets) in &edges {
        eprintln!(
            "{unit} -> {}",
            targets.iter().cloned().collect::<Vec<_>>().join(" ")
        );
    }
    assert!(
        problems.is_empty(),
        "layering violations:\n{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_layers_diagram_names_every_folder_and_only_folders_that_exist() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("reading docs");
    let layers = diagram(&doc);
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for layer in &layers {
        for pattern in &layer.units {
            assert!(seen.insert(pattern.clone()), "{pattern} is listed twice");
            let base = pattern.trim_end_matches("::*").replace("::", "/");
            let dir = root().join("src").join(&base);
            let file = root().join("src").join(format!("{base}.rs"));
            if !dir.is_dir() && !file.is_file() {
                problems.push(format!("{pattern}: no src/{base}/ or src/{base}.rs"));
            }
        }
    }
    // Every unit is described in the document: a folder as `src/x/`, a file as `src/x.rs`.
    let sources = sources();
    let units: BTreeSet<String> = sources
        .iter()
        .filter(|s| !s.module.is_empty())
        .filter_map(|s| unit_of(&s.module, &layers).map(|(u, _)| u))
        .collect();
    for unit in &units {
        let base = unit.replace("::", "/");
        // Named by its path, with or without the leading `src/`.
        let mentioned = if root().join("src").join(&base).is_dir() {
            doc.contains(&format!("{base}/"))
        } else {
            doc.contains(&format!("{base}.rs"))
        };
        if !mentioned {
            problems.push(format!(
                "{unit} is not described (src/{base}) in docs/ARCHITECTURE.md"
            ));
        }
    }
    // Every top-level module belongs to some unit.
    for s in &sources {
        if !s.module.is_empty() && unit_of(&s.module, &layers).is_none() {
            problems.push(format!("{} belongs to no unit", s.path.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Files included only under `#[cfg(test)]` (`#[cfg(test)] mod tests;`, with or without a
/// `#[path]`): test code, not counted.
fn test_only_files(sources: &[Source]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for s in sources {
        let dir = if s
            .path
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
        {
            s.path.parent().expect("has a parent").to_path_buf()
        } else {
            s.path.with_extension("")
        };
        let lines: Vec<&str> = s.text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if *line != "#[cfg(test)]" {
                continue;
            }
            let mut explicit = None;
            for next in &lines[i + 1..] {
                if let Some(p) = next.strip_prefix("#[path = \"") {
                    explicit = p.strip_suffix("\"]").map(str::to_string);
                    continue;
                }
                if next.starts_with("#[") {
                    continue;
                }
                let decl = next.strip_prefix("pub(crate) ").unwrap_or(next);
                if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
                    let parent = s.path.parent().expect("has a parent");
                    match &explicit {
                        Some(p) => {
                            out.insert(parent.join(p));
                        }
                        None => {
                            out.insert(dir.join(format!("{name}.rs")));
                            out.insert(dir.join(name).join("mod.rs"));
                        }
                    }
                }
                break;
            }
        }
    }
    out
}

/// Code lines outside `#[cfg(test)]` items.
fn code_lines(text: &str) -> usize {
    without_tests(&strip_comments(text))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// The code without its `#[cfg(test)]` items (each up to the end of its first brace block, or
/// its `;`).
fn without_tests(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line == "#[cfg(test)]" {
            let mut depth = 0i32;
            let mut opened = false;
            let mut j = i + 1;
            while j < lines.len() {
                let l = lines[j];
                depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                opened |= l.contains('{');
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        out.push_str(lines[i]);
        out.push('\n');
        i += 1;
    }
    out
}

#[test]
fn no_file_has_more_than_800_lines_of_code() {
    let sources = sources();
    let tests = test_only_files(&sources);
    let mut big: Vec<(usize, &Path)> = sources
        .iter()
        .filter(|s| !tests.contains(&s.path))
        .map(|s| (code_lines(&s.text), s.path.as_path()))
        .filter(|(n, _)| *n > MAX_CODE_LINES)
        .collect();
    big.sort();
    assert!(
        big.is_empty(),
        "files over {MAX_CODE_LINES} lines of non-test code (split them by concept):\n{}",
        big.iter()
            .map(|(n, p)| format!("{n:5} {}", p.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Spawning outside `runtime::task` (which names every task with a span) is allowed only here:
/// the runtime itself, and the self-profiler's two short blocking calls (`pprof` knows nothing
/// of the runtime).
const SPAWN_ALLOWED: &[&str] = &["src/runtime/", "src/pprof/self_profile.rs"];

/// Lines of `code` that spawn with tokio directly instead of through `runtime::task`.
fn unnamed_spawns(code: &str) -> Vec<&str> {
    const DIRECT: [&str; 4] = [
        "tokio::spawn(",
        "tokio::task::spawn",
        "runtime.spawn(",
        "handle.spawn(",
    ];
    code.lines()
        .filter(|line| DIRECT.iter().any(|p| line.contains(p)))
        .collect()
}

#[test]
fn tasks_are_spawned_with_a_name() {
    let sources = sources();
    let tests = test_only_files(&sources);
    let mut unnamed = Vec::new();
    for s in &sources {
        let rel = s.path.strip_prefix(root()).expect("under the root");
        if tests.contains(&s.path) || SPAWN_ALLOWED.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let code = without_tests(&strip_comments(&s.text));
        for line in unnamed_spawns(&code) {
            unnamed.push(format!("{}: {}", rel.display(), line.trim()));
        }
    }
    assert!(
        unnamed.is_empty(),
        "spawn through crate::runtime::task so the task has a name:\n{}",
        unnamed.join("\n")
    );
}

#[test]
fn the_checks_catch_what_they_claim_to() {
    // The checks themselves must be able to fail: a diagram and sources made up here.
    let layers =
        diagram("```layers\napp: cli\ncomponents: components::pyroscope::*\nengines: store\n```\n");
    let unit = |m: &str| {
        unit_of(
            &m.split("::").map(str::to_string).collect::<Vec<_>>(),
            &layers,
        )
    };
    assert_eq!(
        unit("components::pyroscope::scrape::manager"),
        Some(("components::pyroscope::scrape".to_string(), 1))
    );
    assert_eq!(unit("store::db"), Some(("store".to_string(), 2)));
    assert_eq!(unit("elsewhere"), None);

    let source = Source {
        path: PathBuf::from("src/components/pyroscope/ebpf/session.rs"),
        module: ["components", "pyroscope", "ebpf", "session"]
            .map(String::from)
            .to_vec(),
        text: "// crate::cli in a comment\nuse crate::{store::Db, components::pyroscope::scrape::{A, B}};\nuse super::super::write::X;\nlet s = \"crate::x\";\nmod tests {\n    use super::Y;\n}\nuse super::Z;\n".to_string(),
    };
    let refs: Vec<String> = references(&source).iter().map(|r| r.join("::")).collect();
    assert!(refs.contains(&"store::Db".to_string()), "{refs:?}");
    assert!(
        refs.contains(&"components::pyroscope::scrape".to_string()),
        "{refs:?}"
    );
    assert!(
        refs.contains(&"components::pyroscope::write::X".to_string()),
        "{refs:?}"
    );
    assert!(!refs.iter().any(|r| r.starts_with("cli")), "{refs:?}");
    // `super` in an inline module is the file's module; outside it, the parent.
    assert!(
        refs.contains(&"components::pyroscope::ebpf::session::Y".to_string()),
        "{refs:?}"
    );
    assert!(
        refs.contains(&"components::pyroscope::ebpf::Z".to_string()),
        "{refs:?}"
    );

    let spawns = "task::spawn(\"x\", f);\ntokio::task::spawn_blocking(g);\ntokio::spawn(h);\n";
    assert_eq!(
        unnamed_spawns(spawns),
        ["tokio::task::spawn_blocking(g);", "tokio::spawn(h);"]
    );

    let text = "fn a() {}\n// comment\n\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\nfn c() {}\n";
    assert_eq!(code_lines(text), 2);
}
