//! The legacy `/ingest` API's query vocabulary, as Pyroscope parses it: the `name` label set
//! (`app.cpu{env=prod,region=eu}`, Pyroscope's `api/model/labelset`) and the `from`/`until`
//! times (`pkg/og/util/attime`). The query string itself is read as Go reads it, with
//! `gocompat::url::query_get`.
//!
//! Quirks kept on purpose, because SDKs rely on what the server accepts:
//! * the app name is trimmed and may contain `[A-Za-z0-9_./-]`; label keys `[A-Za-z0-9_.]`;
//!   values are anything but `,` and `}`, trimmed, with no quoting;
//! * a key of `__name__` inside the braces replaces the app name (the parser stores the app
//!   name under that key and does not validate it there);
//! * text after the closing brace, and a key without `=` (`app{oops}`), are ignored.

use std::collections::BTreeMap;
use std::fmt;

/// The key the app name is stored under.
pub const APP_KEY: &str = "__name__";

/// Why a `name` did not parse. The messages are Pyroscope's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelSetError {
    #[error("service name is required")]
    ServiceNameRequired,
    #[error("invalid service name: {name}: character is not allowed: {ch}")]
    InvalidServiceName { name: String, ch: GoRune },
    #[error("label name is required")]
    LabelNameRequired,
    #[error("invalid label name: {name}: character is not allowed: {ch}")]
    InvalidLabelName { name: String, ch: GoRune },
}

/// A character printed as Go's `%q` prints a rune (`'-'`, `'\n'`, `'é'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoRune(pub char);

impl fmt::Display for GoRune {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            '\'' => f.write_str("'\\''"),
            '\\' => f.write_str("'\\\\'"),
            '\n' => f.write_str("'\\n'"),
            '\r' => f.write_str("'\\r'"),
            '\t' => f.write_str("'\\t'"),
            c if c.is_control() => write!(f, "'\\u{:04x}'", c as u32),
            c => write!(f, "'{c}'"),
        }
    }
}

/// A parsed `name`: the app name under [`APP_KEY`] plus the labels from the braces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSet {
    labels: BTreeMap<String, String>,
}

impl LabelSet {
    /// The app name (Pyroscope's `ServiceName()`): what `__name__` holds.
    pub fn app(&self) -> &str {
        self.labels.get(APP_KEY).map_or("", String::as_str)
    }

