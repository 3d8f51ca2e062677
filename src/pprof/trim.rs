//! Fitting a profile into a backend's limits (Pyroscope rejects more than 16,000 samples and
//! truncates stacks deeper than 1,000 frames by default): drop zero samples, cap stack depth,
//! keep only the heaviest samples. Each helper returns a compacted profile (unreferenced
//! locations, functions and strings removed), so the size actually shrinks.
//!
//! Keeping fewer samples of a profile with several sample types ([`choose_samples`]) must not
//! favour one type: a heap profile's `inuse_*` values sit mostly in samples that allocate
//! little, so ranking by `alloc_space` alone kept 98% of it but 3% of `inuse_objects` on a
//! real 37,000-sample delta. The choice instead gives every type its share in turn, until each
//! keeps [`COVERAGE_PERCENT`] of its total (or the room runs out), then fills the rest with
//! the samples that weigh most in any type.

use super::error::Result;
use super::merge::{compact, is_zero};
use super::proto::{Profile, Sample};

/// Which end of a too-deep stack to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Keep the root-most frames (what Pyroscope does with stacks over its depth limit).
    Root,
    /// Keep the leaf-most frames (what Pyroscope's Go PGO export does).
    Leaf,
}

/// Removes samples whose values are all zero (Pyroscope counts them against its sample limit).
pub fn drop_zero_samples(p: &Profile) -> Result<Profile> {
    let mut p = p.clone();
    p.sample.retain(|s| !is_zero(s));
    compact(&p)
}

/// Cuts every stack to at most `max_depth` frames; samples that become equal are merged.
pub fn truncate_stacks(p: &Profile, max_depth: usize, keep: Keep) -> Result<Profile> {
    let mut p = p.clone();
    for s in &mut p.sample {
        let n = s.location_id.len();
        if n > max_depth {
            match keep {
                // location_id is leaf first: the root-most frames are at the end.
                Keep::Root => {
                    s.location_id.drain(..n - max_depth);
                }
                Keep::Leaf => s.location_id.truncate(max_depth),
            }
        }
    }
    compact(&p)
}

/// The sample type a tool should rank by: `default_sample_type` when set and present, else the
/// last type (pprof's convention).
pub fn default_value_index(p: &Profile) -> usize {
    let wanted = usize::try_from(p.default_sample_type)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .filter(|s| !s.is_empty());
    wanted
        .and_then(|w| {
            p.sample_type.iter().position(|t| {
                usize::try_from(t.r#type)
                    .ok()
                    .and_then(|i| p.string_table.get(i))
                    == Some(w)
            })
        })
        .unwrap_or(p.sample_type.len().saturating_sub(1))
}

/// Keeps the `max_samples` samples with the largest absolute value of sample type
/// `value_index` (ties keep the earlier sample), after merging equal samples.
pub fn keep_heaviest(p: &Profile, max_samples: usize, value_index: usize) -> Result<Profile> {
    let mut p = compact(p)?;
    if p.sample.len() <= max_samples {
        return Ok(p);
    }
    let weight =
        |s: &super::proto::Sample| s.value.get(value_index).map_or(0, |v| v.unsigned_abs());
    let mut order: Vec<usize> = (0..p.sample.len()).collect();
    // Stable: equal weights keep their original order, so the result is deterministic.
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&p.sample[i])));
    let mut keep = vec![false; p.sample.len()];
    for &i in order.iter().take(max_samples) {
        keep[i] = true;
    }
    let mut i = 0;
    p.sample.retain(|_| {
        let k = keep[i];
        i += 1;
        k
    });
    compact(&p)
}

/// How much of its total each sample type keeps when the limit allows it, in percent.
pub const COVERAGE_PERCENT: u32 = 95;

/// Which samples of a profile to keep, and how much of each sample type's total they hold
/// (totals are sums of absolute values, so negative values of a diff count as weight).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Per sample of the profile chosen from.
    keep: Vec<bool>,
    /// Samples kept.
    pub kept_samples: usize,
    /// Per sample type: the kept samples' sum.
    pub kept: Vec<u128>,
    /// Per sample type: every sample's sum.
    pub total: Vec<u128>,
}

