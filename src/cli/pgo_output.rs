//! Where `scraper pgo --split-by LABEL` writes each workload's profile: `-o` names a path with
//! `{value}` in it (`-o 'pgo/{value}/default.pgo'`, one directory per workload, the layout
//! `go build -pgo=auto` wants beside each main package) or a directory (`-o pgo/`, files
//! `pgo/<value>.pgo`). A value becomes a file-name part with every character other than ASCII
//! letters, digits, `.`, `_` and `-` replaced by `_` (`otel/collector` -> `otel_collector`), and
//! a value of only dots by as many `_`, so no value can climb out of the directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The placeholder `-o` may contain.
pub(crate) const PLACEHOLDER: &str = "{value}";

/// `value` as a safe file-name part (see the module docs).
pub(crate) fn file_part(value: &str) -> String {
    let mut out: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.chars().all(|c| c == '.') {
        out = "_".repeat(out.len().max(1));
    }
    out
}

/// Whether `-o` names a directory: one that exists, or a path ending in `/`.
fn is_directory(output: &Path) -> bool {
    output.is_dir() || output.to_string_lossy().ends_with('/')
}

/// The path of each value's profile, refusing an `-o` that names no per-value path and two
/// values that would land on one file.
pub(crate) fn split_paths(
    output: &Path,
    label: &str,
    values: &[String],
) -> Result<BTreeMap<String, PathBuf>, String> {
    let template = output.to_string_lossy();
    let directory = is_directory(output);
    if !template.contains(PLACEHOLDER) && !directory {
        return Err(format!(
            "--split-by {label} writes one profile per value: give -o a path with {PLACEHOLDER} (e.g. -o 'pgo/{PLACEHOLDER}/default.pgo') or a directory (-o pgo/)"
        ));
    }
    let mut paths = BTreeMap::new();
    let mut taken: BTreeMap<PathBuf, &str> = BTreeMap::new();
    for value in values {
        let part = file_part(value);
        let path = if template.contains(PLACEHOLDER) {
            PathBuf::from(template.replace(PLACEHOLDER, &part))
        } else {
            output.join(format!("{part}.pgo"))
        };
        if let Some(other) = taken.insert(path.clone(), value) {
            return Err(format!(
                "{label} values {other:?} and {value:?} would both be written to {}",
                path.display()
            ));
        }
        paths.insert(value.clone(), path);
    }
    Ok(paths)
}

/// The one output without `--split-by`, which must not ask for a value.
pub(crate) fn single_path(output: &Path) -> Result<PathBuf, String> {
    if output.to_string_lossy().contains(PLACEHOLDER) {
        return Err(format!(
            "-o {} has {PLACEHOLDER}, which only --split-by fills in",
            output.display()
        ));
    }
    Ok(output.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_safe_file_names() {
        let cases = [
            ("l1", "l1"),
            ("otel/pprof-collector", "otel_pprof-collector"),
            ("a b:c", "a_b_c"),
            ("v1.2_x", "v1.2_x"),
            ("..", "__"),
            (".", "_"),
            ("", "_"),
            ("../etc", ".._etc"),
            ("é", "_"),
        ];
        for (value, want) in cases {
            assert_eq!(file_part(value), want, "{value:?}");
        }
    }

    #[test]
    fn outputs_per_value() {
        let dir = tempfile::tempdir().expect("tempdir");
        let existing = dir.path().to_string_lossy().into_owned();
        let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        /// `-o`, the values, and the paths or a part of the error.
        type Case = (String, Vec<String>, Result<Vec<String>, &'static str>);
        let cases: Vec<Case> = vec![
            (
                "pgo/{value}/default.pgo".into(),
                values(&["l1", "otel/x"]),
                Ok(vec![
                    "pgo/l1/default.pgo".into(),
                    "pgo/otel_x/default.pgo".into(),
                ]),
            ),
            (
                "out/".into(),
                values(&["l1"]),
                Ok(vec!["out/l1.pgo".into()]),
            ),
            (
                existing.clone(),
                values(&["l2"]),
                Ok(vec![format!("{existing}/l2.pgo")]),
            ),
            (
                "default.pgo".into(),
                values(&["l1"]),
                Err("give -o a path with {value}"),
            ),
            (
                "{value}.pgo".into(),
                values(&["a/b", "a:b"]),
                Err("would both be written to a_b.pgo"),
            ),
        ];
        for (output, values, want) in cases {
            let got = split_paths(Path::new(&output), "workload", &values);
            match want {
                Ok(paths) => {
                    let got: Vec<String> = got
                        .expect(&output)
                        .values()
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect();
                    assert_eq!(got, paths, "{output}");
                }
                Err(text) => {
                    let err = got.expect_err(&output);
                    assert!(err.contains(text), "{output}: {err}");
                }
            }
        }
        assert!(single_path(Path::new("default.pgo")).is_ok());
        assert!(single_path(Path::new("{value}.pgo")).is_err());
    }
}
