//! Fitting profiles into the backend's per-profile limits before sending (pyroscope-protocol.md
//! §9): Pyroscope answers 400 to a profile over `max_profile_size_bytes` (4 MiB decompressed)
//! or `max_profile_stacktrace_samples` (16,000), and 429 *forever* to one whose decompressed
//! size plus label bytes exceeds the rate limiter's burst (`ingestion_burst_size_mb`, 2 MiB).
//! Such a profile is trimmed with the pprof core's helpers instead of being rejected on every
//! attempt: zero samples removed, then samples chosen so that every sample type keeps 95% of
//! its total where the limit allows it (`pprof::trim::choose_samples`). A trimmed profile says
//! so in a pprof comment ([`TrimReport::comment`]), which `go tool pprof` prints with the
//! profile and Pyroscope keeps with it.
//!
//! Cost: most profiles are settled without decompressing them. A gzip member records its
//! decompressed size in its trailer, and a sample takes at least 2 bytes, so a profile whose
//! recorded size is within the byte budget and below twice the sample limit cannot exceed
//! either limit.

use bytes::Bytes;
use prost::Message as _;

use crate::pprof;
use crate::pprof::proto::Profile;
use crate::pprof::trim::{
    COVERAGE_PERCENT, Selection, choose_samples, drop_zero_samples, keep_selected,
};

/// The limits to fit; 0 disables a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest decompressed profile (`max_profile_size_bytes`).
    pub max_profile_bytes: usize,
    /// Most samples per profile (`max_profile_stacktrace_samples`).
    pub max_samples: usize,
    /// Rate-limiter burst: decompressed profile plus label bytes (`ingestion_burst_size_mb`).
    pub max_burst_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_profile_bytes: 4 << 20,
            max_samples: 16_000,
            max_burst_bytes: 2 << 20,
        }
    }
}

/// Which limit a profile was trimmed to: the one that decided how many samples it kept. The
/// discriminant is the position in [`TrimReason::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrimReason {
    /// Over `max_profile_samples`.
    Samples = 0,
    /// Over `max_profile_size_bytes` (decompressed).
    ProfileBytes = 1,
    /// Over `max_burst_bytes` less the label bytes.
    BurstBytes = 2,
}

impl TrimReason {
    pub const ALL: [TrimReason; 3] = [
        TrimReason::Samples,
        TrimReason::ProfileBytes,
        TrimReason::BurstBytes,
    ];

    /// The limit's attribute name in the `limits` block.
    pub fn as_str(self) -> &'static str {
        match self {
            TrimReason::Samples => "max_profile_samples",
            TrimReason::ProfileBytes => "max_profile_size_bytes",
            TrimReason::BurstBytes => "max_burst_bytes",
        }
    }
}

/// How much of one sample type's total a trimmed profile kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeKept {
    /// The sample type's name (`alloc_space`).
    pub name: String,
    /// Sum of the kept samples' absolute values.
    pub kept: u128,
    /// Sum over every sample before trimming.
    pub total: u128,
}

impl TypeKept {
    /// Tenths of a percent kept, rounded down (exact: 95.0% is never shown for less).
    pub fn permille(&self) -> u128 {
        // kept <= total < 2^96, so times 1000 fits.
        (self.kept * 1000).checked_div(self.total).unwrap_or(1000)
    }

    /// Whether it kept at least `percent` of its total.
    pub fn covers(&self, percent: u32) -> bool {
        self.kept * 100 >= self.total * u128::from(percent)
    }
}

/// What trimming did to one profile.
#[derive(Clone, Debug, PartialEq)]
pub struct TrimReport {
    pub reason: TrimReason,
    /// The value of that limit.
    pub limit: usize,
    /// Samples on the wire before (zero and duplicate samples included).
    pub samples_before: usize,
    pub samples_after: usize,
    /// Per sample type, in the profile's order.
    pub kept: Vec<TypeKept>,
}

impl TrimReport {
    /// The sample types that kept less than 95% of their total: the limit left no room.
    pub fn short(&self) -> Vec<&str> {
        self.kept
            .iter()
            .filter(|t| !t.covers(COVERAGE_PERCENT))
            .map(|t| t.name.as_str())
            .collect()
    }

    /// `alloc_objects 99.1%, alloc_space 98.0%, ...`, rounded down to a tenth of a percent.
    pub fn kept_text(&self) -> String {
        let parts: Vec<String> = self
            .kept
            .iter()
            .map(|t| {
                let pm = t.permille();
                format!("{} {}.{}%", t.name, pm / 10, pm % 10)
            })
            .collect();
        parts.join(", ")
    }

