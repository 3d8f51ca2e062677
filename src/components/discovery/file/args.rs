//! The `discovery.file` block: `files` (required) and `refresh_interval` (`"5m"`), as Alloy.

use serde::Deserialize;

use super::glob;
use crate::syntax::decode::{ArgStep, Invalid};
use crate::syntax::eval::PathSeg;
use crate::syntax::types::Duration;

/// The block's arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    /// Paths or patterns (Go's `filepath.Glob`, metacharacters in any segment).
    pub files: Vec<String>,
    /// How often every file is read again, changed or not.
    pub refresh_interval: Duration,
}

fn default_refresh_interval() -> Duration {
    Duration::from_secs(5 * 60)
}

// The name is what the decoder shows for unknown attributes.
#[derive(Deserialize)]
#[serde(rename = "discovery.file")]
struct RawArguments {
    files: Vec<String>,
    #[serde(default = "default_refresh_interval")]
    refresh_interval: Duration,
}

impl TryFrom<RawArguments> for Arguments {
    type Error = String;

    fn try_from(r: RawArguments) -> Result<Self, String> {
        // Alloy hands the interval to time.NewTicker, which panics on zero.
        if r.refresh_interval.is_zero() {
            return Err("refresh_interval must be greater than 0".into());
        }
        Ok(Arguments {
            files: r.files,
            refresh_interval: r.refresh_interval,
        })
    }
}

/// Go's `filepath.Ext`: from the last `.` of the last path segment, or "".
fn go_ext(p: &str) -> &str {
    let name = p.rfind('/').map_or(p, |i| &p[i + 1..]);
    name.rfind('.').map_or("", |i| &name[i..])
}

/// Whether every file `p` can match is one Alloy reads. Alloy does not apply Prometheus'
/// `patFileSDName` (a `*` may be in any segment, the extension in any case); its file SD
/// lowercases each file's extension and panics on one other than `.json`, `.yml` and
/// `.yaml`, so only a pattern whose own extension is none of these is refused.
fn valid_pattern(p: &str) -> bool {
    matches!(
        go_ext(p).to_ascii_lowercase().as_str(),
        ".json" | ".yml" | ".yaml"
    )
}

impl Arguments {
    /// Patterns whose files Alloy's file SD would panic on (another extension), and
    /// malformed globs; we refuse them at the element at fault.
    pub fn invalid(&self) -> Vec<Invalid> {
        let mut out = Vec::new();
        for (i, p) in self.files.iter().enumerate() {
            let message = if !valid_pattern(p) {
                format!(
                    "path name {p:?} is not valid for file discovery (it must end in .json, .yml or .yaml)"
                )
            } else if let Err(e) = glob::matches(p, "") {
                format!("path name {p:?}: {e}")
            } else {
                continue;
            };
            out.push(Invalid {
                at: vec![
                    ArgStep::Attr("files".into()),
                    ArgStep::Value(PathSeg::Index(i)),
                ],
                message,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src)
    }

    #[test]
    fn defaults_and_required_files() {
        let a = decode_args("files = [\"/sd/*.json\"]").expect("valid");
        assert_eq!(a.refresh_interval, Duration::from_secs(300));
        assert_eq!(a.files, ["/sd/*.json"]);
        assert!(a.invalid().is_empty());
        let errs = decode_args("").expect_err("files is required");
        assert!(errs.iter().any(|e| e.contains("files")), "{errs:?}");
        let errs = decode_args("files = []\nrefresh_interval = \"0s\"").expect_err("zero");
        assert!(
            errs[0].contains("refresh_interval must be greater than 0"),
            "{errs:?}"
        );
        assert!(decode_args("files = []\nfoo = 1").is_err());
    }

    /// Alloy's rule: the pattern's extension, in any case, decides (see `valid_pattern`).
    #[test]
    fn patterns_follow_alloy() {
        let cases = [
            ("targets.json", true),
            ("/etc/sd/tg_*.json", true),
            ("sd/*.yml", true),
            ("sd/*.YAML", true),
            ("sd/*-*.yaml", true),
            ("sd/t.Json", true),
            ("sd/t.yAmL", true),
            ("*/targets.json", true),
            ("/etc/*/targets.json", true),
            ("/etc/*/[a-z]*.yml", true),
            ("sd/*.txt", false),
            ("sd/targets", false),
            ("sd/*", false),
            ("sd.json/targets", false),
            ("sd/t.json.bak", false),
        ];
        for (p, ok) in cases {
            assert_eq!(valid_pattern(p), ok, "{p}");
        }
        let a = Arguments {
            files: vec!["ok.json".into(), "bad.txt".into(), "x[.json".into()],
            refresh_interval: default_refresh_interval(),
        };
        let inv = a.invalid();
        assert_eq!(inv.len(), 2);
        assert!(
            inv[0].message.contains("\"bad.txt\" is not valid"),
            "{inv:?}"
        );
        assert_eq!(inv[0].at[1], ArgStep::Value(PathSeg::Index(1)));
        assert!(
            inv[1].message.contains("syntax error in pattern"),
            "{inv:?}"
        );
    }
}
