//! `pyroscope.store` arguments.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::runtime::size::parse_size;
use crate::syntax::types::Duration as GoDuration;

/// Default `retention`.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default `max_size`: 2 GiB.
pub const DEFAULT_MAX_SIZE: u64 = 2 << 30;

/// The decoded block.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    /// The store directory; `None`: the component's data directory
    /// (`<storage.path>/<component id>`).
    pub path: Option<PathBuf>,
    /// Profiles older than this are deleted.
    pub retention: Duration,
    /// Bound on the database file, in bytes: the oldest profiles are deleted to keep the data
    /// within [`crate::store::size_budget`] of it. redb grows the file by doubling, so the file
    /// reaches `max_size` rounded up to a power of two (a multiple of 4 GiB beyond 4 GiB):
    /// powers of two (`"512MiB"`, `"2GiB"`) waste nothing.
    pub max_size: u64,
}

impl Default for Arguments {
    fn default() -> Self {
        Arguments {
            path: None,
            retention: DEFAULT_RETENTION,
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

fn default_retention() -> GoDuration {
    GoDuration(DEFAULT_RETENTION)
}

#[derive(Deserialize)]
#[serde(rename = "pyroscope.store")]
struct RawArguments {
    #[serde(default)]
    path: String,
    #[serde(default = "default_retention")]
    retention: GoDuration,
    /// A string so that both `max_size = "2GiB"` and `max_size = 1073741824` decode: the
    /// decoder hands a number to a string field as its text.
    #[serde(default)]
    max_size: Option<String>,
}

impl TryFrom<RawArguments> for Arguments {
    type Error = String;
    fn try_from(r: RawArguments) -> Result<Self, String> {
        if r.retention.0.is_zero() {
            return Err(
                "retention must be greater than 0 (profiles older than it are deleted)".into(),
            );
        }
        let max_size = match r.max_size.as_deref() {
            None => DEFAULT_MAX_SIZE,
            Some(s) => parse_size(s).map_err(|e| format!("max_size: {e}"))?,
        };
        if max_size == 0 {
            return Err("max_size must be greater than 0".into());
        }
        Ok(Arguments {
            path: (!r.path.is_empty()).then(|| PathBuf::from(r.path)),
            retention: r.retention.0,
            max_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode::from_body;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    fn decode(src: &str) -> Result<Arguments, String> {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
        from_body::<Arguments>(&body).map_err(|d| {
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    #[test]
    fn defaults() {
        assert_eq!(decode(""), Ok(Arguments::default()));
        assert_eq!(Arguments::default().max_size, 2 * 1024 * 1024 * 1024);
        assert_eq!(Arguments::default().retention, Duration::from_secs(86_400));
    }

    #[test]
    fn every_attribute() {
        assert_eq!(
            decode("path = \"./data/profiles\"\nretention = \"1h30m\"\nmax_size = \"512MiB\""),
            Ok(Arguments {
                path: Some(PathBuf::from("./data/profiles")),
                retention: Duration::from_secs(5400),
                max_size: 512 << 20,
            })
        );
        assert_eq!(
            decode("max_size = 1048576").map(|a| a.max_size),
            Ok(1 << 20)
        );
        assert_eq!(decode("path = \"\"").map(|a| a.path), Ok(None));
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        let err = decode("max_size = \"2XB\"").expect_err("bad unit");
        assert!(
            err.contains("max_size: invalid size \"2XB\": unknown unit"),
            "{err}"
        );
        let err = decode("max_size = 0").expect_err("zero");
        assert!(err.contains("max_size must be greater than 0"), "{err}");
        let err = decode("retention = \"0s\"").expect_err("zero");
        assert!(err.contains("retention must be greater than 0"), "{err}");
        let err = decode("retention = \"1d\"").expect_err("unit");
        assert!(err.contains("unknown unit \"d\""), "{err}");
        let err = decode("retention = 5").expect_err("no unit");
        assert!(err.contains("missing unit"), "{err}");
        let err = decode("size = \"1GB\"").expect_err("unknown");
        assert!(
            err.contains("unrecognized attribute name \"size\""),
            "{err}"
        );
    }
}