    /// The pprof comment a trimmed profile carries, e.g. `scraper: trimmed 37012 samples to
    /// 16000 (max_profile_samples = 16000); kept of each type's total: alloc_objects 99.1%,
    /// ...`, and `; under 95%: inuse_objects` when the limit left a type short.
    pub fn comment(&self) -> String {
        let mut c = format!(
            "scraper: trimmed {} samples to {} ({} = {}); kept of each type's total: {}",
            self.samples_before,
            self.samples_after,
            self.reason.as_str(),
            self.limit,
            self.kept_text(),
        );
        let short = self.short();
        if !short.is_empty() {
            c.push_str(&format!(
                "; under {COVERAGE_PERCENT}%: {}",
                short.join(", ")
            ));
        }
        c
    }
}

/// Largest input decompressed for trimming.
const MAX_DECOMPRESS: usize = 256 << 20;

/// What to send.
#[derive(Debug, PartialEq)]
pub enum Fit {
    /// Within the limits (or not a profile we can read: the server decides).
    Unchanged,
    /// Trimmed to fit: a new gzipped profile, and what was done to it.
    Trimmed { raw: Bytes, report: TrimReport },
    /// Cannot be made to fit.
    TooLarge(String),
}

impl Limits {
    /// The byte budget for a profile sent with `label_bytes` of labels.
    fn byte_budget(&self, label_bytes: usize) -> usize {
        let mut budget = usize::MAX;
        if self.max_profile_bytes > 0 {
            budget = budget.min(self.max_profile_bytes);
        }
        if self.max_burst_bytes > 0 {
            budget = budget.min(self.max_burst_bytes.saturating_sub(label_bytes));
        }
        budget
    }

    fn sample_limit(&self) -> usize {
        if self.max_samples == 0 {
            usize::MAX
        } else {
            self.max_samples
        }
    }

    /// Whether `raw` certainly fits, judging by its (declared) size alone: cheap, no
    /// decompression. When false, [`Limits::fit`] decides.
    pub fn fits_without_inspection(&self, raw: &[u8], label_bytes: usize) -> bool {
        let budget = self.byte_budget(label_bytes);
        let max_samples = self.sample_limit();
        if budget == usize::MAX && max_samples == usize::MAX {
            return true;
        }
        let size = if pprof::codec::is_gzip(raw) {
            if raw.len() < 18 {
                return false;
            }
            pprof::codec::declared_size(raw)
        } else {
            raw.len()
        };
        size <= budget && size / 2 <= max_samples
    }

    /// Checks `raw` (gzip or plain pprof) and trims it if needed. May decompress and decode
    /// the whole profile: call it off async threads.
    pub fn fit(&self, raw: &[u8], label_bytes: usize) -> Fit {
        if self.fits_without_inspection(raw, label_bytes) {
            return Fit::Unchanged;
        }
        let budget = self.byte_budget(label_bytes);
        let max_samples = self.sample_limit();
        let limits = pprof::Limits {
            max_decompressed_bytes: MAX_DECOMPRESS,
        };
        let Ok(plain) = pprof::gunzip(raw, &limits) else {
            return Fit::Unchanged;
        };
        let Some(samples) = count_samples(&plain) else {
            return Fit::Unchanged;
        };
        if plain.len() <= budget && samples <= max_samples {
            return Fit::Unchanged;
        }
        self.trim(&plain, samples, budget, max_samples)
    }

    /// The limit a byte budget of `budget` comes from.
    fn bytes_reason(&self, budget: usize) -> (TrimReason, usize) {
        if self.max_profile_bytes > 0 && budget == self.max_profile_bytes {
            (TrimReason::ProfileBytes, self.max_profile_bytes)
        } else {
            (TrimReason::BurstBytes, self.max_burst_bytes)
        }
    }

