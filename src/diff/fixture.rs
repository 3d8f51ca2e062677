//! A hand-built report with statistics, for the pipeline outputs' tests (`fail_on`, `json`,
//! `markdown`) until the statistics are computed by `diff` itself.

use super::{Change, Measure, Report, Row, Statistics, Summary, Tree, Verdict};

pub(super) fn change(before: f64, delta: f64, half: f64, verdict: Verdict) -> Change {
    let pct = |v: f64| (before != 0.0).then(|| v / before * 100.0);
    Change {
        delta,
        interval: (delta - half, delta + half),
        pct: pct(delta),
        pct_interval: pct(delta - half).zip(pct(delta + half)),
        p_value: if verdict == Verdict::Increase || verdict == Verdict::Decrease {
            0.001
        } else {
            0.4
        },
        verdict,
    }
}

fn row(name: &str, flat: (f64, f64), cum: (f64, f64), stats: bool) -> Row {
    let pct = |(b, a): (f64, f64)| (b != 0.0).then(|| (a - b) / b * 100.0);
    let verdict = |(b, a): (f64, f64)| {
        if a - b > 0.05 * b.max(1.0) {
            Verdict::Increase
        } else if b - a > 0.05 * b.max(1.0) {
            Verdict::Decrease
        } else {
            Verdict::NoChange
        }
    };
    let stat =
        |v: (f64, f64)| stats.then(|| change(v.0, v.1 - v.0, 0.02 * v.0.max(1.0), verdict(v)));
    Row {
        function: name.to_string(),
        flat_before: flat.0,
        flat_after: flat.1,
        cum_before: cum.0,
        cum_after: cum.1,
        flat_change_pct: pct(flat),
        cum_change_pct: pct(cum),
        flat_stats: stat(flat),
        cum_stats: stat(cum),
    }
}

fn summary(label: &str, normalised: f64) -> Summary {
    Summary {
        label: label.to_string(),
        seconds: 30.0,
        instances: 2,
        profiles: 20,
        samples: 1234,
        total: normalised * 60.0,
        normalised,
    }
}

/// CPU moved from `main.alpha` to `main.beta` (new) and `main.gamma|pipe` grew by 50 %; the
/// total grew by 20 % (interval +18 % .. +22 %). Statistics only when `stats`.
pub(super) fn report(stats: bool) -> Report {
    let rows = vec![
        row("main.alpha", (50.0, 10.0), (50.0, 10.0), stats),
        row("main.beta", (0.0, 40.0), (0.0, 40.0), stats),
        row("main.gamma|pipe", (30.0, 45.0), (30.0, 45.0), stats),
        row("main.main", (0.0, 0.0), (100.0, 120.0), stats),
        row("runtime.gcBgMarkWorker", (20.0, 20.5), (20.0, 20.5), stats),
    ];
    Report {
        rows,
        unit: "nanoseconds".to_string(),
        measure: Measure::PerSecond,
        sample_type: "cpu".to_string(),
        before: summary("before \"v2\": 12:00..12:30", 100.0),
        after: summary("after \"v2\": 12:30..13:00", 120.0),
        tree: Tree::default(),
        top: 20,
        total_stats: stats.then(|| change(100.0, 20.0, 2.0, Verdict::Increase)),
        statistics: stats.then(|| Statistics {
            method: "welch".to_string(),
            confidence: 0.95,
            before_parts: 20,
            after_parts: 20,
            noise_floor_pct: 1.0,
            min_change_pct: 3.0,
            tested: 5,
        }),
    }
}