    /// Every entry, the app name (`__name__`) included.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// Entries that become series labels (`IsLabelAllowedForIngestion`): none starting with
    /// `__` except `__session_id__`.
    pub fn ingestible(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels
            .iter()
            .filter(|(k, _)| allowed_for_ingestion(k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// Pyroscope's `IsLabelAllowedForIngestion`.
pub fn allowed_for_ingestion(name: &str) -> bool {
    !name.starts_with("__") || name == "__session_id__"
}

fn label_rune_allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn service_rune_allowed(c: char) -> bool {
    c == '-' || c == '/' || label_rune_allowed(c)
}

fn validate_service_name(n: &str) -> Result<(), LabelSetError> {
    if n.is_empty() {
        return Err(LabelSetError::ServiceNameRequired);
    }
    match n.chars().find(|c| !service_rune_allowed(*c)) {
        Some(ch) => Err(LabelSetError::InvalidServiceName {
            name: n.to_string(),
            ch: GoRune(ch),
        }),
        None => Ok(()),
    }
}

fn validate_label_name(k: &str) -> Result<(), LabelSetError> {
    if k.is_empty() {
        return Err(LabelSetError::LabelNameRequired);
    }
    match k.chars().find(|c| !label_rune_allowed(*c)) {
        Some(ch) => Err(LabelSetError::InvalidLabelName {
            name: k.to_string(),
            ch: GoRune(ch),
        }),
        None => Ok(()),
    }
}

/// Parses `name` exactly as Pyroscope's `labelset.Parse`: a state machine over `name + "{"`.
pub fn parse(name: &str) -> Result<LabelSet, LabelSetError> {
    enum State {
        Name,
        Keys,
        Value,
        Done,
    }
    let mut set = LabelSet::default();
    let mut state = State::Name;
    let mut key = String::new();
    let mut value = String::new();
    for c in name.chars().chain(std::iter::once('{')) {
        match state {
            State::Name => {
                if c == '{' {
                    state = State::Keys;
                    let app = value.trim();
                    validate_service_name(app)?;
                    set.labels.insert(APP_KEY.to_string(), app.to_string());
                } else {
                    value.push(c);
                }
            }
            State::Keys => match c {
                '}' => state = State::Done,
                '=' => {
                    state = State::Value;
                    value.clear();
                }
                _ => key.push(c),
            },
            State::Value => match c {
                ',' | '}' => {
                    state = State::Keys;
                    let k = key.trim();
                    if k != APP_KEY {
                        validate_label_name(k)?;
                    }
                    set.labels.insert(k.to_string(), value.trim().to_string());
                    key.clear();
                }
                _ => value.push(c),
            },
            State::Done => {}
        }
    }
    Ok(set)
}

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// Pyroscope's `attime.Parse` (a rough port of Graphite's), as nanoseconds since the epoch:
/// digits are a date (`YYYYMMDD`) or a Unix time in seconds, or milliseconds, microseconds or
/// nanoseconds for 13, 16 or 19 digits; anything else is "now" plus an offset such as
/// `now-1h` or `-30min` (units `s`, `min`/`m`, `h`, `d`, `w`, `mon`/`M`, `y`; the reference
/// before the sign is ignored, as in Pyroscope). Never fails.
pub fn parse_time(input: &str, now_nanos: i64) -> i64 {
    let s: String = input
        .trim()
        .chars()
        .filter(|c| !matches!(c, '_' | ',' | ' '))
        .collect();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() == 8
            && let Some(days) = yyyymmdd_days(&s)
        {
            return days.saturating_mul(86_400).saturating_mul(NANOS_PER_SEC);
        }
        // strconv.Atoi clamps out-of-range values.
        let v: i64 = s.parse().unwrap_or(i64::MAX);
        return match s.len() {
            13 => v.saturating_mul(1_000_000),
            16 => v.saturating_mul(1_000),
            19 => v,
            _ => v.saturating_mul(NANOS_PER_SEC),
        };
    }
    let offset = match s.find('+') {
        Some(i) => &s[i..],
        None => s.find('-').map_or("", |i| &s[i..]),
    };
    now_nanos.saturating_add(parse_offset_seconds(offset).saturating_mul(NANOS_PER_SEC))
}

/// Days since the epoch of a valid `YYYYMMDD` date after 1900 (Go's `time.Parse("20060102")`
/// plus attime's `Year() > 1900` check).
fn yyyymmdd_days(s: &str) -> Option<i64> {
    let y: i64 = s.get(0..4)?.parse().ok()?;
    let m: i64 = s.get(4..6)?.parse().ok()?;
    let d: i64 = s.get(6..8)?.parse().ok()?;
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if y <= 1900 || d < 1 || d > month_days {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// attime's `parseTimeOffset`: `-1h30min` is -5400.
fn parse_offset_seconds(offset: &str) -> i64 {
    let mut b = offset.as_bytes();
    let Some(first) = b.first() else { return 0 };
    let sign = if *first == b'-' { -1 } else { 1 };
    if matches!(first, b'-' | b'+') {
        b = &b[1..];
    }
    let mut total: i64 = 0;
    while !b.is_empty() {
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let num: i64 = std::str::from_utf8(&b[..digits])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        b = &b[digits..];
        let unit_len = b.iter().take_while(|c| !c.is_ascii_digit()).count();
        let unit = std::str::from_utf8(&b[..unit_len]).unwrap_or("");
        b = &b[unit_len..];
        total = total.saturating_add(
            num.saturating_mul(sign)
                .saturating_mul(unit_multiplier(unit)),
        );
    }
    total
}

fn unit_multiplier(unit: &str) -> i64 {
    if unit.starts_with('s') {
        1
    } else if unit.starts_with("mon") || unit.starts_with('M') {
        3600 * 24 * 30
    } else if unit.starts_with("min") || unit.starts_with('m') {
        60
    } else if unit.starts_with('h') {
        3600
    } else if unit.starts_with('d') {
        3600 * 24
    } else if unit.starts_with('w') {
        3600 * 24 * 7
    } else if unit.starts_with('y') {
        3600 * 24 * 365
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(name: &str) -> Result<Vec<(String, String)>, String> {
        parse(name)
            .map(|s| {
                s.labels()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .map_err(|e| e.to_string())
    }

    fn pairs(p: &[(&str, &str)]) -> Result<Vec<(String, String)>, String> {
        Ok(p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    #[test]
    fn names_parse_like_pyroscope() {
        type Want = Result<Vec<(String, String)>, String>;
        let cases: &[(&str, Want)] = &[
            ("app", pairs(&[("__name__", "app")])),
            ("  my-app/x.cpu ", pairs(&[("__name__", "my-app/x.cpu")])),
            (
                "app.cpu{env=prod,region=eu}",
                pairs(&[("__name__", "app.cpu"), ("env", "prod"), ("region", "eu")]),
            ),
            (
                "app{ env = prod , k.v_2=a b }",
                pairs(&[("__name__", "app"), ("env", "prod"), ("k.v_2", "a b")]),
            ),
            ("app{}", pairs(&[("__name__", "app")])),
            // A key without a value is ignored; text after the braces too.
            (
                "test.app{invalid-label-syntax}",
                pairs(&[("__name__", "test.app")]),
            ),
            ("app{a=1}tail=2", pairs(&[("__name__", "app"), ("a", "1")])),
            // Unterminated braces still record complete pairs.
            ("app{a=1,b=2", pairs(&[("__name__", "app"), ("a", "1")])),
            ("app{a=}", pairs(&[("__name__", "app"), ("a", "")])),
            // __name__ inside the braces replaces the app name, unvalidated.
            (
                "app{__name__=other app}",
                pairs(&[("__name__", "other app")]),
            ),
            (
                "app{service_name=svc}",
                pairs(&[("__name__", "app"), ("service_name", "svc")]),
            ),
            ("", Err("service name is required".into())),
            ("  {a=b}", Err("service name is required".into())),
            (
                "my app",
                Err("invalid service name: my app: character is not allowed: ' '".into()),
            ),
            (
                "app{a-b=c}",
                Err("invalid label name: a-b: character is not allowed: '-'".into()),
            ),
            ("app{=c}", Err("label name is required".into())),
            (
                "app{é=c}",
                Err("invalid label name: é: character is not allowed: 'é'".into()),
            ),
        ];
        for (name, want) in cases {
            assert_eq!(&labels(name), want, "{name:?}");
        }
    }

    #[test]
    fn ingestible_labels_skip_private_ones() {
        let set = parse("app{__session_id__=abc,__x=1,env=prod}").expect("parses");
        let got: Vec<_> = set.ingestible().collect();
        assert_eq!(got, [("__session_id__", "abc"), ("env", "prod")]);
        assert_eq!(set.app(), "app");
    }

    #[test]
    fn times_parse_like_attime() {
        let now = 1_700_000_000 * NANOS_PER_SEC;
        let s = NANOS_PER_SEC;
        let cases: &[(&str, i64)] = &[
            ("1700000100", 1_700_000_100 * s),
            ("1_700_000_100", 1_700_000_100 * s),
            ("1700000100123", 1_700_000_100_123_000_000),
            ("1700000100123456", 1_700_000_100_123_456_000),
            ("1700000100123456789", 1_700_000_100_123_456_789),
            ("0", 0),
            ("20240229", 1_709_164_800 * s),
            ("19700101", 0),
            // Not a date (month 13): seconds.
            ("20241301", 20_241_301 * s),
            // Year 1900 is not after 1900: seconds.
            ("19000101", 19_000_101 * s),
            ("now", now),
            ("", now),
            ("now-1h", now - 3600 * s),
            ("now-1h30min", now - 5400 * s),
            ("-10s", now - 10 * s),
            ("now+1d", now + 86_400 * s),
            ("now-2w", now - 14 * 86_400 * s),
            ("now-1mon", now - 30 * 86_400 * s),
            ("now-1M", now - 30 * 86_400 * s),
            ("now-1y", now - 365 * 86_400 * s),
            ("now-5x", now),
            ("now-h", now),
            ("99999999999999999999999", i64::MAX),
        ];
        for (input, want) in cases {
            assert_eq!(parse_time(input, now), *want, "{input:?}");
        }
    }
}