impl Selection {
    /// The fraction of sample type `t`'s total kept; 1 for a type without weight.
    pub fn share(&self, t: usize) -> f64 {
        match (self.kept.get(t), self.total.get(t)) {
            (Some(&k), Some(&n)) if n > 0 => k as f64 / n as f64,
            _ => 1.0,
        }
    }

    /// Whether sample type `t` keeps at least `percent` of its total (exact, no rounding).
    pub fn covers(&self, t: usize, percent: u32) -> bool {
        match (self.kept.get(t), self.total.get(t)) {
            // Totals are below 2^64 * 2^32 samples, so times 100 fits in u128.
            (Some(&k), Some(&n)) => k * 100 >= n * u128::from(percent),
            _ => true,
        }
    }

    /// Whether sample `i` is kept.
    pub fn keeps(&self, i: usize) -> bool {
        self.keep.get(i).copied().unwrap_or(false)
    }
}

/// The weight of sample `s` in sample type `t` (0 when the sample has no such value).
fn weight(s: &Sample, t: usize) -> u128 {
    s.value.get(t).map_or(0, |v| u128::from(v.unsigned_abs()))
}

/// Chooses at most `max_samples` samples of `p` so that every sample type keeps at least
/// `percent` of its total where that many samples allow it, as ranked (equal samples are
/// ranked apart unless merged first: [`compact`] and [`drop_zero_samples`] merge them).
///
/// First, while some type is below `percent`, the type furthest below it (by kept fraction)
/// takes its heaviest sample not yet kept; a sample taken for one type counts for all. Each
/// type only ever takes from the smallest set of its own heaviest samples that reaches
/// `percent`, so when the union of those sets fits, every type gets there. When it does not,
/// the types are raised together, lowest first, and the ones left below `percent` are for the
/// caller to report ([`Selection::covers`]). Then the room left goes to the samples with the
/// largest share of any one type's total. Ties go to the earlier sample, so the choice is
/// deterministic.
///
/// Cost, for n samples, k kept and T types: O(T·(n + k log k)) — a selection
/// (`select_nth_unstable`) of each type's k heaviest, sorted, and one of the fill.
pub fn choose_samples(p: &Profile, max_samples: usize, percent: u32) -> Selection {
    let samples = &p.sample;
    let n = samples.len();
    let types = p.sample_type.len();
    let mut total = vec![0u128; types];
    for s in samples {
        for (t, sum) in total.iter_mut().enumerate() {
            *sum += weight(s, t);
        }
    }
    if n <= max_samples {
        return Selection {
            keep: vec![true; n],
            kept_samples: n,
            kept: total.clone(),
            total,
        };
    }
    let k = max_samples;
    let mut sel = Selection {
        keep: vec![false; n],
        kept_samples: 0,
        kept: vec![0; types],
        total,
    };
    // Each type's k heaviest non-zero samples, heaviest first: no type takes more than k.
    let by_type: Vec<Vec<usize>> = (0..types)
        .map(|t| {
            let mut order: Vec<usize> = (0..n).filter(|&i| weight(&samples[i], t) > 0).collect();
            let heavier = |a: &usize, b: &usize| {
                weight(&samples[*b], t)
                    .cmp(&weight(&samples[*a], t))
                    .then(a.cmp(b))
            };
            if k == 0 {
                order.clear();
            } else if order.len() > k {
                order.select_nth_unstable_by(k - 1, heavier);
                order.truncate(k);
            }
            order.sort_unstable_by(heavier);
            order
        })
        .collect();
    let mut next = vec![0usize; types];
    let take = |sel: &mut Selection, i: usize| {
        sel.keep[i] = true;
        sel.kept_samples += 1;
        for t in 0..types {
            sel.kept[t] += weight(&samples[i], t);
        }
    };
    while sel.kept_samples < k {
        // The type furthest below `percent` that still has a sample to give.
        let lowest = (0..types)
            .filter(|&t| !sel.covers(t, percent) && next[t] < by_type[t].len())
            .min_by(|&a, &b| sel.share(a).total_cmp(&sel.share(b)).then(a.cmp(&b)));
        let Some(t) = lowest else { break };
        while next[t] < by_type[t].len() && sel.keep[by_type[t][next[t]]] {
            next[t] += 1;
        }
        if let Some(&i) = by_type[t].get(next[t]) {
            take(&mut sel, i);
            next[t] += 1;
        }
    }
    let room = k - sel.kept_samples;
    if room > 0 {
        // A sample's largest share of any type's total: what it would cost that type to lose.
        let score = |i: usize| {
            (0..types)
                .filter(|&t| sel.total[t] > 0)
                .map(|t| weight(&samples[i], t) as f64 / sel.total[t] as f64)
                .fold(0.0, f64::max)
        };
        let mut rest: Vec<(f64, usize)> = (0..n)
            .filter(|&i| !sel.keep[i])
            .map(|i| (score(i), i))
            .collect();
        let better = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if rest.len() > room {
            rest.select_nth_unstable_by(room - 1, better);
            rest.truncate(room);
        }
        for (_, i) in rest {
            take(&mut sel, i);
        }
    }
    sel
}

