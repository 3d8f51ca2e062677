//! Client-side deltas of cumulative profiles (Go heap `alloc_*`, mutex and block), the way a
//! Pyroscope v2 backend needs them: it no longer subtracts anything itself.
//!
//! # What is kept per series
//!
//! A [`SeriesState`] is not a profile: it is the sorted list of 64-bit hashes of every stack
//! (with its labels) that has a non-zero cumulative value, plus those values (only the
//! cumulative types, not the gauges), plus a few hashes describing the profile (sample types,
//! period, main binary's build id, time). The list is stored as one byte string of varints
//! (hash gaps, zigzag values), 12-16 bytes per stack for a Go heap profile, a fifth to a tenth
//! of the raw profile; [`SeriesState::bytes`] reports it.
//!
//! # Stack identity
//!
//! Location ids are renumbered by every scrape, so a stack is identified by what its ids
//! resolve to: per frame the function name and file, line and column of every (inlined) line,
//! the address relative to its mapping's start, and the folded flag; then the sample's labels,
//! in any order. This is what google/pprof's `Merge` (and so `pprof -base`) identifies, so a
//! delta here equals `pprof -base` per stack, with negatives clamped to zero.
//!
//! # One round
//!
//! The new profile is decoded with the zero-copy reader (`view.rs`); each sample is hashed and
//! its values copied into one flat vector; the (hash, sample) pairs are sorted, which groups
//! duplicate stacks (Go heap profiles repeat some) and allows a merge join with the previous,
//! equally sorted, state. The output is written by splicing the new profile's own bytes: every
//! table is copied as it was, except samples (re-written with their delta values, zero ones
//! dropped), unreferenced locations and functions (dropped) and unreferenced strings (emptied,
//! which keeps every string index valid). Nothing is re-encoded through a message tree.
//!
//! # Resets
//!
//! The first profile of a series is only a baseline. The baseline is also replaced, and nothing
//! sent, when the process evidently restarted or changed: the main binary's build id changed,
//! time went backwards, the sample types or period changed, or some stack's counters went
//! down. "Went down" means no cumulative value of that stack grew and at least one shrank:
//! after a restart everything starts again from zero, whereas a rule that fired on any single
//! value would also fire on producers that estimate counts from sizes (an `alloc_objects`
//! estimate can shrink while `alloc_space` grows) and drop good deltas. Single values that go
//! down are clamped to zero instead; no negative value is ever sent.

use std::collections::HashMap;
use std::hash::Hash;

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use super::codec::{DELTA_LEVEL, Deflater, Inflater, Limits};
use super::error::{PprofError, Result};
use super::view::{NONE, SampleBuf, Tables};
use super::wire::{LEN, RECURSION_LIMIT, Reader, put_key, put_varint, varint_len};

/// Which sample types are cumulative counters (delta'd); all others are gauges and pass through
/// from the new profile unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Cumulative {
    /// Alloy's `pyroscope.scrape` list: `alloc_objects`, `alloc_space` (memory),
    /// `contentions`, `delay` (mutex, block).
    #[default]
    Alloy,
    /// Every sample type, like `go tool pprof -base`.
    All,
    /// Exactly these sample type names.
    Types(Vec<String>),
}

impl Cumulative {
    const ALLOY: [&'static str; 4] = ["alloc_objects", "alloc_space", "contentions", "delay"];

    fn contains(&self, sample_type: &str) -> bool {
        match self {
            Cumulative::Alloy => Self::ALLOY.contains(&sample_type),
            Cumulative::All => true,
            Cumulative::Types(types) => types.iter().any(|t| t == sample_type),
        }
    }
}

/// Options of a [`DeltaEngine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaOptions {
    pub cumulative: Cumulative,
    pub limits: Limits,
    /// gzip level of the delta profiles (0..=9); default [`DELTA_LEVEL`].
    pub level: u32,
}

impl Default for DeltaOptions {
    fn default() -> Self {
        DeltaOptions {
            cumulative: Cumulative::Alloy,
            limits: Limits::default(),
            level: DELTA_LEVEL,
        }
    }
}

/// Why a series' baseline was replaced instead of producing a delta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetReason {
    /// This many stacks had no cumulative value grow and at least one shrink: a restart.
    CountersDecreased { stacks: usize },
    /// `time_nanos` is earlier than the baseline's.
    TimeWentBackwards,
    /// The main mapping's build id differs: another binary.
    BuildIdChanged,
    /// Different sample types (or period type): another kind of profile.
    SampleTypesChanged,
    /// Different sampling period (e.g. a changed `MemProfileRate`): values are not comparable.
    PeriodChanged,
}

impl std::fmt::Display for ResetReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResetReason::CountersDecreased { stacks } => {
                write!(f, "counters decreased on {stacks} stacks")
            }
            ResetReason::TimeWentBackwards => write!(f, "time_nanos went backwards"),
            ResetReason::BuildIdChanged => write!(f, "main binary build id changed"),
            ResetReason::SampleTypesChanged => write!(f, "sample types changed"),
            ResetReason::PeriodChanged => write!(f, "sampling period changed"),
        }
    }
}

/// Counts describing one delta computation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeltaStats {
    /// Samples in the new profile.
    pub samples_in: usize,
    /// Distinct stacks (samples with equal stacks and labels are one).
    pub stacks: usize,
    /// Stacks also present in the baseline.
    pub matched: usize,
    /// Stacks whose counters went down (see [`ResetReason::CountersDecreased`]).
    pub decreased: usize,
    /// Individual cumulative values that went down and were clamped to zero.
    pub clamped_values: usize,
    /// Samples in the delta profile.
    pub samples_out: usize,
    /// Size of the delta profile before gzip.
    pub raw_bytes_out: usize,
    /// Size of the state kept for the series afterwards.
    pub state_bytes: usize,
}

/// What to do with a scraped profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaOutcome {
    /// The first profile of the series became its baseline; nothing to send.
    Baseline { state_bytes: usize },
    /// The baseline was replaced; nothing to send.
    Reset(ResetReason),
    /// The gzipped delta profile to send. It may have no samples (nothing happened).
    Delta { profile: Vec<u8>, stats: DeltaStats },
    /// No sample type is cumulative (CPU, goroutine): send the profile as scraped.
    NotCumulative,
}

/// Everything kept about a series between scrapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesState {
    meta: Meta,
    /// Number of stacks in `packed`.
    stacks: usize,
    /// Per stack, in increasing hash order: the difference from the previous stack's hash
    /// (varint), then its cumulative values (zigzag varints). The merge join reads it front to
    /// back, so nothing needs random access; typically 12-16 bytes per stack instead of 24.
    packed: Box<[u8]>,
}