    fn trim(&self, plain: &[u8], samples: usize, budget: usize, max_samples: usize) -> Fit {
        let fail = |what: &str, e: &dyn std::fmt::Display| Fit::TooLarge(format!("{what}: {e}"));
        let profile = match Profile::decode(plain) {
            Ok(p) => p,
            Err(e) => return fail("undecodable profile over the limits", &e),
        };
        // Zero samples count against the server's limit but carry nothing; equal samples are
        // merged, so each stack is ranked by its whole weight.
        let profile = match drop_zero_samples(&profile) {
            Ok(p) => p,
            Err(e) => return fail("cannot trim", &e),
        };
        let mut reason = if samples > max_samples {
            (TrimReason::Samples, self.max_samples)
        } else {
            self.bytes_reason(budget)
        };
        // Every round chooses from the whole profile, so the shares reported are of the
        // totals before trimming.
        let keep = |n: usize, reason: (TrimReason, usize)| {
            let selection = choose_samples(&profile, n, COVERAGE_PERCENT);
            let mut kept = keep_selected(&profile, &selection)?;
            let report = report(&profile, &selection, reason, samples, kept.sample.len());
            mark(&mut kept, &report.comment());
            Ok::<_, pprof::PprofError>((kept.encode_to_vec(), report))
        };
        let (mut encoded, mut report) = match keep(max_samples, reason) {
            Ok(r) => r,
            Err(e) => return fail("cannot trim", &e),
        };
        if encoded.len() > budget {
            reason = self.bytes_reason(budget);
            // What a profile without samples costs (sample types, mappings, leftover strings,
            // the comment): if even that is over budget, no trimming helps.
            let base = match keep(0, reason) {
                Ok((e, _)) => e.len(),
                Err(e) => return fail("cannot trim", &e),
            };
            if base >= budget {
                return Fit::TooLarge(format!(
                    "{base} bytes decompressed without any sample; the limit is {budget}"
                ));
            }
            loop {
                let n = report.samples_after;
                if n == 0 {
                    return Fit::TooLarge(format!(
                        "over {budget} bytes decompressed with no samples left"
                    ));
                }
                // Aim below the budget assuming samples cost the same on average, then
                // shrink by a tenth at a time.
                let per_sample = encoded.len().saturating_sub(base) as f64 / n as f64;
                let target = ((budget - base) as f64 / per_sample * 0.95) as usize;
                (encoded, report) = match keep(target.min(n - n.div_ceil(10)), reason) {
                    Ok(r) => r,
                    Err(e) => return fail("cannot trim", &e),
                };
                if encoded.len() <= budget {
                    break;
                }
            }
        }
        Fit::Trimmed {
            raw: Bytes::from(pprof::gzip(&encoded, pprof::DEFAULT_LEVEL)),
            report,
        }
    }
}

/// The report of keeping `selection` of `profile`.
fn report(
    profile: &Profile,
    selection: &Selection,
    (reason, limit): (TrimReason, usize),
    samples_before: usize,
    samples_after: usize,
) -> TrimReport {
    let name = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| profile.string_table.get(i))
            .cloned()
            .unwrap_or_default()
    };
    let kept = profile
        .sample_type
        .iter()
        .enumerate()
        .map(|(t, vt)| TypeKept {
            name: name(vt.r#type),
            kept: selection.kept.get(t).copied().unwrap_or(0),
            total: selection.total.get(t).copied().unwrap_or(0),
        })
        .collect();
    TrimReport {
        reason,
        limit,
        samples_before,
        samples_after,
        kept,
    }
}

/// Adds `text` to `p`'s comments (a pprof comment is a string table index).
fn mark(p: &mut Profile, text: &str) {
    p.comment.push(p.string_table.len() as i64);
    p.string_table.push(text.to_string());
}

