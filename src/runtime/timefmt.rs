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
}
