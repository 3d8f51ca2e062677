//! A profile's stacks read straight from its bytes, for readers that only walk samples
//! (flame graphs, totals): the zero-copy decoder (`view`) validates the tables once and reads
//! samples one at a time, where [`super::decode`] validates, then builds a `Profile` tree of
//! allocations, then validates again. For a window of hundreds of profiles that is most of a
//! query's time.

use super::codec::{Inflater, Limits, is_gzip};
use super::error::Result;
use super::view::{SampleBuf, Tables};

/// One profile at a time; reuse it across profiles to keep its buffers.
#[derive(Debug, Default)]
pub struct RawStacks {
    inflater: Inflater,
    data: Vec<u8>,
    tables: Tables,
    sample: SampleBuf,
}

/// One location: its address and its lines' function indexes (into
/// [`RawStacks::function_names`]), inlined callee first as pprof lists them.
#[derive(Debug, Clone, Copy)]
pub struct RawLocation<'a> {
    pub id: u64,
    pub address: u64,
    tables: &'a Tables,
    start: usize,
    end: usize,
}

impl<'a> RawLocation<'a> {
    pub fn functions(&self) -> impl DoubleEndedIterator<Item = usize> + 'a {
        self.tables
            .lines
            .get(self.start..self.end)
            .unwrap_or_default()
            .iter()
            .map(|l| l.function as usize)
    }

    pub fn has_lines(&self) -> bool {
        self.end > self.start
    }
}

impl RawStacks {
    pub fn new() -> RawStacks {
        RawStacks::default()
    }

    /// Decompresses (when gzip) and parses `input`, checking every table; samples are checked
    /// as they are read.
    pub fn load(&mut self, input: &[u8], limits: &Limits) -> Result<()> {
        self.inflater.raw(input, limits, &mut self.data)?;
        if !is_gzip(input) {
            self.data.clear();
            self.data.extend_from_slice(input);
        }
        self.tables.parse(&self.data)
    }

    pub fn time_nanos(&self) -> i64 {
        self.tables.time_nanos
    }

    /// How long the loaded profile covers (`duration_nanos`; 0 when not set).
    pub fn duration_nanos(&self) -> i64 {
        self.tables.duration_nanos
    }

    /// `(type, unit)` of every sample type.
    pub fn sample_types(&self) -> Vec<(&str, &str)> {
        self.tables
            .sample_types
            .iter()
            .map(|vt| {
                (
                    self.tables.str(&self.data, vt.ty),
                    self.tables.str(&self.data, vt.unit),
                )
            })
            .collect()
    }

    /// Function names, in table order.
    pub fn function_names(&self) -> impl Iterator<Item = &str> {
        self.tables
            .functions
            .iter()
            .map(|f| self.tables.str(&self.data, f.name))
    }

    pub fn location_count(&self) -> usize {
        self.tables.locations.len()
    }

    /// Location number `i` in table order.
    pub fn location(&self, i: usize) -> Option<RawLocation<'_>> {
        let loc = self.tables.locations.get(i)?;
        Some(RawLocation {
            id: loc.id,
            address: loc.address,
            tables: &self.tables,
            start: loc.lines_start as usize,
            end: loc.lines_end as usize,
        })
    }

    /// Points every line of every location at function index `index`: for tests of readers
    /// facing an index the checked tables would never hold.
    #[cfg(test)]
    pub(crate) fn set_line_functions(&mut self, index: u32) {
        for line in &mut self.tables.lines {
            line.function = index;
        }
    }

    pub fn sample_count(&self) -> usize {
        self.tables.samples.len()
    }

    /// Sample `i`: its location indexes (table order, leaf first) and values.
    pub fn read_sample(&mut self, i: usize) -> Result<(&[u32], &[i64])> {
        self.tables.read_sample(&self.data, i, &mut self.sample)?;
        Ok((&self.sample.locations, &self.sample.values))
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};

    #[test]
    fn reads_what_the_prost_tree_holds() {
        let p = Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample: vec![Sample {
                location_id: vec![2, 1],
                value: vec![7],
                label: vec![],
            }],
            location: vec![
                Location {
                    id: 1,
                    address: 0x10,
                    line: vec![Line {
                        function_id: 1,
                        line: 3,
                        column: 0,
                    }],
                    ..Default::default()
                },
                Location {
                    id: 2,
                    address: 0x20,
                    ..Default::default()
                },
            ],
            function: vec![Function {
                id: 1,
                name: 3,
                ..Default::default()
            }],
            string_table: ["", "cpu", "nanoseconds", "main"]
                .map(String::from)
                .to_vec(),
            time_nanos: 42,
            ..Default::default()
        };
        let raw = p.encode_to_vec();
        for input in [raw.clone(), crate::pprof::gzip(&raw, 1)] {
            let mut r = RawStacks::new();
            r.load(&input, &Limits::default()).expect("loads");
            assert_eq!(r.time_nanos(), 42);
            assert_eq!(r.sample_types(), [("cpu", "nanoseconds")]);
            assert_eq!(r.function_names().collect::<Vec<_>>(), ["main"]);
            let l0 = r.location(0).expect("location");
            assert_eq!(l0.functions().collect::<Vec<_>>(), [0]);
            assert!(!r.location(1).expect("location").has_lines());
            let (locs, values) = r.read_sample(0).expect("sample");
            assert_eq!((locs, values), (&[1u32, 0][..], &[7i64][..]));
        }
        let mut r = RawStacks::new();
        assert!(r.load(b"\xff\xff", &Limits::default()).is_err());
    }
}