impl SeriesState {
    /// Heap and inline bytes used by this state.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.packed.len()
            + self.meta.types.len() * 8
            + self.meta.cumulative.len() * 4
    }

    /// Number of stacks remembered.
    pub fn stacks(&self) -> usize {
        self.stacks
    }
}

/// Reads a [`SeriesState`]'s entries in order.
struct Cursor<'a> {
    packed: &'a [u8],
    pos: usize,
    left: usize,
    /// The current entry, valid while `ready`.
    hash: u64,
    values: &'a mut Vec<i64>,
    ready: bool,
}

impl<'a> Cursor<'a> {
    fn new(state: Option<&'a SeriesState>, k: usize, values: &'a mut Vec<i64>) -> Self {
        values.clear();
        values.resize(k, 0);
        let mut c = Cursor {
            packed: state.map_or(&[][..], |s| &s.packed[..]),
            pos: 0,
            left: state.map_or(0, |s| s.stacks),
            hash: 0,
            values,
            ready: false,
        };
        c.advance();
        c
    }

    /// Moves to the next entry (`ready` becomes false at the end).
    fn advance(&mut self) {
        self.ready = false;
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let mut r = Reader::new(self.packed.get(self.pos..).unwrap_or_default(), 0);
        let Ok(gap) = r.varint() else {
            return;
        };
        for v in self.values.iter_mut() {
            let Ok(z) = r.varint() else {
                return;
            };
            *v = unzigzag(z);
        }
        self.pos += r.pos();
        self.hash = self.hash.wrapping_add(gap);
        self.ready = true;
    }

    /// The values stored for `h`, if the state has it. Calls must come in increasing `h`.
    fn find(&mut self, h: u64) -> Option<&[i64]> {
        while self.ready && self.hash < h {
            self.advance();
        }
        (self.ready && self.hash == h).then_some(&self.values[..])
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Hashes that identify what kind of profile a series holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    /// Hash of (type, unit) per sample type.
    types: Box<[u64]>,
    /// Indexes of the cumulative sample types.
    cumulative: Box<[u32]>,
    period_type: u64,
    period: i64,
    time_nanos: i64,
    /// Hash of the main (first) mapping's build id; 0 when it has none.
    build_id: u64,
}

impl Meta {
    /// Differences that make the baseline unusable.
    fn incompatibility(&self, new: &Meta) -> Option<ResetReason> {
        if self.types != new.types
            || self.cumulative != new.cumulative
            || self.period_type != new.period_type
        {
            return Some(ResetReason::SampleTypesChanged);
        }
        if self.period != new.period {
            return Some(ResetReason::PeriodChanged);
        }
        if self.build_id != 0 && new.build_id != 0 && self.build_id != new.build_id {
            return Some(ResetReason::BuildIdChanged);
        }
        if self.time_nanos > 0 && new.time_nanos > 0 && new.time_nanos < self.time_nanos {
            return Some(ResetReason::TimeWentBackwards);
        }
        None
    }
}

/// Result of [`DeltaEngine::apply`]: what to send and what to keep.
#[derive(Debug)]
pub struct Applied {
    pub outcome: DeltaOutcome,
    /// The series' next state; `None` when the profile is not cumulative.
    pub state: Option<SeriesState>,
}

/// Result of [`DeltaEngine::diff`].
#[derive(Debug)]
pub struct Diff {
    /// The gzipped delta profile.
    pub profile: Vec<u8>,
    pub stats: DeltaStats,
    /// Signs of a restart that a scraper would have answered with a reset; `diff` computes
    /// the clamped delta anyway.
    pub warnings: Vec<ResetReason>,
    /// Whether any sample type was treated as cumulative.
    pub cumulative: bool,
}

/// Computes deltas. Holds only reusable scratch buffers, no per-series data: one engine serves
/// any number of series (see [`DeltaStore`]).
#[derive(Debug)]
pub struct DeltaEngine {
    options: DeltaOptions,
    inflater: Inflater,
    deflater: Deflater,
    raw: Vec<u8>,
    tables: Tables,
    sample: SampleBuf,
    str_hash: Vec<u64>,
    fn_hash: Vec<u64>,
    loc_hash: Vec<u64>,
    hash_bytes: Vec<u8>,
    label_hashes: Vec<u64>,
    /// (stack hash, sample index), sorted.
    keys: Vec<(u64, u32)>,
    /// Sample values, `sample_types` per sample; becomes the output values in place.
    values: Vec<i64>,
    /// Per sample: write it to the output.
    emit: Vec<bool>,
    /// Values of the old state's current entry during the join.
    old_row: Vec<i64>,
    /// The next state, before it is copied into its exactly sized box.
    packed: Vec<u8>,
    /// `values` rows in hash order, during `fold`.
    sorted: Vec<i64>,
    keep_loc: Vec<bool>,
    keep_fn: Vec<bool>,
    keep_str: Vec<bool>,
    out_raw: Vec<u8>,
    sample_bytes: Vec<u8>,
}

impl Default for DeltaEngine {
    fn default() -> Self {
        Self::new(DeltaOptions::default())
    }
}

impl DeltaEngine {
    pub fn new(options: DeltaOptions) -> Self {
        DeltaEngine {
            deflater: Deflater::new(options.level),
            options,
            inflater: Inflater::default(),
            raw: Vec::new(),
            tables: Tables::default(),
            sample: SampleBuf::default(),
            str_hash: Vec::new(),
            fn_hash: Vec::new(),
            loc_hash: Vec::new(),
            hash_bytes: Vec::new(),
            label_hashes: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
            emit: Vec::new(),
            old_row: Vec::new(),
            packed: Vec::new(),
            sorted: Vec::new(),
            keep_loc: Vec::new(),
            keep_fn: Vec::new(),
            keep_str: Vec::new(),
            out_raw: Vec::new(),
            sample_bytes: Vec::new(),
        }
    }

    pub fn options(&self) -> &DeltaOptions {
        &self.options
    }

    /// Heap bytes the engine keeps allocated for the next profile (its scratch buffers, sized
    /// by the largest profile it has processed), so that a pool of engines can be accounted.
    pub fn retained_bytes(&self) -> usize {
        use crate::pprof::view::capacity_bytes as c;
        self.tables.retained_bytes()
            + c(&self.raw)
            + c(&self.sample.locations)
            + c(&self.sample.values)
            + c(&self.sample.labels)
            + c(&self.str_hash)
            + c(&self.fn_hash)
            + c(&self.loc_hash)
            + c(&self.hash_bytes)
            + c(&self.label_hashes)
            + c(&self.keys)
            + c(&self.values)
            + c(&self.emit)
            + c(&self.old_row)
            + c(&self.packed)
            + c(&self.sorted)
            + c(&self.keep_loc)
            + c(&self.keep_fn)
            + c(&self.keep_str)
            + c(&self.out_raw)
            + c(&self.sample_bytes)
    }

