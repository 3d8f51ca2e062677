//! Go's `time` package where users see its output or write its input: `time.ParseDuration` and
//! `Duration.String()` (every duration attribute of the config, and durations in the UI), and
//! RFC 3339 timestamps as Go's `time.Time` formats and parses them (health `updatedTime` in the
//! web API, `ts=` in logfmt logs, marks), without a date-time dependency: these are the only
//! calendar computations we do.

use std::time::{SystemTime, UNIX_EPOCH};

/// `2024-05-06T10:00:00.123456789Z`, the shape Go's `time.Time` marshals to in JSON (trailing
/// zeros of the fraction trimmed, as Go does).
pub fn rfc3339_nanos(t: SystemTime) -> String {
    let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        // Before 1970: only reachable with a broken clock; print the epoch rather than garbage.
        Err(_) => (0, 0),
    };
    let mut out = format_secs(secs);
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// `2024-05-06T10:00:00.123Z`: millisecond precision, the shape Alloy's logfmt logs use.
pub fn rfc3339_millis(t: SystemTime) -> String {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        Err(_) => (0, 0),
    };
    format!("{}.{millis:03}Z", format_secs(secs))
}

fn format_secs(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Parses an RFC 3339 timestamp (`2026-11-22T12:00:00Z`, `...00.5+01:00`); `None` if malformed.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos: u32 = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let text = &frac[..digits.min(9)];
        nanos = text.parse::<u32>().ok()? * 10u32.pow(9 - text.len() as u32);
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let rb = rest.as_bytes();
            if rb.len() != 6 || rb[3] != b':' || !matches!(rb[0], b'+' | b'-') {
                return None;
            }
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            let sign = if rb[0] == b'-' { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
    };
    let secs = days_from_civil(y, mo as u32, d as u32) * 86_400 + h * 3600 + mi * 60 + sec - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + std::time::Duration::new(secs, nanos))
}

/// A proleptic Gregorian date to days since 1970-01-01 (the inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {}", time_quote(.0))]
    Invalid(String),
    #[error("time: missing unit in duration {}", time_quote(.0))]
    MissingUnit(String),
    #[error("time: unknown unit {} in duration {}", time_quote(.unit), time_quote(.input))]
    UnknownUnit { unit: String, input: String },
    #[error("negative duration {0:?} is not allowed")]
    Negative(String),
}

/// The `time` package's own quoting in its errors (not `strconv.Quote`): `"` and `\` escaped,
/// every byte of a character that is not printable ASCII as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut bytes = [0u8; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

