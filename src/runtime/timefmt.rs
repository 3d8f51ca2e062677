//! RFC 3339 timestamps without a date-time dependency: health `updatedTime` in the web API and
//! `ts=` in logfmt logs are the only places we print wall-clock time.

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
}