/// Top-level `Profile.sample` fields (number 2), by walking the wire format; `None` when it is
/// not well-formed protobuf.
pub(crate) fn count_samples(mut buf: &[u8]) -> Option<usize> {
    fn varint(buf: &mut &[u8]) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = buf.split_first()?;
            *buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }
    let mut n = 0;
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let skip = match key & 7 {
            0 => {
                varint(&mut buf)?;
                0
            }
            1 => 8,
            2 => usize::try_from(varint(&mut buf)?).ok()?,
            5 => 4,
            _ => return None,
        };
        if skip > buf.len() {
            return None;
        }
        buf = &buf[skip..];
        if key == (2 << 3) | 2 {
            n += 1;
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::Profile;
    use crate::pprof::testutil::{B, HEAP};

    /// A profile of `types` with one distinct stack per row of `values`.
    fn rows(types: &[(&str, &str)], values: &[Vec<i64>]) -> Profile {
        // Location ids count down from `base * 7 + 1000`: room for every stack.
        let b = B::new(types).ids_from(values.len() as u64 / 7 + 1);
        values
            .iter()
            .enumerate()
            .fold(b, |b, (i, v)| {
                b.sample(&[format!("function_number_{i}").as_str()], v)
            })
            .build()
    }

    /// A CPU-like profile with `n` distinct stacks; sample i has value i+1 (sample 0 is zero
    /// when `zero_first`).
    fn profile(n: usize, zero_first: bool) -> Profile {
        let values: Vec<Vec<i64>> = (0..n)
            .map(|i| {
                vec![if zero_first && i == 0 {
                    0
                } else {
                    i as i64 + 1
                }]
            })
            .collect();
        rows(&[("samples", "count")], &values)
    }

    fn samples_limit(n: usize) -> Limits {
        Limits {
            max_samples: n,
            ..Limits::default()
        }
    }

    /// The trimmed profile and its report; panics unless `limits` trim `p`.
    fn trimmed(p: &Profile, limits: Limits) -> (Profile, TrimReport) {
        let raw = pprof::gzip(&p.encode_to_vec(), 1);
        match limits.fit(&raw, 0) {
            Fit::Trimmed { raw, report } => {
                let out = pprof::decode(&raw, &pprof::Limits::default()).expect("decode");
                (out, report)
            }
            other => panic!("not trimmed: {other:?}"),
        }
    }

    /// Per sample type, the sum of absolute values (decoded, independently of the report).
    fn totals(p: &Profile) -> Vec<u128> {
        (0..p.sample_type.len())
            .map(|t| {
                p.sample
                    .iter()
                    .map(|s| u128::from(s.value[t].unsigned_abs()))
                    .sum()
            })
            .collect()
    }

    fn comments(p: &Profile) -> Vec<&str> {
        p.comment
            .iter()
            .map(|&i| p.string_table[i as usize].as_str())
            .collect()
    }

    #[test]
    fn counts_samples_on_the_wire() {
        let p = profile(37, false);
        assert_eq!(count_samples(&p.encode_to_vec()), Some(37));
        assert_eq!(count_samples(&[0x12, 0x05, 0x00]), None);
    }

    #[test]
    fn small_profiles_pass_without_decompression() {
        let raw = pprof::gzip(&profile(10, false).encode_to_vec(), 1);
        assert_eq!(Limits::default().fit(&raw, 100), Fit::Unchanged);
        // Garbage is the server's business.
        assert_eq!(
            samples_limit(1).fit(b"not a profile at all", 0),
            Fit::Unchanged
        );
    }

    #[test]
    fn profiles_within_the_limits_are_left_alone_and_unmarked() {
        // Past the cheap check (declared size over twice the limit), still within it.
        let p = rows(HEAP, &vec![vec![1, 2, 3, 4]; 50]);
        let raw = pprof::gzip(&p.encode_to_vec(), 1);
        for limits in [samples_limit(50), samples_limit(0), samples_limit(1000)] {
            assert_eq!(limits.fit(&raw, 0), Fit::Unchanged, "{limits:?}");
        }
    }

    #[test]
    fn trims_to_the_sample_limit_keeping_the_heaviest() {
        let (p, report) = trimmed(&profile(100, true), samples_limit(10));
        assert_eq!((report.samples_before, report.samples_after), (100, 10));
        let mut values: Vec<i64> = p.sample.iter().map(|s| s.value[0]).collect();
        values.sort_unstable();
        assert_eq!(values, (91..=100).collect::<Vec<i64>>());
    }

    /// One case of trimming to a sample limit: what each type must keep.
    struct Case {
        name: &'static str,
        types: &'static [(&'static str, &'static str)],
        values: Vec<Vec<i64>>,
        limit: usize,
        /// Per type, the kept fraction in tenths of a percent (rounded down).
        permille: Vec<u128>,
        /// The types reported under 95%.
        short: Vec<&'static str>,
    }

    #[test]
    fn every_sample_type_keeps_its_share_where_the_limit_allows() {
        let heap_row = |alloc: i64, inuse: i64| vec![alloc, alloc * 64, inuse, inuse * 64];
        let cases = vec![
            Case {
                name: "single type, 95% within reach",
                types: &[("samples", "count")],
                // 5 heavy samples hold 98.1%; the rest of the room goes to the next heaviest.
                values: (0..100)
                    .map(|i| vec![if i < 5 { 1000 } else { 1 }])
                    .collect(),
                limit: 10,
                permille: vec![982],
                short: vec![],
            },
            Case {
                name: "single type, limit too small: the heaviest, reported short",
                types: &[("samples", "count")],
                values: (1..=100).map(|v| vec![v]).collect(),
                limit: 10,
                // 91..=100 of 1..=100: 955 of 5050.
                permille: vec![189],
                short: vec!["samples"],
            },
            Case {
                name: "zero-valued types need no room",
                types: HEAP,
                values: (0..100)
                    .map(|i| vec![if i < 8 { 1000 } else { 1 }, 0, 0, 0])
                    .collect(),
                limit: 10,
                // 8 × 1000 + 2 of 8092.
                permille: vec![988, 1000, 1000, 1000],
                short: vec![],
            },
            Case {
                name: "weight in different samples per type",
                types: HEAP,
                // Five samples allocate a lot and retain nothing; five retain a lot and
                // allocate once; 90 allocate and retain a little. Ranking by inuse_space
                // alone would keep 0.1% of alloc_*.
                values: (0..100)
                    .map(|i| match i {
                        0..5 => heap_row(100_000, 0),
                        5..10 => heap_row(1, 10_000),
                        _ => heap_row(10, 1),
                    })
                    .collect(),
                limit: 10,
                // alloc: 500,005 of 500,905; inuse: 50,000 of 50,090.
                permille: vec![998, 998, 998, 998],
                short: vec![],
            },
            Case {
                name: "limit too small for any type: raised together",
                types: HEAP,
                // alloc_* spread evenly over the first 50 samples, inuse_* over the others.
                values: (0..100)
                    .map(|i| {
                        if i < 50 {
                            heap_row(3, 0)
                        } else {
                            heap_row(0, 7)
                        }
                    })
                    .collect(),
                limit: 20,
                permille: vec![200, 200, 200, 200],
                short: vec![
                    "alloc_objects",
                    "alloc_space",
                    "inuse_objects",
                    "inuse_space",
                ],
            },
        ];
        for c in cases {
            let p = rows(c.types, &c.values);
            let (out, report) = trimmed(&p, samples_limit(c.limit));
            let name = c.name;
            assert_eq!(out.sample.len(), c.limit, "{name}");
            assert_eq!(report.samples_after, c.limit, "{name}");
            assert_eq!(report.reason, TrimReason::Samples, "{name}");
            let permille: Vec<u128> = report.kept.iter().map(TypeKept::permille).collect();
            assert_eq!(permille, c.permille, "{name}: {report:?}");
            assert_eq!(report.short(), c.short, "{name}");
            // The report agrees with the output, decoded.
            let (before, after) = (totals(&p), totals(&out));
            for (t, kept) in report.kept.iter().enumerate() {
                assert_eq!(
                    (kept.kept, kept.total),
                    (after[t], before[t]),
                    "{name}: {t}"
                );
            }
            assert_eq!(comments(&out), [report.comment().as_str()], "{name}");
        }
    }

    #[test]
    fn the_comment_says_what_was_kept() {
        // alloc_* and inuse_objects rank the samples in opposite orders; taking turns, the
        // heaviest two of each hold 40 + 39 + 2 + 1 of 820.
        let p = rows(
            HEAP,
            &(1..=40).map(|v| vec![v, v, 41 - v, 0]).collect::<Vec<_>>(),
        );
        let (_, report) = trimmed(&p, samples_limit(4));
        assert_eq!(
            report.comment(),
            "scraper: trimmed 40 samples to 4 (max_profile_samples = 4); kept of each type's \
             total: alloc_objects 10.0%, alloc_space 10.0%, inuse_objects 10.0%, inuse_space 100.0%; \
             under 95%: alloc_objects, alloc_space, inuse_objects"
        );
    }

    #[test]
    fn trims_to_the_burst_budget() {
        let plain = profile(2000, false).encode_to_vec();
        let limits = Limits {
            max_burst_bytes: plain.len() / 4 + 500,
            ..Limits::default()
        };
        let raw = pprof::gzip(&plain, 1);
        let Fit::Trimmed { raw: out, report } = limits.fit(&raw, 500) else {
            panic!("not trimmed");
        };
        assert_eq!(
            (report.reason, report.limit),
            (TrimReason::BurstBytes, limits.max_burst_bytes)
        );
        let back = pprof::gunzip(&out, &pprof::Limits::default()).expect("gunzip");
        assert!(
            back.len() <= plain.len() / 4,
            "{} > {}",
            back.len(),
            plain.len() / 4
        );
        let p = pprof::decode(&out, &pprof::Limits::default()).expect("decode");
        assert_eq!(comments(&p), [report.comment().as_str()]);
        assert_eq!(report.samples_after, p.sample.len());
        // A budget nothing fits in.
        let limits = Limits {
            max_burst_bytes: 10,
            ..Limits::default()
        };
        assert!(matches!(limits.fit(&raw, 0), Fit::TooLarge(_)));
    }

    #[test]
    fn trims_to_the_profile_size() {
        let plain = profile(2000, false).encode_to_vec();
        let limits = Limits {
            max_profile_bytes: plain.len() / 2,
            ..Limits::default()
        };
        let Fit::Trimmed { report, .. } = limits.fit(&pprof::gzip(&plain, 1), 0) else {
            panic!("not trimmed");
        };
        assert_eq!(
            (report.reason, report.limit),
            (TrimReason::ProfileBytes, plain.len() / 2)
        );
    }
}
