//! Fitting a profile into a backend's limits (Pyroscope rejects more than 16,000 samples and
//! truncates stacks deeper than 1,000 frames by default): drop zero samples, cap stack depth,
//! keep only the heaviest samples. Each helper returns a compacted profile (unreferenced
//! locations, functions and strings removed), so the size actually shrinks.

use super::error::Result;
use super::merge::{compact, is_zero};
use super::proto::Profile;

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
}