/// The samples of `p` that `selection` (made on `p`) keeps, compacted.
pub fn keep_selected(p: &Profile, selection: &Selection) -> Result<Profile> {
    let mut p = p.clone();
    let mut i = 0;
    p.sample.retain(|_| {
        let k = selection.keeps(i);
        i += 1;
        k
    });
    compact(&p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::reference::by_stack;
    use crate::pprof::testutil::{B, HEAP};

    /// (function names, values) per stack, sorted by names.
    fn stacks(p: &Profile) -> Vec<(Vec<String>, Vec<i64>)> {
        let mut v: Vec<_> = by_stack(p)
            .into_iter()
            .map(|(k, v)| (k.frames.into_iter().map(|f| f.2[0].0.clone()).collect(), v))
            .collect();
        v.sort();
        v
    }

    fn owned(s: &[&str], v: &[i64]) -> (Vec<String>, Vec<i64>) {
        (s.iter().map(|s| s.to_string()).collect(), v.to_vec())
    }

    #[test]
    fn truncation() {
        let p = B::new(HEAP)
            .sample(&["leaf1", "mid", "root"], &[1, 1, 1, 1])
            .sample(&["leaf2", "mid", "root"], &[2, 2, 2, 2])
            .sample(&["root"], &[4, 4, 4, 4])
            .build();
        type Stacks = Vec<(Vec<String>, Vec<i64>)>;
        let cases: Vec<(Keep, usize, Stacks)> = vec![
            (
                Keep::Root,
                2,
                vec![
                    owned(&["mid", "root"], &[3, 3, 3, 3]),
                    owned(&["root"], &[4, 4, 4, 4]),
                ],
            ),
            (
                Keep::Leaf,
                1,
                vec![
                    owned(&["leaf1"], &[1, 1, 1, 1]),
                    owned(&["leaf2"], &[2, 2, 2, 2]),
                    owned(&["root"], &[4, 4, 4, 4]),
                ],
            ),
            (Keep::Root, 5, stacks(&p)),
        ];
        for (keep, depth, want) in cases {
            let t = truncate_stacks(&p, depth, keep).expect("truncate");
            assert_eq!(stacks(&t), want, "{keep:?} {depth}");
            crate::pprof::validate(&t).expect("valid");
        }
    }

    #[test]
    fn heaviest_and_zero() {
        let p = B::new(HEAP)
            .sample(&["a"], &[0, 0, 0, 1])
            .sample(&["b"], &[0, 0, 0, -9])
            .sample(&["c"], &[0, 0, 0, 5])
            .sample(&["z"], &[0, 0, 0, 0])
            .build();
        let h = keep_heaviest(&p, 2, 3).expect("heaviest");
        assert_eq!(
            stacks(&h),
            vec![owned(&["b"], &[0, 0, 0, -9]), owned(&["c"], &[0, 0, 0, 5])]
        );
        assert_eq!(h.function.len(), 2);
        assert_eq!(drop_zero_samples(&p).expect("drop").sample.len(), 3);
        assert_eq!(default_value_index(&p), 3);
    }

    /// A deterministic xorshift generator for the randomized checks.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// Heavy-tailed: most values small, a few huge, some zero.
        fn skewed(&mut self) -> i64 {
            match self.next() % 8 {
                0 => 0,
                _ => (1i64 << (self.next() % 30)) + (self.next() % 100) as i64,
            }
        }
    }

    /// The smallest set of type `t`'s heaviest samples reaching `percent` of its total,
    /// computed the slow way (a full sort).
    fn minimal_cover(p: &Profile, t: usize, percent: u32) -> Vec<usize> {
        let w = |i: usize| weight(&p.sample[i], t);
        let total: u128 = (0..p.sample.len()).map(w).sum();
        let mut order: Vec<usize> = (0..p.sample.len()).collect();
        order.sort_by(|&a, &b| w(b).cmp(&w(a)).then(a.cmp(&b)));
        let mut sum = 0u128;
        let mut cover = Vec::new();
        for i in order {
            if sum * 100 >= total * u128::from(percent) {
                break;
            }
            sum += w(i);
            cover.push(i);
        }
        cover
    }

    #[test]
    fn choice_covers_every_type_whenever_the_covers_fit_together() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut checked_short = 0;
        for round in 0..200 {
            let types = 1 + (rng.next() % 4) as usize;
            let n = 20 + (rng.next() % 300) as usize;
            let mut p = Profile {
                sample_type: vec![Default::default(); types],
                ..Default::default()
            };
            for _ in 0..n {
                let value = (0..types).map(|_| rng.skewed()).collect();
                p.sample.push(Sample {
                    value,
                    ..Default::default()
                });
            }
            let mut union: Vec<usize> = (0..types)
                .flat_map(|t| minimal_cover(&p, t, COVERAGE_PERCENT))
                .collect();
            union.sort_unstable();
            union.dedup();
            for k in [0, 1, union.len().saturating_sub(1), union.len(), n / 2, n] {
                let sel = choose_samples(&p, k, COVERAGE_PERCENT);
                let ctx = format!("round {round}: {types} types, {n} samples, k {k}");
                assert_eq!(sel.kept_samples, k.min(n), "{ctx}");
                assert_eq!((0..n).filter(|&i| sel.keeps(i)).count(), k.min(n), "{ctx}");
                for t in 0..types {
                    let kept: u128 = (0..n)
                        .filter(|&i| sel.keeps(i))
                        .map(|i| weight(&p.sample[i], t))
                        .sum();
                    let total: u128 = p.sample.iter().map(|s| weight(s, t)).sum();
                    assert_eq!(
                        (sel.kept[t], sel.total[t]),
                        (kept, total),
                        "{ctx}: type {t}"
                    );
                    if union.len() <= k {
                        assert!(sel.covers(t, COVERAGE_PERCENT), "{ctx}: type {t} short");
                    } else if !sel.covers(t, COVERAGE_PERCENT) {
                        checked_short += 1;
                    }
                }
                assert_eq!(sel, choose_samples(&p, k, COVERAGE_PERCENT), "{ctx}");
            }
        }
        // The cases where the limit is too small were exercised too.
        assert!(checked_short > 100, "{checked_short}");
    }

    #[test]
    fn choice_spares_what_ranking_by_one_type_loses() {
        // inuse_* sit in samples that allocate little, as in a real heap profile.
        let mut b = B::new(HEAP);
        for i in 0..60 {
            let name = format!("f{i}");
            let (alloc, inuse) = match i {
                0..5 => (100_000 + i, 0),
                5..30 => (10, 0),
                30..35 => (1, 50_000 + i),
                _ => (1, 5),
            };
            b = b.sample(&[name.as_str()], &[alloc, alloc * 32, inuse, inuse * 32]);
        }
        let p = b.build();
        let by_default = keep_heaviest(&p, 20, default_value_index(&p)).expect("heaviest");
        let sel = choose_samples(&p, 20, COVERAGE_PERCENT);
        let chosen = keep_selected(&p, &sel).expect("keep");
        let alloc = |p: &Profile| p.sample.iter().map(|s| s.value[0]).sum::<i64>();
        // Ranking by inuse_space keeps none of the allocating samples.
        assert!(alloc(&by_default) * 100 < alloc(&p));
        assert!((0..4).all(|t| sel.covers(t, COVERAGE_PERCENT)), "{sel:?}");
        assert!(alloc(&chosen) * 100 >= alloc(&p) * 95);
        assert_eq!(chosen.sample.len(), 20);
        crate::pprof::validate(&chosen).expect("valid");
    }
}