    /// One scrape of a series: `state` is what the previous call returned for it (`None` for
    /// the first scrape). On error the caller keeps its previous state.
    pub fn apply(&mut self, state: Option<&SeriesState>, profile: &[u8]) -> Result<Applied> {
        let mut raw = std::mem::take(&mut self.raw);
        let result = self.apply_in(state, profile, &mut raw);
        self.raw = raw;
        result
    }

    fn apply_in(
        &mut self,
        state: Option<&SeriesState>,
        profile: &[u8],
        raw: &mut Vec<u8>,
    ) -> Result<Applied> {
        let data = self.inflater.raw(profile, &self.options.limits, raw)?;
        let meta = self.analyze(data)?;
        if meta.cumulative.is_empty() {
            return Ok(Applied {
                outcome: DeltaOutcome::NotCumulative,
                state: None,
            });
        }
        let Some(old) = state else {
            let (next, _) = self.fold(&meta, None);
            return Ok(Applied {
                outcome: DeltaOutcome::Baseline {
                    state_bytes: next.bytes(),
                },
                state: Some(next),
            });
        };
        if let Some(reason) = old.meta.incompatibility(&meta) {
            let (next, _) = self.fold(&meta, None);
            return Ok(Applied {
                outcome: DeltaOutcome::Reset(reason),
                state: Some(next),
            });
        }
        let (next, mut stats) = self.fold(&meta, Some(old));
        if stats.decreased > 0 {
            return Ok(Applied {
                outcome: DeltaOutcome::Reset(ResetReason::CountersDecreased {
                    stacks: stats.decreased,
                }),
                state: Some(next),
            });
        }
        let duration = duration(&old.meta, &meta, self.tables.duration_nanos);
        let profile = self.write_delta(data, duration, &mut stats)?;
        stats.state_bytes = next.bytes();
        Ok(Applied {
            outcome: DeltaOutcome::Delta { profile, stats },
            state: Some(next),
        })
    }

    /// The delta of two profiles, for tools: always produces a profile. Restart signs are
    /// reported as warnings and the delta is clamped at zero, like `pprof -base` followed by
    /// dropping negatives. Profiles with different sample types are an error.
    pub fn diff(&mut self, old: &[u8], new: &[u8]) -> Result<Diff> {
        let mut raw = std::mem::take(&mut self.raw);
        let result = self.diff_in(old, new, &mut raw);
        self.raw = raw;
        result
    }

    fn diff_in(&mut self, old: &[u8], new: &[u8], raw: &mut Vec<u8>) -> Result<Diff> {
        let old_state = {
            let data = self.inflater.raw(old, &self.options.limits, raw)?;
            let meta = self.analyze(data)?;
            self.fold(&meta, None).0
        };
        let data = self.inflater.raw(new, &self.options.limits, raw)?;
        let meta = self.analyze(data)?;
        let mut warnings = Vec::new();
        match old_state.meta.incompatibility(&meta) {
            Some(ResetReason::SampleTypesChanged) => {
                return Err(PprofError::Incompatible(
                    "the profiles have different sample or period types".into(),
                ));
            }
            Some(reason) => warnings.push(reason),
            None => {}
        }
        let (_, mut stats) = self.fold(&meta, Some(&old_state));
        if stats.decreased > 0 {
            warnings.push(ResetReason::CountersDecreased {
                stacks: stats.decreased,
            });
        }
        let duration = duration(&old_state.meta, &meta, self.tables.duration_nanos);
        let profile = self.write_delta(data, duration, &mut stats)?;
        Ok(Diff {
            profile,
            stats,
            warnings,
            cumulative: !meta.cumulative.is_empty(),
        })
    }

    /// Decodes `data`, hashes every sample and sorts the hashes. Leaves the tables, `keys` and
    /// `values` ready for [`Self::fold`].
    fn analyze(&mut self, data: &[u8]) -> Result<Meta> {
        self.tables.parse(data)?;
        let t = &self.tables;

        self.str_hash.clear();
        self.str_hash.extend(
            t.strings
                .iter()
                .map(|s| xxh3_64(data.get(s.range()).unwrap_or_default())),
        );
        let sh = |i: i64| -> u64 {
            usize::try_from(i)
                .ok()
                .and_then(|i| self.str_hash.get(i))
                .copied()
                .unwrap_or(0)
        };

        let types: Box<[u64]> = t
            .sample_types
            .iter()
            .map(|vt| hash2(sh(vt.ty), sh(vt.unit)))
            .collect();
        let cumulative: Box<[u32]> = t
            .sample_types
            .iter()
            .enumerate()
            .filter(|(_, vt)| self.options.cumulative.contains(t.str(data, vt.ty)))
            .map(|(i, _)| i as u32)
            .collect();
        let build_id = t
            .mappings
            .first()
            .filter(|m| m.build_id != 0 && !t.string(data, m.build_id).is_empty())
            .map(|m| sh(m.build_id))
            .unwrap_or(0);
        let meta = Meta {
            types,
            cumulative,
            period_type: hash2(sh(t.period_type.ty), sh(t.period_type.unit)),
            period: t.period,
            time_nanos: t.time_nanos,
            build_id,
        };

        let n_samples = t.samples.len();
        self.keys.clear();
        self.values.clear();
        if meta.cumulative.is_empty() {
            // Nothing to subtract: only check that the samples are well-formed.
            for i in 0..n_samples {
                self.tables.read_sample(data, i, &mut self.sample)?;
            }
            return Ok(meta);
        }

        self.fn_hash.clear();
        self.fn_hash.extend(
            t.functions
                .iter()
                .map(|f| hash2(sh(f.name), sh(f.filename))),
        );
        self.loc_hash.clear();
        for loc in &t.locations {
            let start = if loc.mapping == NONE {
                0
            } else {
                t.mappings
                    .get(loc.mapping as usize)
                    .map_or(0, |m| m.memory_start)
            };
            let b = &mut self.hash_bytes;
            b.clear();
            b.extend_from_slice(&loc.address.wrapping_sub(start).to_le_bytes());
            b.push(u8::from(loc.is_folded));
            for line in t.lines_of(loc) {
                let f = self
                    .fn_hash
                    .get(line.function as usize)
                    .copied()
                    .unwrap_or(0);
                b.extend_from_slice(&f.to_le_bytes());
                b.extend_from_slice(&line.line.to_le_bytes());
                b.extend_from_slice(&line.column.to_le_bytes());
            }
            self.loc_hash.push(xxh3_64(b));
        }

        self.keys.reserve(n_samples);
        self.values.reserve(n_samples * t.sample_types.len());
        for i in 0..n_samples {
            self.tables.read_sample(data, i, &mut self.sample)?;
            let s = &self.sample;
            let b = &mut self.hash_bytes;
            b.clear();
            for &l in &s.locations {
                let h = self.loc_hash.get(l as usize).copied().unwrap_or(0);
                b.extend_from_slice(&h.to_le_bytes());
            }
            if !s.labels.is_empty() {
                self.label_hashes.clear();
                for l in &s.labels {
                    // Go's decoder drops labels with neither a string nor a number.
                    if l.str == 0 && l.num == 0 && l.num_unit == 0 {
                        continue;
                    }
                    let mut w = [0u8; 32];
                    w[..8].copy_from_slice(&sh(l.key).to_le_bytes());
                    w[8..16].copy_from_slice(&sh(l.str).to_le_bytes());
                    w[16..24].copy_from_slice(&l.num.to_le_bytes());
                    w[24..].copy_from_slice(&sh(l.num_unit).to_le_bytes());
                    self.label_hashes.push(xxh3_64(&w));
                }
                // Label order carries no meaning.
                self.label_hashes.sort_unstable();
                for h in &self.label_hashes {
                    b.extend_from_slice(&h.to_le_bytes());
                }
            }
            // The frame count as seed keeps "stack + labels" unambiguous (and a 30-frame stack
            // within xxh3's faster mid-size path).
            let h = xxh3_64_with_seed(b, s.locations.len() as u64);
            self.keys.push((h, i as u32));
            self.values.extend_from_slice(&s.values);
        }
        // Sorting groups equal stacks (summed below) and orders them for the merge join.
        self.keys.sort_unstable();
        Ok(meta)
    }

