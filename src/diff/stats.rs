//! The statistics of a diff: for every function above the noise floor, and for the total,
//! Welch's t-test between the parts of the before window and those of the after window, with
//! Bonferroni-corrected confidence intervals (docs/DIFF-STATISTICS.md explains the choices).
//!
//! Welch rather than a bootstrap: with the 10–30 parts a window has, a bootstrap's percentile
//! interval is too narrow (it cannot see beyond the spread of so few values) and its result
//! depends on a random seed; Welch's test does not assume equal variances in the two windows
//! (an upgrade can change the noise as well as the mean) and its t quantiles widen the interval
//! for few parts. Bonferroni rather than Holm: the verdict is then exactly "the interval
//! excludes 0", so the interval a pipeline thresholds on (`pct_interval`) and the verdict never
//! disagree; Holm would detect slightly more when many functions change at once.

use super::model::PartValues;
use super::stats_t::{critical, two_sided_p};
use super::units::Measure;
use std::collections::HashMap;

use super::{Change, Node, Report, Statistics, StatsOptions, Verdict};

/// The method's name in [`Statistics::method`].
pub(super) const METHOD: &str = "welch-bonferroni";

/// Fills the report's statistics from the windows' parts; leaves them None when there are
/// too few parts to estimate a spread, or when the values are not averages of the parts
/// (sums of snapshots: the parts' mean would not estimate the window's value).
pub(super) fn fill(r: &mut Report, before: &[PartValues], after: &[PartValues], o: &StatsOptions) {
    if before.len() < 2 || after.len() < 2 || r.measure == Measure::SumPerInstance {
        return;
    }
    let valid = o.confidence > 0.0
        && o.confidence < 1.0
        && o.noise_floor_pct >= 0.0
        && o.min_change_pct >= 0.0;
    if !valid {
        return;
    }
    let alpha = 1.0 - o.confidence;
    let floor = o.noise_floor_pct / 100.0;
    let (total_before, total_after) = (r.before.normalised, r.after.normalised);
    let share = |v: f64, total: f64| if total > 0.0 { v / total } else { 0.0 };
    let above = |b: f64, a: f64| share(b, total_before).max(share(a, total_after)) >= floor;
    let tests: Vec<(bool, bool)> = r
        .rows
        .iter()
        .map(|row| {
            (
                above(row.flat_before, row.flat_after),
                above(row.cum_before, row.cum_after),
            )
        })
        .collect();
    let column = |parts: &[PartValues], function: &str, cum: bool| -> Vec<f64> {
        parts
            .iter()
            .map(|p| {
                p.functions
                    .get(function)
                    .map_or(0.0, |&(flat, c)| if cum { c } else { flat })
            })
            .collect()
    };
    // A function that calls nothing measured (a leaf: its self value is its total in every
    // part of both windows) asks one question, not two: counting it twice would widen every
    // interval for nothing.
    let same_question = |function: &str| {
        [before, after].iter().all(|parts| {
            parts.iter().all(|p| {
                p.functions
                    .get(function)
                    .is_none_or(|&(flat, cum)| flat == cum)
            })
        })
    };
    let family = r
        .rows
        .iter()
        .zip(&tests)
        .map(|(row, &(f, c))| match (f, c) {
            (true, true) if same_question(&row.function) => 1,
            _ => usize::from(f) + usize::from(c),
        })
        .sum::<usize>()
        .max(1);
    // A function's change smaller than the noise floor's share of the total is no change to
    // act on, however significant: measured on a loaded machine, GC and scheduler functions
    // of ~1 % of the total truly moved by +120 % (+4 ms/s of 550) between adjacent windows
    // of one program; nobody should gate a rollout on that.
    let min_delta = floor * total_before;
    for (row, &(flat_tested, cum_tested)) in r.rows.iter_mut().zip(&tests) {
        let f = row.function.as_str();
        row.flat_stats = Some(
            change(
                &column(before, f, false),
                &column(after, f, false),
                alpha,
                family,
                flat_tested,
            )
            .relevant(o.min_change_pct, min_delta),
        );
        row.cum_stats = Some(
            change(
                &column(before, f, true),
                &column(after, f, true),
                alpha,
                family,
                cum_tested,
            )
            .relevant(o.min_change_pct, min_delta),
        );
    }
    let totals = |parts: &[PartValues]| parts.iter().map(|p| p.total).collect::<Vec<f64>>();
    // The total is one question of its own (a pipeline's "did CPU per instance grow"), so it is
    // not part of the functions' family.
    r.total_stats = Some(
        change(&totals(before), &totals(after), alpha, 1, true).relevant(o.min_change_pct, 0.0),
    );
    r.statistics = Some(Statistics {
        method: METHOD.to_string(),
        confidence: o.confidence,
        before_parts: before.len(),
        after_parts: after.len(),
        noise_floor_pct: o.noise_floor_pct,
        min_change_pct: o.min_change_pct,
        tested: tests.iter().filter(|&&(f, c)| f || c).count(),
    });
}

