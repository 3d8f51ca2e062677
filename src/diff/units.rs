//! Humanised values: "12.3ms" for nanoseconds, "1.20MiB" for bytes, "4.56k" for counts. The
//! page's script (assets/diff.js) formats the same way; keep the two in step.

/// `v` (in `unit`) with three significant digits and a scaled unit, e.g. 12_300_000 nanoseconds
/// is "12.3ms".
pub fn format_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    let (scaled, suffix) = match unit {
        "nanoseconds" | "ns" => time(a * 1e-9),
        "microseconds" | "us" => time(a * 1e-6),
        "milliseconds" | "ms" => time(a * 1e-3),
        "seconds" | "s" => time(a),
        "bytes" | "B" => scale(a, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"]),
        _ => {
            let (x, prefix) = scale(a, 1000.0, &["", "k", "M", "G", "T", "P"]);
            let suffix = match unit {
                "" | "count" | "samples" => prefix.to_string(),
                other => format!("{prefix} {other}"),
            };
            return format!("{sign}{}{suffix}", sig3(x));
        }
    };
    format!("{sign}{}{suffix}", sig3(scaled))
}

/// [`format_value`] per second, e.g. "12.3ms/s" (CPU time per second: 1.23 % of a core); "0"
/// for nothing, which reads better than "0s/s" in a column.
pub fn format_rate(v: f64, unit: &str) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    format!("{}/s", format_value(v, unit))
}

/// A change in percent for tables: "+12.3%", "-100.0%", "new" when there was nothing before,
/// "" when there is nothing in either window.
pub fn format_change(pct: Option<f64>, after: f64) -> String {
    match pct {
        Some(p) => format!("{p:+.1}%"),
        None if after != 0.0 => "new".to_string(),
        None => String::new(),
    }
}

fn time(seconds: f64) -> (f64, &'static str) {
    if seconds == 0.0 {
        (0.0, "s")
    } else if seconds < 1e-6 * 0.9995 {
        (seconds * 1e9, "ns")
    } else if seconds < 1e-3 * 0.9995 {
        (seconds * 1e6, "µs")
    } else if seconds < 0.9995 {
        (seconds * 1e3, "ms")
    } else {
        (seconds, "s")
    }
}

/// Picks the largest unit that keeps the number at least 1 once rounded to three digits (999.6
/// is "1.00k", not "1000").
fn scale(a: f64, step: f64, units: &[&'static str]) -> (f64, &'static str) {
    let mut x = a;
    let mut i = 0;
    while x >= step * 0.9995 && i + 1 < units.len() {
        x /= step;
        i += 1;
    }
    (x, units[i])
}

/// Three significant digits, without exponents: 0.0123, 1.23, 12.3, 123, 1234.
fn sig3(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if x >= 99.95 {
        format!("{x:.0}")
    } else if x >= 9.995 {
        format!("{x:.1}")
    } else {
        // Dividing by 0.9995 picks the decimals of the rounded value: 0.9997 is "1.00".
        let decimals = 2 - (x / 0.9995).log10().floor().min(0.0) as i32;
        format!("{x:.*}", decimals.clamp(2, 12) as usize)
    }
}