    /// Sums duplicate stacks, joins with `old`, turns `values` into the output values in place
    /// (cumulative: clamped delta; gauges: new, summed over duplicates), decides which samples
    /// to emit, and builds the next state.
    ///
    /// Rows are wanted in hash order, which is random in memory; touching each one inside the
    /// join loop would stall on a cache miss per stack. So they are first gathered into hash
    /// order by a tight loop (its independent loads overlap), folded sequentially, and only the
    /// rows to emit are scattered back.
    fn fold(&mut self, meta: &Meta, old: Option<&SeriesState>) -> (SeriesState, DeltaStats) {
        let nt = self.tables.sample_types.len();
        let cum = &meta.cumulative;
        let k = cum.len();
        let keys = &self.keys;
        let vals = &mut self.values;
        let emit = &mut self.emit;
        let packed = &mut self.packed;
        let sorted = &mut self.sorted;
        let n_samples = self.tables.samples.len();
        emit.clear();
        emit.resize(n_samples, false);
        packed.clear();
        sorted.clear();
        sorted.reserve(keys.len() * nt);
        for &(_, i) in keys {
            let i = i as usize;
            // (Not extend_from_slice: a memcpy call per 32-byte row costs more than the copy.)
            sorted.extend(
                vals.get(i * nt..(i + 1) * nt)
                    .unwrap_or_default()
                    .iter()
                    .copied(),
            );
        }
        let mut stats = DeltaStats {
            samples_in: n_samples,
            ..DeltaStats::default()
        };
        let mut old_state = Cursor::new(old, k, &mut self.old_row);
        let mut stored = 0;
        let mut prev_stored = 0u64;
        let mut g = 0;
        while let Some(&(h, leader)) = keys.get(g) {
            // Sum the group of equal hashes into its first (lowest-index) sample, the leader.
            let mut end = g + 1;
            while keys.get(end).is_some_and(|&(h2, _)| h2 == h) {
                for t in 0..nt {
                    let add = sorted.get(end * nt + t).copied().unwrap_or(0);
                    if let Some(v) = sorted.get_mut(g * nt + t) {
                        *v = v.saturating_add(add);
                    }
                }
                end += 1;
            }
            let Some(row) = sorted.get_mut(g * nt..(g + 1) * nt) else {
                break;
            };
            g = end;
            stats.stacks += 1;

            // Remember the new cumulative values (all-zero ones need no entry).
            if cum
                .iter()
                .any(|&c| row.get(c as usize).is_some_and(|&v| v != 0))
            {
                stored += 1;
                put_varint(packed, h.wrapping_sub(prev_stored));
                prev_stored = h;
                for &c in cum.iter() {
                    put_varint(packed, zigzag(row.get(c as usize).copied().unwrap_or(0)));
                }
            }

            // Subtract the old ones (merge join: both sides are in hash order).
            let old_row = old_state.find(h);
            stats.matched += usize::from(old_row.is_some());
            let (mut up, mut down) = (false, false);
            for (j, &c) in cum.iter().enumerate() {
                let Some(v) = row.get_mut(c as usize) else {
                    continue;
                };
                let before = old_row.and_then(|r| r.get(j)).copied().unwrap_or(0);
                if *v > before {
                    up = true;
                } else if *v < before {
                    down = true;
                    stats.clamped_values += 1;
                }
                // Never negative: a counter that went down contributes nothing.
                *v = v.saturating_sub(before).max(0);
            }
            if old_row.is_some() && down && !up {
                stats.decreased += 1;
            }
            if row.iter().any(|&v| v != 0) {
                let leader = leader as usize;
                if let Some(e) = emit.get_mut(leader) {
                    *e = true;
                }
                if let Some(dst) = vals.get_mut(leader * nt..(leader + 1) * nt) {
                    dst.copy_from_slice(row);
                }
                stats.samples_out += 1;
            }
        }
        // One exact-size copy: the state lives until the next scrape, the scratch is reused.
        let state = SeriesState {
            meta: meta.clone(),
            stacks: stored,
            packed: packed.as_slice().into(),
        };
        (state, stats)
    }

