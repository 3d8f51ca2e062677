//! Zero-copy decoder for the hot path: one pass over the raw protobuf records the string table
//! as byte ranges, decodes the small tables (mappings, locations, functions) into flat vectors,
//! and remembers each sample's byte range so samples can be read one at a time later, without
//! building a `Sample` per stack.
//!
//! Every table is validated as it is resolved (same rules as `validate.rs`); samples are
//! validated when read with [`Tables::read_sample`]. All vectors are kept between calls (they
//! are cleared, not freed), so steady-state scrapes allocate almost nothing here.
//!
//! Memory: nothing is reserved from a length field; every vector grows by one entry per entry
//! actually present. Entries are bigger than their smallest encoding, so the worst case
//! (crafted input made of minimal entries) is about 10 bytes of tables per input byte, and
//! [`Limits`](super::Limits) on the decompressed size is what bounds it. Entries that are
//! invalid on their own (id 0) are rejected as soon as they are read.

use std::collections::HashMap;

use super::error::{PprofError, Result};
use super::wire::{RECURSION_LIMIT, Reader};

/// Byte range of a record in the raw profile (32-bit: inputs are capped below 4 GiB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    fn new(start: usize, len: usize) -> Self {
        // Callers reject inputs of 4 GiB or more before parsing, so these fit.
        Span {
            start: start as u32,
            end: (start + len) as u32,
        }
    }

    #[inline]
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A `ValueType` as string indexes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ValueType {
    pub ty: i64,
    pub unit: i64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MappingRec {
    pub id: u64,
    pub memory_start: u64,
    pub filename: i64,
    pub build_id: i64,
}

/// Index of "no mapping" in [`LocationRec::mapping`].
pub(crate) const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LocationRec {
    pub id: u64,
    pub mapping_id: u64,
    pub address: u64,
    pub is_folded: bool,
    /// Range in [`Tables::lines`].
    pub lines_start: u32,
    pub lines_end: u32,
    /// Resolved index into [`Tables::mappings`], or [`NONE`].
    pub mapping: u32,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LineRec {
    pub function_id: u64,
    pub line: i64,
    pub column: i64,
    /// Resolved index into [`Tables::functions`].
    pub function: u32,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FunctionRec {
    pub id: u64,
    pub name: i64,
    pub system_name: i64,
    pub filename: i64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LabelRec {
    pub key: i64,
    pub str: i64,
    pub num: i64,
    pub num_unit: i64,
}

/// One sample as read by [`Tables::read_sample`].
#[derive(Debug, Default)]
pub(crate) struct SampleBuf {
    /// Indexes into [`Tables::locations`], leaf first.
    pub locations: Vec<u32>,
    pub values: Vec<i64>,
    pub labels: Vec<LabelRec>,
}

/// id -> table index. Producers number ids 1..=n (Go does), so a vector indexed by id is the
/// usual case; sparse or huge ids fall back to a hash map so a large id cannot make us allocate.
#[derive(Debug, Default)]
struct IdIndex {
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
    is_dense: bool,
}

impl IdIndex {
    fn build(&mut self, kind: &'static str, n: usize, id_of: impl Fn(usize) -> u64) -> Result<()> {
        self.dense.clear();
        self.sparse.clear();
        let mut max = 0u64;
        for i in 0..n {
            let id = id_of(i);
            if id == 0 {
                return Err(PprofError::ZeroId { kind });
            }
            max = max.max(id);
        }
        // Dense when the id range is at most about twice the table: memory stays linear in
        // the input size whatever the ids claim.
        self.is_dense = max <= 2 * n as u64 + 64;
        if self.is_dense {
            self.dense.resize(max as usize + 1, 0);
            for i in 0..n {
                let id = id_of(i);
                let slot = &mut self.dense[id as usize];
                if *slot != 0 {
                    return Err(PprofError::DuplicateId { kind, id });
                }
                *slot = i as u32 + 1;
            }
        } else {
            self.sparse.reserve(n);
            for i in 0..n {
                let id = id_of(i);
                if self.sparse.insert(id, i as u32).is_some() {
                    return Err(PprofError::DuplicateId { kind, id });
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn get(&self, id: u64) -> Option<u32> {
        if self.is_dense {
            match self.dense.get(id as usize) {
                Some(&v) if v != 0 => Some(v - 1),
                _ => None,
            }
        } else {
            self.sparse.get(&id).copied()
        }
    }
}

/// The decoded tables of one raw profile. Holds no reference to the bytes: methods take them
/// again, so one `Tables` can be reused for profile after profile.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub sample_types: Vec<ValueType>,
    pub period_type: ValueType,
    pub period: i64,
    pub time_nanos: i64,
    pub duration_nanos: i64,
    pub drop_frames: i64,
    pub keep_frames: i64,
    pub default_sample_type: i64,
    pub doc_url: i64,
    pub comments: Vec<i64>,
    pub strings: Vec<Span>,
    pub samples: Vec<Span>,
    pub mappings: Vec<MappingRec>,
    pub locations: Vec<LocationRec>,
    pub lines: Vec<LineRec>,
    pub functions: Vec<FunctionRec>,
    location_ids: IdIndex,
    function_ids: IdIndex,
    mapping_ids: IdIndex,
}

/// Unknown fields inside a message one level below the profile are skipped with this budget
/// (prost decrements its recursion counter per nested message).
const NESTED: u32 = RECURSION_LIMIT - 1;

/// Heap bytes a vector keeps allocated.
pub(crate) fn capacity_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

impl Tables {
    /// Heap bytes the tables keep allocated between profiles (approximate: the id indexes'
    /// sparse maps are not counted).
    pub(crate) fn retained_bytes(&self) -> usize {
        capacity_bytes(&self.sample_types)
            + capacity_bytes(&self.comments)
            + capacity_bytes(&self.strings)
            + capacity_bytes(&self.samples)
            + capacity_bytes(&self.mappings)
            + capacity_bytes(&self.locations)
            + capacity_bytes(&self.lines)
            + capacity_bytes(&self.functions)
            + capacity_bytes(&self.location_ids.dense)
            + capacity_bytes(&self.function_ids.dense)
            + capacity_bytes(&self.mapping_ids.dense)
    }

    /// Parses and validates everything but the samples' contents.
    pub(crate) fn parse(&mut self, data: &[u8]) -> Result<()> {
        self.clear();
        if data.len() > u32::MAX as usize {
            return Err(PprofError::TooLarge {
                limit: u32::MAX as usize,
            });
        }
        let mut r = Reader::new(data, 0);
        while r.has_remaining() {
            let (field, wt) = r.key()?;
            match field {
                1 => {
                    r.expect_len(field, wt)?;
                    let mut m = r.message()?;
                    self.sample_types
                        .push(value_type(&mut m, ValueType::default())?);
                }
                2 => {
                    r.expect_len(field, wt)?;
                    let (start, bytes) = r.bytes()?;
                    self.samples.push(Span::new(start, bytes.len()));
                }
                3 => {
                    r.expect_len(field, wt)?;
                    let mut m = r.message()?;
                    let rec = mapping(&mut m)?;
                    nonzero("mapping", rec.id)?;
                    self.mappings.push(rec);
                }
                4 => {
                    r.expect_len(field, wt)?;
                    let mut m = r.message()?;
                    self.location(&mut m)?;
                }
                5 => {
                    r.expect_len(field, wt)?;
                    let mut m = r.message()?;
                    let rec = function(&mut m)?;
                    nonzero("function", rec.id)?;
                    self.functions.push(rec);
                }
                6 => {
                    r.expect_len(field, wt)?;
                    let (start, bytes) = r.bytes()?;
                    // Protobuf strings must be UTF-8; prost and Go's pprof consumers rely on it.
                    if std::str::from_utf8(bytes).is_err() {
                        return Err(PprofError::InvalidUtf8 {
                            index: self.strings.len(),
                        });
                    }
                    self.strings.push(Span::new(start, bytes.len()));
                }
                7 => self.drop_frames = r.scalar(field, wt)? as i64,
                8 => self.keep_frames = r.scalar(field, wt)? as i64,
                9 => self.time_nanos = r.scalar(field, wt)? as i64,
                10 => self.duration_nanos = r.scalar(field, wt)? as i64,
                11 => {
                    // A singular message that occurs twice is merged, field by field.
                    r.expect_len(field, wt)?;
                    let mut m = r.message()?;
                    self.period_type = value_type(&mut m, self.period_type)?;
                }
                12 => self.period = r.scalar(field, wt)? as i64,
                13 => {
                    let comments = &mut self.comments;
                    r.repeated_varint(field, wt, |v| {
                        comments.push(v as i64);
                        Ok(())
                    })?
                }
                14 => self.default_sample_type = r.scalar(field, wt)? as i64,
                15 => self.doc_url = r.scalar(field, wt)? as i64,
                _ => r.skip(wt, field, RECURSION_LIMIT)?,
            }
        }
        self.resolve()
    }

    fn clear(&mut self) {
        self.sample_types.clear();
        self.period_type = ValueType::default();
        self.period = 0;
        self.time_nanos = 0;
        self.duration_nanos = 0;
        self.drop_frames = 0;
        self.keep_frames = 0;
        self.default_sample_type = 0;
        self.doc_url = 0;
        self.comments.clear();
        self.strings.clear();
        self.samples.clear();
        self.mappings.clear();
        self.locations.clear();
        self.lines.clear();
        self.functions.clear();
    }

    fn location(&mut self, m: &mut Reader<'_>) -> Result<()> {
        let mut loc = LocationRec {
            lines_start: self.lines.len() as u32,
            mapping: NONE,
            ..LocationRec::default()
        };
        while m.has_remaining() {
            let (field, wt) = m.key()?;
            match field {
                1 => loc.id = m.scalar(field, wt)?,
                2 => loc.mapping_id = m.scalar(field, wt)?,
                3 => loc.address = m.scalar(field, wt)?,
                4 => {
                    m.expect_len(field, wt)?;
                    let mut l = m.message()?;
                    let rec = line(&mut l)?;
                    if rec.function_id == 0 {
                        // Function ids are never 0, so this line cannot resolve (see nonzero()).
                        return Err(PprofError::UnknownFunction {
                            location: loc.id,
                            id: 0,
                        });
                    }
                    self.lines.push(rec);
                }
                5 => loc.is_folded = m.scalar(field, wt)? != 0,
                _ => m.skip(wt, field, NESTED)?,
            }
        }
        loc.lines_end = self.lines.len() as u32;
        nonzero("location", loc.id)?;
        self.locations.push(loc);
        Ok(())
    }

    /// Checks string indexes and ids, and resolves id references to table indexes.
    fn resolve(&mut self) -> Result<()> {
        match self.strings.first() {
            Some(s) if s.start == s.end => {}
            _ => return Err(PprofError::StringTableStart),
        }
        for t in &self.sample_types {
            self.check_string("sample_type.type", t.ty)?;
            self.check_string("sample_type.unit", t.unit)?;
        }
        self.check_string("period_type.type", self.period_type.ty)?;
        self.check_string("period_type.unit", self.period_type.unit)?;
        for &c in &self.comments {
            self.check_string("comment", c)?;
        }
        self.check_string("drop_frames", self.drop_frames)?;
        self.check_string("keep_frames", self.keep_frames)?;
        self.check_string("default_sample_type", self.default_sample_type)?;
        self.check_string("doc_url", self.doc_url)?;
        for m in &self.mappings {
            self.check_string("mapping.filename", m.filename)?;
            self.check_string("mapping.build_id", m.build_id)?;
        }
        for f in &self.functions {
            self.check_string("function.name", f.name)?;
            self.check_string("function.system_name", f.system_name)?;
            self.check_string("function.filename", f.filename)?;
        }
        let mappings = &self.mappings;
        self.mapping_ids
            .build("mapping", mappings.len(), |i| mappings[i].id)?;
        let functions = &self.functions;
        self.function_ids
            .build("function", functions.len(), |i| functions[i].id)?;
        let locations = &self.locations;
        self.location_ids
            .build("location", locations.len(), |i| locations[i].id)?;
        for loc in &mut self.locations {
            // Go's decoder treats an unknown mapping id as "no mapping" rather than an error.
            loc.mapping = self.mapping_ids.get(loc.mapping_id).unwrap_or(NONE);
            let lines = self
                .lines
                .get_mut(loc.lines_start as usize..loc.lines_end as usize)
                .unwrap_or_default();
            for line in lines {
                line.function =
                    self.function_ids
                        .get(line.function_id)
                        .ok_or(PprofError::UnknownFunction {
                            location: loc.id,
                            id: line.function_id,
                        })?;
            }
        }
        if self.sample_types.is_empty() && !self.samples.is_empty() {
            return Err(PprofError::NoSampleTypes);
        }
        Ok(())
    }

    #[inline]
    fn check_string(&self, field: &'static str, index: i64) -> Result<()> {
        if index < 0 || index as u64 >= self.strings.len() as u64 {
            return Err(PprofError::StringIndex {
                field,
                index,
                len: self.strings.len(),
            });
        }
        Ok(())
    }

    /// The bytes of string `index`; "" when out of range (indexes are checked by `parse`).
    #[inline]
    pub(crate) fn string<'d>(&self, data: &'d [u8], index: i64) -> &'d [u8] {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .and_then(|s| data.get(s.range()))
            .unwrap_or_default()
    }

    /// Like [`Tables::string`], as text (strings were checked to be UTF-8 by `parse`).
    pub(crate) fn str<'d>(&self, data: &'d [u8], index: i64) -> &'d str {
        std::str::from_utf8(self.string(data, index)).unwrap_or_default()
    }

    /// The lines of location `index`.
    #[inline]
    pub(crate) fn lines_of(&self, loc: &LocationRec) -> &[LineRec] {
        self.lines
            .get(loc.lines_start as usize..loc.lines_end as usize)
            .unwrap_or_default()
    }

    /// Reads and validates sample `i` into `out`.
    pub(crate) fn read_sample(&self, data: &[u8], i: usize, out: &mut SampleBuf) -> Result<()> {
        out.locations.clear();
        out.values.clear();
        out.labels.clear();
        let span = self.samples.get(i).copied().unwrap_or_default();
        let mut r = Reader::new(
            data.get(span.range()).unwrap_or_default(),
            span.start as usize,
        );
        while r.has_remaining() {
            let (field, wt) = r.key()?;
            match field {
                1 => {
                    let locations = &mut out.locations;
                    let ids = &self.location_ids;
                    r.repeated_varint(field, wt, |id| {
                        let index = ids
                            .get(id)
                            .ok_or(PprofError::UnknownLocation { sample: i, id })?;
                        locations.push(index);
                        Ok(())
                    })?
                }
                2 => {
                    let values = &mut out.values;
                    r.repeated_varint(field, wt, |v| {
                        values.push(v as i64);
                        Ok(())
                    })?
                }
                3 => {
                    r.expect_len(field, wt)?;
                    let mut m = r.message()?;
                    let label = label(&mut m)?;
                    self.check_string("label.key", label.key)?;
                    self.check_string("label.str", label.str)?;
                    self.check_string("label.num_unit", label.num_unit)?;
                    out.labels.push(label);
                }
                _ => r.skip(wt, field, NESTED)?,
            }
        }
        if out.values.len() != self.sample_types.len() {
            return Err(PprofError::ValueCount {
                sample: i,
                got: out.values.len(),
                want: self.sample_types.len(),
            });
        }
        Ok(())
    }

    /// Parses `data` and every sample: full validation without keeping anything.
    pub(crate) fn validate_all(&mut self, data: &[u8], buf: &mut SampleBuf) -> Result<()> {
        self.parse(data)?;
        for i in 0..self.samples.len() {
            self.read_sample(data, i, buf)?;
        }
        Ok(())
    }
}

/// Rejects an entry without an id as soon as it is read: a table entry costs more memory than
/// its smallest encoding, so a flood of empty entries must not be collected first.
fn nonzero(kind: &'static str, id: u64) -> Result<()> {
    if id == 0 {
        return Err(PprofError::ZeroId { kind });
    }
    Ok(())
}

fn value_type(m: &mut Reader<'_>, mut vt: ValueType) -> Result<ValueType> {
    while m.has_remaining() {
        let (field, wt) = m.key()?;
        match field {
            1 => vt.ty = m.scalar(field, wt)? as i64,
            2 => vt.unit = m.scalar(field, wt)? as i64,
            _ => m.skip(wt, field, NESTED)?,
        }
    }
    Ok(vt)
}

fn mapping(m: &mut Reader<'_>) -> Result<MappingRec> {
    let mut rec = MappingRec::default();
    while m.has_remaining() {
        let (field, wt) = m.key()?;
        match field {
            1 => rec.id = m.scalar(field, wt)?,
            2 => rec.memory_start = m.scalar(field, wt)?,
            // memory_limit, file_offset and the has_* flags are not needed here, but their
            // wire types are still checked like prost does.
            3 | 4 | 7..=10 => {
                m.scalar(field, wt)?;
            }
            5 => rec.filename = m.scalar(field, wt)? as i64,
            6 => rec.build_id = m.scalar(field, wt)? as i64,
            _ => m.skip(wt, field, NESTED)?,
        }
    }
    Ok(rec)
}

fn line(m: &mut Reader<'_>) -> Result<LineRec> {
    let mut rec = LineRec::default();
    while m.has_remaining() {
        let (field, wt) = m.key()?;
        match field {
            1 => rec.function_id = m.scalar(field, wt)?,
            2 => rec.line = m.scalar(field, wt)? as i64,
            3 => rec.column = m.scalar(field, wt)? as i64,
            _ => m.skip(wt, field, NESTED - 1)?,
        }
    }
    Ok(rec)
}

fn function(m: &mut Reader<'_>) -> Result<FunctionRec> {
    let mut rec = FunctionRec::default();
    while m.has_remaining() {
        let (field, wt) = m.key()?;
        match field {
            1 => rec.id = m.scalar(field, wt)?,
            2 => rec.name = m.scalar(field, wt)? as i64,
            3 => rec.system_name = m.scalar(field, wt)? as i64,
            4 => rec.filename = m.scalar(field, wt)? as i64,
            5 => {
                m.scalar(field, wt)?;
            }
            _ => m.skip(wt, field, NESTED)?,
        }
    }
    Ok(rec)
}

fn label(m: &mut Reader<'_>) -> Result<LabelRec> {
    let mut rec = LabelRec::default();
    while m.has_remaining() {
        let (field, wt) = m.key()?;
        match field {
            1 => rec.key = m.scalar(field, wt)? as i64,
            2 => rec.str = m.scalar(field, wt)? as i64,
            3 => rec.num = m.scalar(field, wt)? as i64,
            4 => rec.num_unit = m.scalar(field, wt)? as i64,
            _ => m.skip(wt, field, NESTED - 1)?,
        }
    }
    Ok(rec)
}

/// Fully decodes and validates a raw (not gzipped) profile with the zero-copy decoder.
pub fn validate_raw(data: &[u8]) -> Result<()> {
    Tables::default().validate_all(data, &mut SampleBuf::default())
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::pprof::proto::{Label, Profile};
    use crate::pprof::testutil::{B, HEAP};
    use crate::pprof::validate::validate;

    fn base() -> Profile {
        B::new(HEAP)
            .sample(&["leaf", "mid", "main"], &[1, 2, 3, 4])
            .labeled(&["leaf", "main"], &[5, 6, 7, 8], &[("k", "v")])
            .build()
    }

    /// Both decoders on the same bytes; they must agree on whether the profile is valid.
    fn both(raw: &[u8]) -> Result<()> {
        let fast = validate_raw(raw);
        let slow = Profile::decode(raw)
            .map_err(|e| PprofError::Protobuf(e.to_string()))
            .and_then(|p| validate(&p));
        assert_eq!(fast.is_ok(), slow.is_ok(), "fast {fast:?} vs slow {slow:?}");
        fast
    }

    #[test]
    fn semantic_errors() {
        type Edit = fn(&mut Profile);
        let cases: &[(&str, Edit, Option<PprofError>)] = &[
            ("valid", |_| {}, None),
            (
                "empty string table",
                |p| p.string_table.clear(),
                Some(PprofError::StringTableStart),
            ),
            (
                "first string not empty",
                |p| p.string_table[0] = "x".into(),
                Some(PprofError::StringTableStart),
            ),
            (
                "function name out of range",
                |p| p.function[0].name = 1000,
                Some(PprofError::StringIndex {
                    field: "function.name",
                    index: 1000,
                    len: 0,
                }),
            ),
            (
                "negative string index",
                |p| p.sample_type[0].unit = -1,
                Some(PprofError::StringIndex {
                    field: "sample_type.unit",
                    index: -1,
                    len: 0,
                }),
            ),
            (
                "label out of range",
                |p| p.sample[1].label[0].str = 999,
                Some(PprofError::StringIndex {
                    field: "label.str",
                    index: 999,
                    len: 0,
                }),
            ),
            (
                "zero function id",
                |p| p.function[0].id = 0,
                Some(PprofError::ZeroId { kind: "function" }),
            ),
            (
                "duplicate location id",
                |p| p.location[1].id = p.location[0].id,
                Some(PprofError::DuplicateId {
                    kind: "location",
                    id: 0,
                }),
            ),
            (
                "unknown function",
                |p| p.location[0].line[0].function_id = 12345,
                Some(PprofError::UnknownFunction {
                    location: 0,
                    id: 12345,
                }),
            ),
            (
                "line without function",
                |p| p.location[0].line[0].function_id = 0,
                Some(PprofError::UnknownFunction { location: 0, id: 0 }),
            ),
            (
                "unknown location",
                |p| p.sample[0].location_id[1] = 77,
                Some(PprofError::UnknownLocation { sample: 0, id: 77 }),
            ),
            (
                "too few values",
                |p| {
                    p.sample[1].value.pop();
                },
                Some(PprofError::ValueCount {
                    sample: 1,
                    got: 3,
                    want: 4,
                }),
            ),
            (
                "samples without types",
                |p| {
                    p.sample_type.clear();
                    for s in &mut p.sample {
                        s.value.clear();
                    }
                },
                Some(PprofError::NoSampleTypes),
            ),
            // Accepted like Go accepts them:
            (
                "unknown mapping id",
                |p| p.location[0].mapping_id = 99,
                None,
            ),
            (
                "huge sparse ids",
                |p| {
                    let old = p.location[0].id;
                    p.location[0].id = u64::MAX;
                    for s in &mut p.sample {
                        for id in &mut s.location_id {
                            if *id == old {
                                *id = u64::MAX;
                            }
                        }
                    }
                },
                None,
            ),
            (
                "no samples no types",
                |p| {
                    p.sample.clear();
                    p.sample_type.clear();
                },
                None,
            ),
            (
                "empty label is fine",
                |p| p.sample[0].label.push(Label::default()),
                None,
            ),
        ];
        for (name, edit, want) in cases {
            let mut p = base();
            edit(&mut p);
            let got = both(&p.encode_to_vec());
            match (want, got) {
                (None, Ok(())) => {}
                (Some(w), Err(g)) => {
                    // Ids, lengths and the like depend on the builder: compare the variant.
                    assert_eq!(
                        std::mem::discriminant(w),
                        std::mem::discriminant(&g),
                        "{name}: want {w:?}, got {g:?}"
                    );
                }
                (w, g) => panic!("{name}: want {w:?}, got {g:?}"),
            }
        }
    }

    #[test]
    fn wire_level_inputs() {
        let valid = base().encode_to_vec();
        let mut cases: Vec<(&str, Vec<u8>, bool)> = vec![
            ("valid", valid.clone(), true),
            ("empty input", vec![], false), // no string table
            ("truncated", valid[..valid.len() - 1].to_vec(), false),
            ("only a key", vec![0x0a], false),
            // field 9 (time_nanos) as LEN instead of VARINT
            (
                "wrong wire type",
                [&valid[..], &[0x4a, 0x00]].concat(),
                false,
            ),
            // field 2 (sample) as VARINT
            (
                "sample as varint",
                [&valid[..], &[0x10, 0x01]].concat(),
                false,
            ),
            // unknown field 100, every wire type
            (
                "unknown varint",
                [&valid[..], &[0xa0, 0x06, 0x05]].concat(),
                true,
            ),
            (
                "unknown fixed32",
                [&valid[..], &[0xa5, 0x06, 1, 2, 3, 4]].concat(),
                true,
            ),
            (
                "unknown group",
                [&valid[..], &[0xa3, 0x06, 0x08, 0x01, 0xa4, 0x06]].concat(),
                true,
            ),
            (
                "stray end group",
                [&valid[..], &[0xa4, 0x06]].concat(),
                false,
            ),
            ("field zero", [&valid[..], &[0x00, 0x00]].concat(), false),
            // A string that is not UTF-8.
            (
                "bad utf8",
                [&valid[..], &[0x32, 0x02, 0xff, 0xfe]].concat(),
                false,
            ),
            // Repeated scalars may come unpacked: comment (13) twice, unpacked, index 0.
            (
                "unpacked comments",
                [&valid[..], &[0x68, 0x00, 0x68, 0x00]].concat(),
                true,
            ),
            // Packed comments whose last varint runs past the field.
            (
                "overrunning packed",
                [&valid[..], &[0x6a, 0x01, 0x80]].concat(),
                false,
            ),
            // period_type twice: merged.
            (
                "period type twice",
                [&valid[..], &[0x5a, 0x02, 0x08, 0x00]].concat(),
                true,
            ),
        ];
        // A sample with unpacked location ids and values (4 types).
        let mut p = base();
        p.sample.truncate(1);
        let loc = p.sample[0].location_id[0];
        p.sample.clear();
        let mut raw = p.encode_to_vec();
        let mut s = vec![0x08];
        crate::pprof::wire::put_varint(&mut s, loc);
        s.extend_from_slice(&[0x10, 1, 0x10, 2, 0x10, 3, 0x10, 4]);
        raw.push(0x12);
        raw.push(s.len() as u8);
        raw.extend_from_slice(&s);
        cases.push(("unpacked sample", raw, true));
        for (name, bytes, ok) in cases {
            let got = both(&bytes);
            assert_eq!(got.is_ok(), ok, "{name}: {got:?}");
        }
    }
}
