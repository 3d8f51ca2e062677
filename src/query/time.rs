//! Times on the command line: `now`, `now-1h`, `now-2d`, RFC 3339 (`2026-11-22T12:00:00Z`),
//! Unix seconds or milliseconds; ranges as `FROM..TO`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::gocompat::time::parse_rfc3339;

/// Parses one time relative to `now`.
pub fn parse_time(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    let s = s.trim();
    if let Some(rel) = s.strip_prefix("now") {
        if rel.is_empty() {
            return Ok(now);
        }
        // Split after the first character, not the first byte: `nowé` must be an error, not
        // a panic on a char boundary.
        let mut chars = rel.chars();
        let sign = chars.next().map(String::from).unwrap_or_default();
        let dur = chars.as_str();
        let d = parse_span(dur).map_err(|e| format!("invalid time {s:?}: {e}"))?;
        return match sign.as_str() {
            "-" => now
                .checked_sub(d)
                .ok_or_else(|| format!("invalid time {s:?}: before 1970")),
            "+" => now
                .checked_add(d)
                .ok_or_else(|| format!("invalid time {s:?}: too far in the future")),
            _ => Err(format!(
                "invalid time {s:?}: expected now-DURATION or now+DURATION"
            )),
        };
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let n: u64 = s.parse().map_err(|_| format!("invalid time {s:?}"))?;
        // Pyroscope's convention: 10 digits or fewer are seconds, more are milliseconds.
        return Ok(if s.len() > 10 {
            UNIX_EPOCH + Duration::from_millis(n)
        } else {
            UNIX_EPOCH + Duration::from_secs(n)
        });
    }
    parse_rfc3339(s).ok_or_else(|| {
        format!("invalid time {s:?}: expected now, now-1h, RFC 3339 (2026-11-22T12:00:00Z) or Unix seconds")
    })
}

/// A duration: Go syntax (`1h30m`, `90s`) plus `d` (days) and `w` (weeks) as a leading part.
pub fn parse_span(s: &str) -> Result<Duration, String> {
    let mut total = Duration::ZERO;
    let mut rest = s;
    for (suffix, secs) in [("w", 7 * 86_400u64), ("d", 86_400)] {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(suffix) {
            let n: u64 = rest[..digits]
                .parse()
                .map_err(|_| format!("bad duration {s:?}"))?;
            // Saturates like the multiplication: an absurd span is refused by its user
            // (as too long), not a panic here.
            total = total.saturating_add(Duration::from_secs(n.saturating_mul(secs)));
            rest = &rest[digits + 1..];
        }
    }
    if !rest.is_empty() {
        total = total.saturating_add(
            crate::syntax::types::parse_duration(rest)
                .map_err(|e| e.to_string())?
                .get(),
        );
    } else if total.is_zero() {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(total)
}

/// Parses `FROM..TO`; `to` must be after `from`.
pub fn parse_range(s: &str, now: SystemTime) -> Result<(SystemTime, SystemTime), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("invalid range {s:?}: expected FROM..TO, e.g. now-2h..now-1h"))?;
    let (from, to) = (parse_time(a, now)?, parse_time(b, now)?);
    if to <= from {
        return Err(format!(
            "invalid range {s:?}: the end is not after the start"
        ));
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_absolute_and_unix_times() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let cases = [
            ("now", 1_800_000_000),
            ("now-1h", 1_800_000_000 - 3600),
            ("now-1h30m", 1_800_000_000 - 5400),
            ("now-2d", 1_800_000_000 - 2 * 86_400),
            ("now-1w1d", 1_800_000_000 - 8 * 86_400),
            ("now+5m", 1_800_000_300),
            ("2026-11-22T12:00:00Z", 1_795_348_800),
            ("1795348800", 1_795_348_800),
            ("1795348800000", 1_795_348_800),
        ];
        for (s, want) in cases {
            let t = parse_time(s, now).expect(s);
            assert_eq!(t, UNIX_EPOCH + Duration::from_secs(want), "{s}");
        }
        for bad in [
            "",
            "now-",
            "now*1h",
            "yesterday",
            "now-1x",
            "2026-11-22",
            "nowé",
            "nowé1h",
            "now+99999999999999w",
            "now+18446744073709551615w18446744073709551615d1h",
        ] {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn huge_spans_saturate() {
        for s in [
            "18446744073709551615w18446744073709551615d",
            "18446744073709551615w1h",
        ] {
            assert_eq!(parse_span(s), Ok(Duration::MAX), "{s}");
        }
    }

    #[test]
    fn ranges() {
        let now = UNIX_EPOCH + Duration::from_secs(10_000);
        let (a, b) = parse_range("now-2h..now-1h", now).expect("range");
        assert_eq!(
            b.duration_since(a).expect("ordered"),
            Duration::from_secs(3600)
        );
        assert!(parse_range("now..now-1h", now).is_err());
        assert!(parse_range("now-1h", now).is_err());
    }
}
