//! One pass over the files (blocking I/O, run on a blocking thread): which paths the patterns
//! match, what each holds, and a cheap stamp of them to notice a change between passes.

use std::os::unix::fs::MetadataExt as _;
use std::sync::Arc;

use super::glob;
use crate::labels::LabelSet;
use crate::targets::group;

/// The label naming the file a target came from (Prometheus' `fileSDFilepathLabel`).
pub const FILEPATH_LABEL: &str = "__meta_filepath";

/// One file's content, read successfully.
#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    pub targets: Vec<Arc<LabelSet>>,
    /// Modification time in seconds since the epoch (`prometheus_sd_file_mtime_seconds`).
    pub mtime: f64,
}

/// What the patterns matched, each path once in the order found, with what reading it gave.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: Vec<(String, Result<Content, String>)>,
    /// Patterns that could not be expanded (only a malformed pattern, refused by validation).
    pub glob_errors: Vec<String>,
    /// The stamp taken before reading: a change made while reading is seen by the next check.
    pub stamp: Stamp,
}

/// Which files match, and each one's size, times and inode: if none of these moved, no file
/// needs reading. An atomic rename over a file changes its inode; an edit in place its mtime
/// or size.
pub type Stamp = Vec<(String, Option<(u64, i64, i64, i64, i64, u64)>)>;

/// The paths matching `patterns`, deduplicated, in pattern then name order.
fn list(patterns: &[String], errors: &mut Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in patterns {
        match glob::glob(p) {
            Ok(paths) => {
                for path in paths {
                    if !out.contains(&path) {
                        out.push(path);
                    }
                }
            }
            Err(e) => errors.push(format!("expanding {p:?}: {e}")),
        }
    }
    out
}

/// The stamp of what `patterns` match now.
pub fn stamp(patterns: &[String]) -> Stamp {
    let mut errors = Vec::new();
    stamp_of(&list(patterns, &mut errors))
}

fn stamp_of(paths: &[String]) -> Stamp {
    paths
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok().map(|m| {
                (
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                    m.ino(),
                )
            });
            (p.clone(), m)
        })
        .collect()
}

/// Lists and reads every file.
pub fn scan(patterns: &[String]) -> Scan {
    let mut glob_errors = Vec::new();
    let paths = list(patterns, &mut glob_errors);
    let stamp = stamp_of(&paths);
    let files = paths
        .into_iter()
        .map(|p| {
            let content = read(&p);
            (p, content)
        })
        .collect();
    Scan {
        files,
        glob_errors,
        stamp,
    }
}

/// The largest file read, as `discovery.http` and `discovery.docker` bound their answers.
/// Prometheus has no bound; 64 MiB is ~500,000 targets, and a larger file (a log written to
/// the wrong path) would otherwise be held in memory whole. A larger file is a read error:
/// loud, and its last good targets are kept.
pub const FILE_LIMIT: u64 = 64 << 20;

/// Reads one file: JSON or YAML by its extension, as Prometheus decides (case-insensitively).
pub fn read(path: &str) -> Result<Content, String> {
    read_limited(path, FILE_LIMIT)
}

/// The whole of `path`, or an error if it holds more than `limit` bytes.
fn read_bytes(path: &str, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    // One byte past the limit tells a file of exactly `limit` bytes from a larger one.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("file exceeds {limit} bytes"));
    }
    Ok(bytes)
}

fn read_limited(path: &str, limit: u64) -> Result<Content, String> {
    let ext = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let bytes = read_bytes(path, limit)?;
    let mtime = std::fs::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs() as f64);
    let groups = match ext.as_str() {
        "json" => group::from_json(&bytes),
        "yml" | "yaml" => group::from_yaml(&bytes),
        other => return Err(format!("unhandled file extension {other:?}")),
    }
    .map_err(|e| e.to_string())?;
    Ok(Content {
        targets: group::to_targets(&groups, FILEPATH_LABEL, path),
        mtime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_reads_each_file_once_and_reports_bad_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_str().expect("utf-8");
        std::fs::write(
            dir.path().join("a.json"),
            r#"[{"targets": ["a:1"], "labels": {"env": "prod"}}]"#,
        )
        .expect("write");
        std::fs::write(dir.path().join("b.YML"), "- targets: ['b:2']\n").expect("write");
        std::fs::write(dir.path().join("c.json"), "{").expect("write");
        let patterns = vec![
            format!("{root}/*.json"),
            format!("{root}/a.json"),
            format!("{root}/*.YML"),
        ];
        let s = scan(&patterns);
        let paths: Vec<&str> = s.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                format!("{root}/a.json"),
                format!("{root}/c.json"),
                format!("{root}/b.YML")
            ]
        );
        let a = s.files[0].1.as_ref().expect("a reads");
        assert_eq!(a.targets[0].get(FILEPATH_LABEL), Some(paths[0]));
        assert_eq!(a.targets[0].get("env"), Some("prod"));
        assert!(a.mtime > 0.0);
        assert!(s.files[1].1.as_ref().expect_err("c is bad").contains("EOF"));
        assert_eq!(
            s.files[2].1.as_ref().expect("b reads").targets[0].get("__address__"),
            Some("b:2")
        );
        assert_eq!(s.stamp, stamp(&patterns));

        // A rewrite (new inode, as an atomic rename makes) changes the stamp.
        std::fs::write(dir.path().join("new.json"), "[]").expect("write");
        std::fs::rename(dir.path().join("new.json"), dir.path().join("a.json")).expect("mv");
        assert_ne!(s.stamp, stamp(&patterns));
    }

    /// Alloy reads any case of the extension and patterns with `*` in a directory.
    #[test]
    fn stars_in_directories_and_any_case_of_extension_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_str().expect("utf-8");
        for sub in ["x", "y"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
            std::fs::write(
                dir.path().join(sub).join("t.Json"),
                format!(r#"[{{"targets": ["{sub}:1"]}}]"#),
            )
            .expect("write");
        }
        let s = scan(&[format!("{root}/*/t.Json")]);
        let addresses: Vec<_> = s
            .files
            .iter()
            .map(|(p, c)| {
                let c = c.as_ref().unwrap_or_else(|e| panic!("{p}: {e}"));
                c.targets[0].get("__address__").unwrap_or("").to_string()
            })
            .collect();
        assert_eq!(addresses, ["x:1", "y:1"]);
    }

    #[test]
    fn files_over_the_limit_are_read_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.json");
        let path = path.to_str().expect("utf-8");
        std::fs::write(path, "[]").expect("write");
        assert!(read_limited(path, 2).is_ok(), "exactly the limit is read");
        let e = read_limited(path, 1).expect_err("over the limit");
        assert_eq!(e, "file exceeds 1 bytes");
        assert!(read(path).is_ok());
    }
}
