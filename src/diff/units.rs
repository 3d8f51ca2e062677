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

/// How a window's values are normalised, by what the sample type measures.
///
/// A profile of something that accumulates (CPU time, allocations, contentions) holds what
/// happened during its interval, so a window's merged values divided by its length are a rate.
/// A profile of a state (bytes and objects in use, live goroutines) is a snapshot: adding up a
/// window's snapshots and dividing by seconds gives "747 KiB/s" of heap in use, which means
/// nothing; their average does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Value per second per instance.
    PerSecond,
    /// Average snapshot per instance: the merged values divided by the number of profiles.
    Average,
    /// A snapshot type whose source did not say how many profiles it merged (a remote backend):
    /// the window's sum per instance, labelled as such rather than passed off as an average.
    SumPerInstance,
}

impl Measure {
    /// The measure for sample type `ty` when `profiles` (0 = unknown) were merged.
    pub fn of(ty: &str, profiles: usize) -> Measure {
        if !is_snapshot(ty) {
            Measure::PerSecond
        } else if profiles > 0 {
            Measure::Average
        } else {
            Measure::SumPerInstance
        }
    }

    /// `v` in `unit` as this measure reads: "12.3ms/s", "1.20MiB".
    pub fn format(self, v: f64, unit: &str) -> String {
        match self {
            Measure::PerSecond => format_rate(v, unit),
            Measure::Average | Measure::SumPerInstance if v == 0.0 => "0".to_string(),
            Measure::Average | Measure::SumPerInstance => format_value(v, unit),
        }
    }

    /// What the normalised values are, for headings: "per second per instance".
    pub fn describe(self) -> &'static str {
        match self {
            Measure::PerSecond => "per second per instance",
            Measure::Average => "average per instance",
            Measure::SumPerInstance => {
                "summed over the window per instance (the source does not say how many profiles it merged, so no average)"
            }
        }
    }
}

/// Sample types that are a state at one instant rather than a count over an interval: Go's heap
/// `inuse_*` and the goroutine profile's count (`goroutine`, or `goroutines` as some SDKs name
/// it).
pub fn is_snapshot(ty: &str) -> bool {
    ty.starts_with("inuse_") || matches!(ty, "goroutine" | "goroutines")
}

/// A window's length for people: whole seconds from 10 s up ("30m", "1h2m3s"), a tenth of a
/// second below ("2.5s"), instead of the float seconds it is computed in.
pub fn format_span(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return format!("{seconds}s");
    }
    if seconds < 9.95 {
        let s = format!("{seconds:.1}");
        return format!("{}s", s.strip_suffix(".0").unwrap_or(&s));
    }
    let total = seconds.round() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
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
