//! Fitting profiles into the backend's per-profile limits before sending (pyroscope-protocol.md
//! §9): Pyroscope answers 400 to a profile over `max_profile_size_bytes` (4 MiB decompressed)
//! or `max_profile_stacktrace_samples` (16,000), and 429 *forever* to one whose decompressed
//! size plus label bytes exceeds the rate limiter's burst (`ingestion_burst_size_mb`, 2 MiB).
//! Such a profile is trimmed with the pprof core's helpers (zero samples removed, then the
//! heaviest samples kept) instead of being rejected on every attempt.
//!
//! Cost: most profiles are settled without decompressing them. A gzip member records its
//! decompressed size in its trailer, and a sample takes at least 2 bytes, so a profile whose
//! recorded size is within the byte budget and below twice the sample limit cannot exceed
//! either limit.

use bytes::Bytes;
use prost::Message as _;

use crate::pprof;
use crate::pprof::trim::{default_value_index, drop_zero_samples, keep_heaviest};

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

/// Largest input decompressed for trimming.
const MAX_DECOMPRESS: usize = 256 << 20;

/// What to send.
#[derive(Debug, PartialEq)]
pub enum Fit {
    /// Within the limits (or not a profile we can read: the server decides).
    Unchanged,
    /// Trimmed to fit: a new gzipped profile.
    Trimmed {
        raw: Bytes,
        samples_before: usize,
        samples_after: usize,
    },
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

    fn trim(&self, plain: &[u8], samples: usize, budget: usize, max_samples: usize) -> Fit {
        let fail = |what: &str, e: &dyn std::fmt::Display| Fit::TooLarge(format!("{what}: {e}"));
        let profile = match pprof::proto::Profile::decode(plain) {
            Ok(p) => p,
            Err(e) => return fail("undecodable profile over the limits", &e),
        };
        // Zero samples count against the server's limit but carry nothing.
        let profile = match drop_zero_samples(&profile) {
            Ok(p) => p,
            Err(e) => return fail("cannot trim", &e),
        };
        let value_index = default_value_index(&profile);
        let heaviest = |p: &pprof::proto::Profile, n: usize| keep_heaviest(p, n, value_index);
        let mut current = if profile.sample.len() > max_samples {
            match heaviest(&profile, max_samples) {
                Ok(p) => p,
                Err(e) => return fail("cannot trim", &e),
            }
        } else {
            profile
        };
        let mut encoded = current.encode_to_vec();
        if encoded.len() > budget {
            // What a profile without samples costs (sample types, mappings, leftover strings):
            // if even that is over budget, no trimming helps.
            let base = match heaviest(&current, 0) {
                Ok(p) => p.encode_to_vec().len(),
                Err(e) => return fail("cannot trim", &e),
            };
            if base >= budget {
                return Fit::TooLarge(format!(
                    "{base} bytes decompressed without any sample; the limit is {budget}"
                ));
            }
            loop {
                let n = current.sample.len();
                if n == 0 {
                    return Fit::TooLarge(format!(
                        "over {budget} bytes decompressed with no samples left"
                    ));
                }
                // Aim below the budget assuming samples cost the same on average, then
                // shrink by a tenth at a time.
                let per_sample = (encoded.len() - base) as f64 / n as f64;
                let target = ((budget - base) as f64 / per_sample * 0.95) as usize;
                let keep = target.min(n - n.div_ceil(10));
                current = match heaviest(&current, keep) {
                    Ok(p) => p,
                    Err(e) => return fail("cannot trim", &e),
                };
                encoded = current.encode_to_vec();
                if encoded.len() <= budget {
                    break;
                }
            }
        }
        Fit::Trimmed {
            raw: Bytes::from(pprof::gzip(&encoded, pprof::DEFAULT_LEVEL)),
            samples_before: samples,
            samples_after: current.sample.len(),
        }
    }
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
    use crate::pprof::testutil::B;

    /// A CPU-like profile with `n` distinct stacks; sample i has value i+1 (sample 0 is zero
    /// when `zero_first`).
    fn profile(n: usize, zero_first: bool) -> Profile {
        // Location ids count down from `base * 7 + 1000`: room for every stack.
        let b = B::new(&[("samples", "count")]).ids_from(n as u64 / 7 + 1);
        (0..n)
            .fold(b, |b, i| {
                let v = if zero_first && i == 0 {
                    0
                } else {
                    i as i64 + 1
                };
                b.sample(&[format!("function_number_{i}").as_str()], &[v])
            })
            .build()
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
            Limits {
                max_samples: 1,
                ..Limits::default()
            }
            .fit(b"not a profile at all", 0),
            Fit::Unchanged
        );
    }

    #[test]
    fn trims_to_the_sample_limit_keeping_the_heaviest() {
        let raw = pprof::gzip(&profile(100, true).encode_to_vec(), 1);
        let limits = Limits {
            max_samples: 10,
            ..Limits::default()
        };
        let Fit::Trimmed {
            raw: out,
            samples_before,
            samples_after,
        } = limits.fit(&raw, 0)
        else {
            panic!("not trimmed");
        };
        assert_eq!((samples_before, samples_after), (100, 10));
        let p = pprof::decode(&out, &pprof::Limits::default()).expect("decode");
        let mut values: Vec<i64> = p.sample.iter().map(|s| s.value[0]).collect();
        values.sort_unstable();
        assert_eq!(values, (91..=100).collect::<Vec<i64>>());
    }

    #[test]
    fn trims_to_the_burst_budget() {
        let plain = profile(2000, false).encode_to_vec();
        let limits = Limits {
            max_burst_bytes: plain.len() / 4 + 500,
            ..Limits::default()
        };
        let raw = pprof::gzip(&plain, 1);
        let Fit::Trimmed { raw: out, .. } = limits.fit(&raw, 500) else {
            panic!("not trimmed");
        };
        let back = pprof::gunzip(&out, &pprof::Limits::default()).expect("gunzip");
        assert!(
            back.len() <= plain.len() / 4,
            "{} > {}",
            back.len(),
            plain.len() / 4
        );
        // A budget nothing fits in.
        let limits = Limits {
            max_burst_bytes: 10,
            ..Limits::default()
        };
        assert!(matches!(limits.fit(&raw, 0), Fit::TooLarge(_)));
    }
}