/// What the flame graphs need of the verdicts: which frames to colour at full strength.
pub(super) struct Significance<'r> {
    /// Function → its verdict's description; None when the report has no statistics (then
    /// every frame keeps its full colour, as before statistics existed).
    verdicts: Option<HashMap<&'r str, (bool, String)>>,
    total: Option<(bool, String)>,
}

/// Frames whose function did not change significantly keep their hue (the direction is still
/// worth seeing) at this share of the intensity, so the significant ones stand out.
pub(super) const FADED: f64 = 0.3;

fn significant(c: &Change) -> bool {
    matches!(c.verdict, Verdict::Increase | Verdict::Decrease)
}

impl<'r> Significance<'r> {
    pub(super) fn of(r: &'r Report) -> Significance<'r> {
        if r.statistics.is_none() {
            return Significance {
                verdicts: None,
                total: None,
            };
        }
        let verdicts = r
            .rows
            .iter()
            .map(|row| {
                let sig = row.cum_stats.as_ref().is_some_and(significant)
                    || row.flat_stats.as_ref().is_some_and(significant);
                (
                    row.function.as_str(),
                    (sig, super::table::verdict_cell(row)),
                )
            })
            .collect();
        Significance {
            verdicts: Some(verdicts),
            total: r
                .total_stats
                .as_ref()
                .map(|c| (significant(c), super::table::describe(c))),
        }
    }

    fn lookup(&self, n: &Node) -> Option<&(bool, String)> {
        if n.depth == 0 {
            self.total.as_ref()
        } else {
            self.verdicts.as_ref()?.get(n.name.as_str())
        }
    }

    /// The frame's colour intensity: [`Node::change`], faded unless its function's change
    /// is significant.
    pub(super) fn intensity(&self, n: &Node) -> f64 {
        let c = n.change();
        if self.verdicts.is_none() {
            return c;
        }
        match self.lookup(n) {
            Some((true, _)) => c,
            _ => c * FADED,
        }
    }

    /// The verdict on the frame's function for tooltips ("" without statistics).
    pub(super) fn text(&self, n: &Node) -> &str {
        self.lookup(n).map_or("", |(_, t)| t.as_str())
    }
}

impl Change {
    /// The verdict with the minimum relevant change applied: a significant change whose
    /// estimate is below `min_pct` percent of before, or whose interval reaches closer to 0
    /// than `min_delta` in the report's unit, is `NoChange`. The interval still shows it; a
    /// change from 0 (a new function) has no percentage, so only `min_delta` applies to it.
    ///
    /// Why the interval for `min_delta` and the estimate for `min_pct`: the minimum change is
    /// about drift, tight intervals around a small real change (a quiet machine's -3 % in a
    /// minute), and judging it by the bound would cost the power to find +10 % (bounds down to
    /// +2.4 % were measured). The noise floor is about small functions: the Go scheduler's
    /// `runtime.mcall` (2 % of the total) moved +55 % [+5 %, +103 %] between adjacent windows
    /// of an unchanged program on an idle machine, an estimate just over 1 % of the total
    /// but an interval that cannot tell it from nothing worth acting on.
    fn relevant(mut self, min_pct: f64, min_delta: f64) -> Change {
        let significant = matches!(self.verdict, Verdict::Increase | Verdict::Decrease);
        // Both bounds have the change's sign when it is significant: the one nearer 0 is the
        // least the change can be.
        let least = self.interval.0.abs().min(self.interval.1.abs());
        let small = self.pct.is_some_and(|p| p.abs() < min_pct) || least < min_delta;
        if significant && small {
            self.verdict = Verdict::NoChange;
        }
        self
    }
}

/// Mean and unbiased variance.
fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// Welch's test of after − before, at level `alpha` shared by a family of `family` tests.
fn change(before: &[f64], after: &[f64], alpha: f64, family: usize, tested: bool) -> Change {
    let (mb, vb) = moments(before);
    let (ma, va) = moments(after);
    let (nb, na) = (before.len() as f64, after.len() as f64);
    let delta = ma - mb;
    let (sb, sa) = (vb / nb, va / na);
    let se = (sb + sa).sqrt();
    let level = alpha / family as f64;
    let (p, half) = if se > 0.0 && se.is_finite() {
        // Welch–Satterthwaite degrees of freedom.
        let df = (sb + sa).powi(2) / (sb * sb / (nb - 1.0) + sa * sa / (na - 1.0));
        (two_sided_p(delta / se, df), critical(level, df) * se)
    } else {
        // No spread at all (identical parts): any difference is exact.
        (if delta == 0.0 { 1.0 } else { 0.0 }, 0.0)
    };
    let interval = (delta - half, delta + half);
    let base = mb.abs();
    let pct = (base > 0.0).then(|| delta / base * 100.0);
    let pct_interval = (base > 0.0).then(|| (interval.0 / base * 100.0, interval.1 / base * 100.0));
    let verdict = if !tested {
        Verdict::BelowNoiseFloor
    } else if interval.0 > 0.0 {
        Verdict::Increase
    } else if interval.1 < 0.0 {
        Verdict::Decrease
    } else {
        Verdict::NoChange
    };
    Change {
        delta,
        interval,
        pct,
        pct_interval,
        p_value: (p * family as f64).min(1.0),
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tight_change_below_the_minimum_is_no_change() {
        // -1.2 % with a tight interval (the drift a quiet machine shows between windows),
        // +10 % likewise, and a new function (no percentage).
        let drift = || change(&[100.0, 100.1, 99.9], &[98.8, 98.9, 98.7], 0.05, 1, true);
        let grew = || change(&[100.0, 100.1, 99.9], &[110.0, 110.1, 109.9], 0.05, 1, true);
        let new = || change(&[0.0, 0.0, 0.0], &[5.0, 5.1, 4.9], 0.05, 1, true);
        let wide = || {
            change(
                &[11.0, 9.0, 13.0, 10.0, 12.0, 11.0],
                &[17.0, 12.0, 22.0, 14.0, 20.0, 17.0],
                0.05,
                1,
                true,
            )
        };
        let cases = [
            // (change, minimum %, minimum delta, verdict)
            (drift(), 0.0, 0.0, Verdict::Decrease),
            (drift(), 2.0, 0.0, Verdict::NoChange),
            (grew(), 2.0, 0.0, Verdict::Increase),
            (grew(), 10.5, 0.0, Verdict::NoChange),
            (new(), 2.0, 0.0, Verdict::Increase),
            (new(), 100.0, 0.0, Verdict::Increase),
            // The minimum delta (the noise floor's share of the total) applies to every
            // change, new functions included, and to the least the interval allows
            // (grew: +10 [+9.77, +10.23]; new: +5 [+4.75, +5.25]).
            (grew(), 2.0, 9.7, Verdict::Increase),
            (grew(), 2.0, 9.9, Verdict::NoChange),
            (new(), 2.0, 4.7, Verdict::Increase),
            (new(), 2.0, 4.9, Verdict::NoChange),
            (drift(), 0.0, 1.3, Verdict::NoChange),
            // runtime.mcall between adjacent windows of an unchanged program: an estimate over
            // the floor (+6 of 560, floor 5.6) whose interval reaches +0.6.
            (wide(), 5.0, 5.6, Verdict::NoChange),
            (wide(), 5.0, 0.5, Verdict::Increase),
        ];
        for (i, (c, min, min_delta, verdict)) in cases.into_iter().enumerate() {
            let interval = c.interval;
            let got = c.relevant(min, min_delta);
            assert_eq!(got.verdict, verdict, "case {i}");
            assert_eq!(got.interval, interval, "case {i}: the interval is kept");
        }
    }

    #[test]
    fn welch_matches_a_hand_computed_example() {
        // Means 3 and 5, variances 2.5 each over 5 values: se = 1, t = 2, df = 8;
        // P(|T8| > 2) = 0.0805, t(0.975, 8) = 2.306 (t tables).
        let cases = [
            // (before, after, family, tested, verdict, p, interval half-width)
            (
                vec![1.0, 2.0, 3.0, 4.0, 5.0],
                vec![3.0, 4.0, 5.0, 6.0, 7.0],
                1,
                true,
                Verdict::NoChange,
                0.080_5,
                2.306,
            ),
            (
                vec![1.0, 2.0, 3.0, 4.0, 5.0],
                vec![3.0, 4.0, 5.0, 6.0, 7.0],
                1,
                false,
                Verdict::BelowNoiseFloor,
                0.080_5,
                2.306,
            ),
            // Family of 2: p doubled, interval at 97.5 % (t(0.9875, 8) = 2.752).
            (
                vec![1.0, 2.0, 3.0, 4.0, 5.0],
                vec![3.0, 4.0, 5.0, 6.0, 7.0],
                2,
                true,
                Verdict::NoChange,
                0.161,
                2.752,
            ),
            (
                vec![10.0, 10.0, 10.0],
                vec![12.0, 12.0],
                3,
                true,
                Verdict::Increase,
                0.0,
                0.0,
            ),
            (
                vec![10.0, 11.0, 9.0, 10.0],
                vec![5.0, 6.0, 4.0, 5.0],
                1,
                true,
                Verdict::Decrease,
                0.000_2,
                1.413,
            ),
        ];
        for (before, after, family, tested, verdict, p, half) in cases {
            let c = change(&before, &after, 0.05, family, tested);
            assert_eq!(c.verdict, verdict, "{before:?} {after:?}: {c:?}");
            assert!((c.p_value - p).abs() < 0.001, "{c:?}, want p {p}");
            let got = (c.interval.1 - c.interval.0) / 2.0;
            assert!((got - half).abs() < 0.002, "{c:?}, want ±{half}");
            let base = before.iter().sum::<f64>() / before.len() as f64;
            assert_eq!(c.pct, Some(c.delta / base * 100.0));
        }
    }

    /// A xorshift generator and Box–Muller normals: reproducible noise for the rates below.
    struct Noise(u64);
    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// The correction holds the family-wise error: 30 functions with 10 % noise and no change
    /// give a significant one in at most ~5 % of 400 simulated diffs; a +10 % change in one of
    /// them with 3 % noise over 20 parts is found nearly always.
    #[test]
    fn family_wise_error_and_power_on_simulated_parts() {
        let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
        let (runs, functions, parts) = (400, 30, 20);
        let mut false_runs = 0;
        let mut found = 0;
        for _ in 0..runs {
            let family = functions;
            let mut any = false;
            for f in 0..functions {
                let level = 100.0 + f as f64;
                let mut draw = |sd: f64, scale: f64| -> Vec<f64> {
                    (0..parts)
                        .map(|_| level * scale * (1.0 + sd * noise.normal()))
                        .collect()
                };
                let (b, a) = (draw(0.10, 1.0), draw(0.10, 1.0));
                any |= change(&b, &a, 0.05, family, true).verdict != Verdict::NoChange;
                if f == 0 {
                    let (b, a) = (draw(0.03, 1.0), draw(0.03, 1.1));
                    found += usize::from(
                        change(&b, &a, 0.05, family, true).verdict == Verdict::Increase,
                    );
                }
            }
            false_runs += usize::from(any);
        }
        let fwer = false_runs as f64 / runs as f64;
        let power = found as f64 / runs as f64;
        assert!(fwer <= 0.07, "family-wise error {fwer}");
        assert!(power >= 0.95, "power {power}");
    }
}