    /// Writes the delta profile by splicing `data` (see the module docs) and gzips it.
    fn write_delta(
        &mut self,
        data: &[u8],
        duration: i64,
        stats: &mut DeltaStats,
    ) -> Result<Vec<u8>> {
        let t = &self.tables;
        let nt = t.sample_types.len();

        // What the emitted samples reference.
        self.keep_loc.clear();
        self.keep_loc.resize(t.locations.len(), false);
        self.keep_fn.clear();
        self.keep_fn.resize(t.functions.len(), false);
        self.keep_str.clear();
        self.keep_str.resize(t.strings.len(), false);
        let keep_str = &mut self.keep_str;
        let mut mark = |i: i64| {
            if let Some(k) = usize::try_from(i).ok().and_then(|i| keep_str.get_mut(i)) {
                *k = true;
            }
        };
        mark(0);
        for vt in &t.sample_types {
            mark(vt.ty);
            mark(vt.unit);
        }
        mark(t.period_type.ty);
        mark(t.period_type.unit);
        for &c in &t.comments {
            mark(c);
        }
        mark(t.drop_frames);
        mark(t.keep_frames);
        mark(t.default_sample_type);
        mark(t.doc_url);
        for m in &t.mappings {
            mark(m.filename);
            mark(m.build_id);
        }
        for (i, &e) in self.emit.iter().enumerate() {
            if !e {
                continue;
            }
            t.read_sample(data, i, &mut self.sample)?;
            for &l in &self.sample.locations {
                if let Some(k) = self.keep_loc.get_mut(l as usize) {
                    *k = true;
                }
            }
            for l in &self.sample.labels {
                mark(l.key);
                mark(l.str);
                mark(l.num_unit);
            }
        }
        for (loc, _) in t.locations.iter().zip(&self.keep_loc).filter(|(_, k)| **k) {
            for line in t.lines_of(loc) {
                if let Some(k) = self.keep_fn.get_mut(line.function as usize) {
                    *k = true;
                }
            }
        }
        for (f, _) in t.functions.iter().zip(&self.keep_fn).filter(|(_, k)| **k) {
            mark(f.name);
            mark(f.system_name);
            mark(f.filename);
        }

        // Splice: walk the top-level fields in their original order.
        let out = &mut self.out_raw;
        out.clear();
        out.reserve(data.len() / 2);
        let (mut si, mut li, mut fi, mut sti) = (0usize, 0usize, 0usize, 0usize);
        let mut wrote_duration = false;
        let mut r = Reader::new(data, 0);
        while r.has_remaining() {
            let start = r.pos();
            let (field, wt) = r.key()?;
            r.skip(wt, field, RECURSION_LIMIT)?;
            let whole = data.get(start..r.pos()).unwrap_or_default();
            match field {
                2 => {
                    if self.emit.get(si).copied().unwrap_or(false) {
                        let span = t.samples.get(si).copied().unwrap_or_default();
                        let row = self.values.get(si * nt..(si + 1) * nt).unwrap_or_default();
                        write_sample(
                            out,
                            &mut self.sample_bytes,
                            data.get(span.range()).unwrap_or_default(),
                            span.start as usize,
                            row,
                        )?;
                    }
                    si += 1;
                }
                4 => {
                    if self.keep_loc.get(li).copied().unwrap_or(false) {
                        out.extend_from_slice(whole);
                    }
                    li += 1;
                }
                5 => {
                    if self.keep_fn.get(fi).copied().unwrap_or(false) {
                        out.extend_from_slice(whole);
                    }
                    fi += 1;
                }
                6 => {
                    if self.keep_str.get(sti).copied().unwrap_or(false) {
                        out.extend_from_slice(whole);
                    } else {
                        // An empty string keeps every later index valid.
                        out.extend_from_slice(&[(6 << 3) | LEN, 0]);
                    }
                    sti += 1;
                }
                10 => {
                    if !wrote_duration && duration != 0 {
                        put_key(out, 10, 0);
                        put_varint(out, duration as u64);
                    }
                    wrote_duration = true;
                }
                _ => out.extend_from_slice(whole),
            }
        }
        if !wrote_duration && duration != 0 {
            put_key(out, 10, 0);
            put_varint(out, duration as u64);
        }
        stats.raw_bytes_out = out.len();
        let mut gz = Vec::new();
        self.deflater.gzip_into(out, &mut gz);
        Ok(gz)
    }
}

/// Writes sample `body` with its values replaced by `values`.
fn write_sample(
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    body: &[u8],
    base: usize,
    values: &[i64],
) -> Result<()> {
    scratch.clear();
    let mut r = Reader::new(body, base);
    while r.has_remaining() {
        let start = r.pos();
        let (field, wt) = r.key()?;
        r.skip(wt, field, RECURSION_LIMIT - 1)?;
        if field != 2 {
            scratch.extend_from_slice(body.get(start..r.pos()).unwrap_or_default());
        }
    }
    let packed: usize = values.iter().map(|&v| varint_len(v as u64)).sum();
    put_key(scratch, 2, LEN);
    put_varint(scratch, packed as u64);
    for &v in values {
        put_varint(scratch, v as u64);
    }
    put_key(out, 2, LEN);
    put_varint(out, scratch.len() as u64);
    out.extend_from_slice(scratch);
    Ok(())
}

/// The delta covers the time between the two profiles when both say when they were taken.
fn duration(old: &Meta, new: &Meta, new_duration: i64) -> i64 {
    if old.time_nanos > 0 && new.time_nanos > old.time_nanos {
        new.time_nanos - old.time_nanos
    } else {
        new_duration
    }
}

fn hash2(a: u64, b: u64) -> u64 {
    let mut w = [0u8; 16];
    w[..8].copy_from_slice(&a.to_le_bytes());
    w[8..].copy_from_slice(&b.to_le_bytes());
    xxh3_64(&w)
}

/// Delta state for many series (e.g. one per target and profile type), sharing one engine.
#[derive(Debug)]
pub struct DeltaStore<K> {
    engine: DeltaEngine,
    series: HashMap<K, SeriesState>,
}

impl<K: Hash + Eq> DeltaStore<K> {
    pub fn new(options: DeltaOptions) -> Self {
        DeltaStore {
            engine: DeltaEngine::new(options),
            series: HashMap::new(),
        }
    }

    /// Feeds one scraped profile of series `key`. On error the series keeps its baseline.
    pub fn observe(&mut self, key: K, profile: &[u8]) -> Result<DeltaOutcome> {
        let applied = self.engine.apply(self.series.get(&key), profile)?;
        match applied.state {
            Some(state) => {
                self.series.insert(key, state);
            }
            None => {
                self.series.remove(&key);
            }
        }
        Ok(applied.outcome)
    }

    /// Drops a series (its target went away).
    pub fn forget(&mut self, key: &K) {
        self.series.remove(key);
    }