/// Go's `time.ParseDuration`, returning nanoseconds (which may be negative).
pub fn parse_go_duration_nanos(input: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(input.to_string());
    let mut s = input;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        // The next character must be [0-9.].
        let b = s.as_bytes()[0];
        if !(b == b'.' || b.is_ascii_digit()) {
            return Err(invalid());
        }
        // Integer part.
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let pre = int_len > 0;
        let mut v: u64 = 0;
        for d in s[..int_len].bytes() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
                .filter(|v| *v <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        s = &s[int_len..];
        // Fraction.
        let mut frac: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut post = false;
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            let frac_len = s.bytes().take_while(u8::is_ascii_digit).count();
            post = frac_len > 0;
            let mut overflow = false;
            for d in s[..frac_len].bytes() {
                if overflow {
                    continue;
                }
                match frac
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(d - b'0')))
                {
                    // Go stops accumulating once more digits cannot matter.
                    Some(f) if f <= 1 << 63 => {
                        frac = f;
                        scale *= 10.0;
                    }
                    _ => overflow = true,
                }
            }
            s = &s[frac_len..];
        }
        if !pre && !post {
            // No digits (e.g. ".s").
            return Err(invalid());
        }
        // Unit.
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map(|(i, _)| i)
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(input.to_string()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let mult: u64 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3600 * 1_000_000_000,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_string(),
                    input: input.to_string(),
                });
            }
        };
        if v > (1u64 << 63) / mult {
            return Err(invalid());
        }
        v *= mult;
        if frac > 0 {
            // Float64 is needed to be nanosecond accurate for fractions of hours, as in Go.
            v += (frac as f64 * (mult as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        total = total
            .checked_add(v)
            .filter(|t| *t <= 1 << 63)
            .ok_or_else(invalid)?;
    }
    if neg {
        return Ok((total as i64).wrapping_neg());
    }
    if total > i64::MAX as u64 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// Go's `time.Duration.String()`: `"1h30m0s"`, `"1.5s"`, `"500ms"`, `"1µs"`, `"0s"`.
pub fn format_go_duration(d: std::time::Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    // Go's Duration is an int64; larger values cannot occur after parsing.
    let u = nanos.min(u128::from(u64::MAX)) as u64;
    if u < 1_000_000_000 {
        // Sub-second: use the smallest unit that keeps a leading non-zero digit.
        let (unit, prec) = if u < 1_000 {
            return format!("{u}ns");
        } else if u < 1_000_000 {
            ("µs", 3)
        } else {
            ("ms", 6)
        };
        return format!("{}{unit}", fmt_frac(u, prec));
    }
    let mut out = String::new();
    let hours = u / 3_600_000_000_000;
    let rem = u % 3_600_000_000_000;
    let minutes = rem / 60_000_000_000;
    let secs_nanos = rem % 60_000_000_000;
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&fmt_frac(secs_nanos, 9));
    out.push('s');
    out
}

/// `v / 10^prec` with trailing fractional zeros (and a bare point) removed.
fn fmt_frac(v: u64, prec: u32) -> String {
    let p = 10u64.pow(prec);
    let int = v / p;
    let frac = v % p;
    if frac == 0 {
        return int.to_string();
    }
    let mut f = format!("{frac:0width$}", width = prec as usize);
    while f.ends_with('0') {
        f.pop();
    }
    format!("{int}.{f}")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats() {
        let cases: &[(u64, u32, &str, &str)] = &[
            (0, 0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"),
            (
                951_782_400,
                500_000_000,
                "2000-02-29T00:00:00.5Z",
                "2000-02-29T00:00:00.500Z",
            ),
            (
                1_714_989_600,
                123_456_789,
                "2024-05-06T10:00:00.123456789Z",
                "2024-05-06T10:00:00.123Z",
            ),
            (
                4_102_444_799,
                1_000,
                "2099-12-31T23:59:59.000001Z",
                "2099-12-31T23:59:59.000Z",
            ),
        ];
        for &(secs, nanos, want_nanos, want_millis) in cases {
            let t = UNIX_EPOCH + Duration::new(secs, nanos);
            assert_eq!(rfc3339_nanos(t), want_nanos, "secs={secs}");
            assert_eq!(rfc3339_millis(t), want_millis, "secs={secs}");
        }
    }

    #[test]
    fn parses_what_it_prints_and_offsets() {
        for secs in [0u64, 951_782_400, 1_714_989_600, 4_102_444_800] {
            let t = UNIX_EPOCH + Duration::new(secs, 123_000_000);
            assert_eq!(parse_rfc3339(&rfc3339_millis(t)), Some(t));
        }
        assert_eq!(
            parse_rfc3339("2024-05-06T12:00:00+02:00"),
            Some(UNIX_EPOCH + Duration::from_secs(1_714_989_600))
        );
        for bad in [
            "2024-05-06",
            "2024-13-06T10:00:00Z",
            "2024-05-06T10:00:00",
            "x024-05-06T10:00:00Z",
            "2024-05-06T10:00:00.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn format_durations() {
        let cases: &[(u64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (500_000_000, "500ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (5_400_000_000_000, "1h30m0s"),
            (3_723_004_005_006, "1h2m3.004005006s"),
            (i64::MAX as u64, "2562047h47m16.854775807s"),
        ];
        for (n, s) in cases {
            assert_eq!(format_go_duration(std::time::Duration::from_nanos(*n)), *s);
            // And it parses back.
            assert_eq!(parse_go_duration_nanos(s), Ok(*n as i64));
        }
    }
}
