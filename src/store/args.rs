//! `pyroscope.store` arguments.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

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
    /// within [`super::size_budget`] of it. redb grows the file by doubling, so the file
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

/// Parses a byte size: a plain number of bytes (`"1048576"`), or a number with a unit, as
/// Kubernetes quantities write them: `KB`/`K`, `MB`/`M`, `GB`/`G`, `TB`/`T` are powers of
/// 1000, `KiB`/`Ki`, `MiB`/`Mi`, `GiB`/`Gi`, `TiB`/`Ti` powers of 1024; `B` is bytes. Units
/// are case-insensitive and may follow a space; decimals are allowed (`"1.5GiB"`).
pub fn parse_size(input: &str) -> Result<u64, String> {
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let unit = unit.trim();
    if number.is_empty() {
        return Err(format!(
            "invalid size {input:?}: expected a number of bytes, optionally with a unit, such as \"512MiB\" or \"2GiB\""
        ));
    }
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "ki" | "kib" => 1 << 10,
        "mi" | "mib" => 1 << 20,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "invalid size {input:?}: unknown unit {unit:?} (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)"
            ));
        }
    };
    let too_large = || format!("invalid size {input:?}: too large");
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(multiplier).ok_or_else(too_large);
    }
    let n: f64 = number
        .parse()
        .map_err(|_| format!("invalid size {input:?}: {number:?} is not a number"))?;
    let bytes = n * multiplier as f64;
    // u64::MAX as f64 rounds up to 2^64, which does not fit.
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(too_large());
    }
    Ok(bytes.round() as u64)
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
    fn sizes() {
        let ok: &[(&str, u64)] = &[
            ("0", 0),
            ("1048576", 1 << 20),
            ("2GiB", 2 << 30),
            ("2gib", 2 << 30),
            ("2 GiB", 2 << 30),
            ("2Gi", 2 << 30),
            ("1GB", 1_000_000_000),
            ("1G", 1_000_000_000),
            ("512MiB", 512 << 20),
            ("100KB", 100_000),
            ("100KiB", 100 << 10),
            ("1.5GiB", 3 << 29),
            ("1TiB", 1 << 40),
            ("10B", 10),
            (" 7 ", 7),
        ];
        for (s, want) in ok {
            assert_eq!(parse_size(s), Ok(*want), "{s}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "expected a number of bytes"),
            ("GiB", "expected a number of bytes"),
            ("2XB", "unknown unit \"XB\""),
            ("2 gigs", "unknown unit \"gigs\""),
            ("1.2.3GB", "is not a number"),
            ("-1GB", "expected a number"),
            ("99999999999TiB", "too large"),
            ("18446744073709551616", "too large"),
        ];
        for (s, want) in bad {
            let got = parse_size(s);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(want)),
                "{s}: {got:?}"
            );
        }
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