    /// Keeps only the series for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.series.retain(|k, _| keep(k));
    }

    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Bytes of all series states (not counting the map's own slots or the keys).
    pub fn state_bytes(&self) -> usize {
        self.series.values().map(SeriesState::bytes).sum()
    }

    pub fn get(&self, key: &K) -> Option<&SeriesState> {
        self.series.get(key)
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::pprof::proto::Profile;
    use crate::pprof::reference;
    use crate::pprof::testutil::{B, HEAP, decode};

    const CPU: &[(&str, &str)] = &[("samples", "count"), ("cpu", "nanoseconds")];
    const MUTEX: &[(&str, &str)] = &[("contentions", "count"), ("delay", "nanoseconds")];

    /// Checks `diff(old, new)` against the reference model and returns the decoded delta.
    fn checked_diff(old: &Profile, new: &Profile) -> (Profile, Diff) {
        let mut engine = DeltaEngine::default();
        let d = engine
            .diff(&old.encode_to_vec(), &new.encode_to_vec())
            .expect("diff");
        let out = decode(&d.profile);
        let mask = reference::cumulative_mask(new, Some(&Cumulative::ALLOY));
        let (want, decreased) = reference::delta(old, new, &mask);
        assert_eq!(reference::by_stack(&out), want, "delta per stack");
        assert_eq!(d.stats.decreased, decreased);
        assert_eq!(d.stats.samples_out, out.sample.len());
        (out, d)
    }

    fn values(p: &Profile) -> Vec<Vec<i64>> {
        p.sample.iter().map(|s| s.value.clone()).collect()
    }

    #[test]
    fn deltas_match_the_reference() {
        // (name, old, new, expected output values in output order)
        let cases: Vec<(&str, Profile, Profile, Vec<Vec<i64>>)> = vec![
            (
                "cumulative subtracted, gauges passed through",
                B::new(HEAP)
                    .sample(&["a", "main"], &[10, 100, 1, 10])
                    .build(),
                B::new(HEAP)
                    .sample(&["a", "main"], &[15, 150, 2, 20])
                    .build(),
                vec![vec![5, 50, 2, 20]],
            ),
            (
                "location ids differ between scrapes",
                B::new(HEAP)
                    .sample(&["a", "main"], &[10, 100, 0, 0])
                    .sample(&["b", "main"], &[1, 1, 0, 0])
                    .build(),
                B::new(HEAP)
                    .ids_from(500)
                    .sample(&["b", "main"], &[3, 3, 0, 0])
                    .sample(&["a", "main"], &[11, 110, 0, 0])
                    .build(),
                vec![vec![2, 2, 0, 0], vec![1, 10, 0, 0]],
            ),
            (
                "unchanged stack without inuse is dropped",
                B::new(HEAP)
                    .sample(&["a"], &[10, 100, 0, 0])
                    .sample(&["b"], &[5, 5, 0, 0])
                    .build(),
                B::new(HEAP)
                    .sample(&["a"], &[10, 100, 0, 0])
                    .sample(&["b"], &[6, 6, 0, 0])
                    .build(),
                vec![vec![1, 1, 0, 0]],
            ),
            (
                "unchanged stack with inuse is kept",
                B::new(HEAP).sample(&["a"], &[10, 100, 1, 10]).build(),
                B::new(HEAP).sample(&["a"], &[10, 100, 1, 10]).build(),
                vec![vec![0, 0, 1, 10]],
            ),
            (
                "new stack is sent in full",
                B::new(HEAP).sample(&["a"], &[10, 100, 0, 0]).build(),
                B::new(HEAP)
                    .sample(&["a"], &[10, 100, 0, 0])
                    .sample(&["c", "a"], &[7, 70, 7, 70])
                    .build(),
                vec![vec![7, 70, 7, 70]],
            ),
            (
                "duplicate stacks are summed, emitted once at the first",
                B::new(HEAP).sample(&["a"], &[10, 100, 0, 0]).build(),
                B::new(HEAP)
                    .sample(&["a"], &[6, 60, 1, 1])
                    .sample(&["z"], &[1, 1, 0, 0])
                    .sample(&["a"], &[6, 60, 2, 2])
                    .build(),
                vec![vec![2, 20, 3, 3], vec![1, 1, 0, 0]],
            ),
            (
                "labels tell stacks apart, in any order",
                B::new(HEAP)
                    .labeled(&["a"], &[10, 10, 0, 0], &[("x", "1"), ("y", "2")])
                    .labeled(&["a"], &[20, 20, 0, 0], &[("x", "9")])
                    .build(),
                B::new(HEAP)
                    .labeled(&["a"], &[25, 25, 0, 0], &[("x", "9")])
                    .labeled(&["a"], &[12, 12, 0, 0], &[("y", "2"), ("x", "1")])
                    .build(),
                vec![vec![5, 5, 0, 0], vec![2, 2, 0, 0]],
            ),
            (
                // Estimated counts can shrink while the bytes grow (estimates scaled by size).
                "alloc_objects down while alloc_space up is clamped, not a reset",
                B::new(HEAP).sample(&["a"], &[500, 1000, 0, 0]).build(),
                B::new(HEAP).sample(&["a"], &[3, 5000, 0, 0]).build(),
                vec![vec![0, 4000, 0, 0]],
            ),
            (
                "mutex profile",
                B::new(MUTEX).sample(&["lock", "main"], &[3, 3000]).build(),
                B::new(MUTEX).sample(&["lock", "main"], &[5, 5500]).build(),
                vec![vec![2, 2500]],
            ),
            (
                "empty profiles",
                B::new(MUTEX).build(),
                B::new(MUTEX).build(),
                vec![],
            ),
        ];
        for (name, old, new, want) in cases {
            let (out, d) = checked_diff(&old, &new);
            assert_eq!(values(&out), want, "{name}");
            assert!(d.warnings.is_empty(), "{name}: {:?}", d.warnings);
        }
    }

    #[test]
    fn output_is_pruned_and_keeps_string_indexes() {
        let old = B::new(HEAP)
            .sample(&["gone_leaf", "gone_mid", "main"], &[5, 5, 0, 0])
            .sample(&["kept", "main"], &[1, 1, 0, 0])
            .build();
        let new = B::new(HEAP)
            .sample(&["gone_leaf", "gone_mid", "main"], &[5, 5, 0, 0])
            .labeled(&["kept", "main"], &[2, 2, 0, 0], &[("span", "s1")])
            .build();
        let (out, d) = checked_diff(&old, &new);
        assert_eq!(out.location.len(), 2);
        assert_eq!(out.function.len(), 2);
        assert_eq!(out.string_table.len(), new.string_table.len());
        assert!(!out.string_table.iter().any(|s| s.starts_with("gone")));
        for keep in [
            "kept",
            "main",
            "span",
            "s1",
            "alloc_space",
            "build-1",
            "/bin/app",
        ] {
            assert!(out.string_table.iter().any(|s| s == keep), "{keep} kept");
        }
        assert!(d.stats.raw_bytes_out < new.encoded_len());
    }

    #[test]
    fn duration_and_time() {
        let old = B::new(HEAP)
            .time(1_000)
            .sample(&["a"], &[1, 1, 0, 0])
            .build();
        let new = B::new(HEAP)
            .time(16_000)
            .sample(&["a"], &[2, 2, 0, 0])
            .build();
        let (out, _) = checked_diff(&old, &new);
        assert_eq!((out.time_nanos, out.duration_nanos), (16_000, 15_000));
    }

    #[test]
    fn diff_warns_but_still_clamps() {
        let old = B::new(HEAP)
            .sample(&["a"], &[10, 100, 0, 0])
            .sample(&["b"], &[1, 1, 0, 0])
            .build();
        let new = B::new(HEAP)
            .sample(&["a"], &[3, 30, 3, 30])
            .sample(&["b"], &[2, 2, 0, 0])
            .build();
        let (out, d) = checked_diff(&old, &new);
        assert_eq!(
            d.warnings,
            vec![ResetReason::CountersDecreased { stacks: 1 }]
        );
        assert_eq!(d.stats.clamped_values, 2);
        assert_eq!(values(&out), vec![vec![0, 0, 3, 30], vec![1, 1, 0, 0]]);
        let other = B::new(CPU).sample(&["a"], &[1, 1]).build();
        let err = DeltaEngine::default()
            .diff(&old.encode_to_vec(), &other.encode_to_vec())
            .expect_err("different types");
        assert!(matches!(err, PprofError::Incompatible(_)), "{err:?}");
    }

    fn outcome_name(o: &DeltaOutcome) -> String {
        match o {
            DeltaOutcome::Baseline { .. } => "baseline".into(),
            DeltaOutcome::Reset(r) => format!("reset: {r}"),
            DeltaOutcome::Delta { stats, .. } => format!("delta {}", stats.samples_out),
            DeltaOutcome::NotCumulative => "not cumulative".into(),
        }
    }

    #[test]
    fn series_lifecycle() {
        let heap = |t: i64, a: i64| B::new(HEAP).time(t).sample(&["a"], &[a, a * 10, 1, 1]);
        // (name, profiles fed in order, expected outcome per profile)
        let cases: Vec<(&str, Vec<Profile>, Vec<&str>)> = vec![
            (
                "baseline then deltas",
                vec![heap(1, 1).build(), heap(2, 3).build(), heap(3, 3).build()],
                vec!["baseline", "delta 1", "delta 1"],
            ),
            (
                "restart: counters went down, next delta is against the new baseline",
                vec![heap(1, 100).build(), heap(2, 5).build(), heap(3, 8).build()],
                vec![
                    "baseline",
                    "reset: counters decreased on 1 stacks",
                    "delta 1",
                ],
            ),
            (
                "new binary",
                vec![heap(1, 1).build(), heap(2, 2).build_id("build-2").build()],
                vec!["baseline", "reset: main binary build id changed"],
            ),
            (
                "time went backwards",
                vec![heap(10, 1).build(), heap(5, 2).build()],
                vec!["baseline", "reset: time_nanos went backwards"],
            ),
            (
                "period changed",
                vec![heap(1, 1).build(), heap(2, 2).period(4096).build()],
                vec!["baseline", "reset: sampling period changed"],
            ),
            (
                "sample types changed",
                vec![
                    heap(1, 1).build(),
                    B::new(MUTEX).time(2).sample(&["a"], &[1, 1]).build(),
                ],
                vec!["baseline", "reset: sample types changed"],
            ),
            (
                "cpu is not cumulative",
                vec![B::new(CPU).sample(&["a"], &[1, 1]).build()],
                vec!["not cumulative"],
            ),
        ];
        for (name, profiles, want) in cases {
            let mut store = DeltaStore::new(DeltaOptions::default());
            let got: Vec<String> = profiles
                .iter()
                .map(|p| outcome_name(&store.observe("s", &p.encode_to_vec()).expect(name)))
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn bad_profile_keeps_the_baseline() {
        let mut store = DeltaStore::new(DeltaOptions::default());
        let p1 = B::new(HEAP).sample(&["a"], &[1, 1, 0, 0]).build();
        let p2 = B::new(HEAP).sample(&["a"], &[4, 4, 0, 0]).build();
        store.observe(1, &p1.encode_to_vec()).expect("baseline");
        let before = store.get(&1).cloned();
        assert!(store.observe(1, b"\x0a\xff").is_err());
        assert!(store.observe(1, &[0x1f, 0x8b, 1, 2, 3]).is_err());
        assert_eq!(store.get(&1).cloned(), before);
        match store.observe(1, &crate::pprof::gzip(&p2.encode_to_vec(), 1)) {
            Ok(DeltaOutcome::Delta { profile, .. }) => {
                assert_eq!(values(&decode(&profile)), vec![vec![3, 3, 0, 0]]);
            }
            other => panic!("{other:?}"),
        }
        store.forget(&1);
        assert!(store.is_empty());
    }

    #[test]
    fn state_is_compact() {
        // 2,000 stacks of 30 frames: the state holds 24 bytes per stack with a cumulative value.
        let mut b = B::new(HEAP);
        let frames: Vec<String> = (0..64).map(|i| format!("f{i}")).collect();
        for s in 0..2000usize {
            let stack: Vec<&str> = (0..30)
                .map(|d| frames[(s >> (d % 11)) % 64].as_str())
                .collect();
            let v = if s % 10 == 0 { 0 } else { s as i64 + 1 };
            b = b.sample(&stack, &[v, v * 8, 1, 8]);
        }
        let raw = b.raw();
        let mut store = DeltaStore::new(DeltaOptions::default());
        store.observe((), &raw).expect("baseline");
        let state = store.get(&()).expect("state");
        assert_eq!(state.stacks(), 1800 - dup_stacks(&raw));
        assert!(
            state.bytes() <= state.stacks() * 16 + 256,
            "{}",
            state.bytes()
        );
        assert!(
            state.bytes() * 2 <= raw.len(),
            "{} vs {}",
            state.bytes(),
            raw.len()
        );
    }

    #[test]
    fn packed_state_round_trips() {
        for v in [0, 1, -1, 63, -64, 1 << 40, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        // Extreme hashes and values survive the packing: a state of one profile, then a delta
        // of the same profile against it is empty.
        let p = B::new(HEAP)
            .sample(&["a"], &[i64::MAX, i64::MIN, 0, 0])
            .sample(&["b"], &[-5, 7, 0, 0])
            .raw();
        let mut engine = DeltaEngine::new(DeltaOptions {
            cumulative: Cumulative::All,
            ..DeltaOptions::default()
        });
        let state = engine.apply(None, &p).expect("baseline").state;
        match engine.apply(state.as_ref(), &p).expect("again").outcome {
            DeltaOutcome::Delta { stats, .. } => {
                assert_eq!((stats.matched, stats.samples_out), (2, 0), "{stats:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// Stacks that the generator above happened to produce twice (with non-zero values).
    fn dup_stacks(raw: &[u8]) -> usize {
        let p = decode(raw);
        let by = reference::by_stack(&p);
        let nonzero = p.sample.iter().filter(|s| s.value[0] != 0).count();
        nonzero - by.values().filter(|v| v[0] != 0).count()
    }
}

#[cfg(test)]
mod proptests {
    use proptest::prelude::*;
    use prost::Message as _;

    use super::*;
    use crate::pprof::proto::Profile;
    use crate::pprof::reference;
    use crate::pprof::testutil::{B, HEAP, decode};

    type SampleSpec = (Vec<u8>, Vec<i64>, Vec<(u8, u8)>);

    fn samples() -> impl Strategy<Value = Vec<SampleSpec>> {
        let sample = (
            prop::collection::vec(0u8..6, 0..5),
            prop::collection::vec(-2i64..30, 4),
            prop::collection::vec((0u8..2, 0u8..2), 0..3),
        );
        prop::collection::vec(sample, 0..25)
    }

    fn build(ids_from: u64, specs: &[SampleSpec]) -> Profile {
        const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
        const KEYS: [&str; 2] = ["k1", "k2"];
        const VALS: [&str; 2] = ["v1", "v2"];
        let mut b = B::new(HEAP).ids_from(ids_from);
        for (stack, values, labels) in specs {
            let stack: Vec<&str> = stack.iter().map(|&i| NAMES[i as usize]).collect();
            let labels: Vec<(&str, &str)> = labels
                .iter()
                .map(|&(k, v)| (KEYS[k as usize], VALS[v as usize]))
                .collect();
            b = b.labeled(&stack, values, &labels);
        }
        b.build()
    }

    proptest! {
        #[test]
        fn engine_equals_reference(
            old in samples(),
            new in samples(),
            ids in 1u64..1000,
            all in any::<bool>(),
        ) {
            let old = build(1, &old);
            let new = build(ids, &new);
            let cumulative = if all { Cumulative::All } else { Cumulative::Alloy };
            let mut engine = DeltaEngine::new(DeltaOptions { cumulative, ..DeltaOptions::default() });
            let d = engine.diff(&old.encode_to_vec(), &new.encode_to_vec()).expect("diff");
            let out = decode(&d.profile);
            let names = if all { None } else { Some(&Cumulative::ALLOY[..]) };
            let mask = reference::cumulative_mask(&new, names);
            let (want, decreased) = reference::delta(&old, &new, &mask);
            prop_assert_eq!(reference::by_stack(&out), want);
            prop_assert_eq!(d.stats.decreased, decreased);
            // Never negative in cumulative types.
            for s in &out.sample {
                for (v, c) in s.value.iter().zip(&mask) {
                    prop_assert!(!c || *v >= 0);
                }
            }
            // The series path agrees: baseline, then delta or reset.
            let mut store = DeltaStore::new(engine.options().clone());
            store.observe(0, &old.encode_to_vec()).expect("baseline");
            match store.observe(0, &new.encode_to_vec()).expect("second") {
                DeltaOutcome::Delta { profile, .. } => {
                    prop_assert_eq!(decreased, 0);
                    prop_assert_eq!(reference::by_stack(&decode(&profile)), reference::by_stack(&out));
                }
                DeltaOutcome::Reset(ResetReason::CountersDecreased { stacks }) => {
                    prop_assert_eq!(stacks, decreased);
                }
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
    }
}

#[cfg(test)]
mod seeds {
    use crate::pprof::testutil::{B, HEAP};

    /// The synthetic seeds of fuzz/corpus: (target, file name, bytes).
    fn fuzz_seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
        let old = B::new(HEAP)
            .sample(&["a", "main"], &[10, 100, 1, 10])
            .labeled(&["b", "a", "main"], &[3, 30, 0, 0], &[("k", "v")])
            .sample(&["c"], &[5, 5, 5, 5])
            .raw();
        let new = B::new(HEAP)
            .ids_from(40)
            .time(2_000_000_000)
            .sample(&["a", "main"], &[12, 120, 1, 10])
            .labeled(&["b", "a", "main"], &[3, 30, 0, 0], &[("k", "v")])
            .sample(&["c"], &[1, 1, 1, 1])
            .sample(&["a", "main"], &[1, 1, 1, 1])
            .raw();
        let pair = |a: &[u8], b: &[u8], all: bool| {
            let mut v = (a.len() as u16).to_le_bytes().to_vec();
            // The low bit of the first byte selects "all types": keep the length, flip the bit
            // by padding OLD with a harmless empty unknown field when needed.
            let mut a = a.to_vec();
            if (v[0] & 1 == 1) != all {
                a.extend_from_slice(&[0xa2, 0x06, 0x00]); // field 100, empty LEN
                v = (a.len() as u16).to_le_bytes().to_vec();
            }
            v.extend_from_slice(&a);
            v.extend_from_slice(b);
            v
        };
        vec![
            ("decode", "synthetic-heap", new.clone()),
            ("decode", "synthetic-heap.gz", crate::pprof::gzip(&old, 1)),
            ("delta", "synthetic-heap", pair(&old, &new, false)),
            ("delta", "synthetic-heap-all", pair(&old, &new, true)),
            ("delta", "synthetic-reset", pair(&new, &old, false)),
        ]
    }

    fn corpus() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus")
    }

    /// Writes the synthetic seeds of fuzz/corpus (fuzz/make-seeds.sh runs this).
    #[test]
    #[ignore = "writes files; run by fuzz/make-seeds.sh (committed_fuzz_seeds_are_current checks them)"]
    fn write_fuzz_seeds() {
        for (target, name, bytes) in fuzz_seeds() {
            let d = corpus().join(target);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join(name), bytes).expect("write seed");
        }
    }

    /// The regenerate-and-diff half of `write_fuzz_seeds`, which CI runs: the committed seeds
    /// are what the code writes today (a change to the builder or the layout fails here until
    /// `fuzz/make-seeds.sh decode delta` is run).
    #[test]
    fn committed_fuzz_seeds_are_current() {
        for (target, name, bytes) in fuzz_seeds() {
            let path = corpus().join(target).join(name);
            let committed =
                std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                committed == bytes,
                "{} is stale: run fuzz/make-seeds.sh decode delta",
                path.display()
            );
        }
    }
}
