//! Test helper: builds small profiles from function-name stacks. A function's location gets the
//! same address and line in every profile built, whatever ids it is given, so tests can check
//! that stacks are matched by what they resolve to rather than by ids. Where the lines matter
//! (Go PGO), [`B::frames`] takes them from the test, inlined frames included.

use std::collections::HashMap;

use prost::Message as _;

use super::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

pub(crate) struct B {
    p: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<String, u64>,
    locations: HashMap<String, u64>,
    /// Locations made by [`B::frames`], keyed by their `(function, line)` pairs.
    frame_locations: HashMap<Vec<(String, i64)>, u64>,
    id_base: u64,
}

const MAP_START: u64 = 0x40_0000;

/// Every function's start line: a different one per name length, so that a start line copied
/// to the wrong function shows.
pub(crate) fn start_line(name: &str) -> i64 {
    name.len() as i64 * 10
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

impl B {
    pub(crate) fn new(types: &[(&str, &str)]) -> B {
        let mut b = B {
            p: Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
            frame_locations: HashMap::new(),
            id_base: 1,
        };
        b.s("");
        for (ty, unit) in types {
            let vt = ValueType {
                r#type: b.s(ty),
                unit: b.s(unit),
            };
            b.p.sample_type.push(vt);
        }
        b.p.period_type = Some(ValueType {
            r#type: b.s("space"),
            unit: b.s("bytes"),
        });
        b.p.period = 524288;
        b.p.time_nanos = 1_000_000_000;
        let (filename, build_id) = (b.s("/bin/app"), b.s("build-1"));
        b.p.mapping.push(Mapping {
            id: 1,
            memory_start: MAP_START,
            memory_limit: MAP_START + 0x10_0000,
            filename,
            build_id,
            has_functions: true,
            ..Mapping::default()
        });
        b
    }

    /// Ids of functions and locations start at `base` (and count down from there for
    /// locations), so two builders number the same stack differently.
    pub(crate) fn ids_from(mut self, base: u64) -> B {
        self.id_base = base;
        self
    }

    pub(crate) fn time(mut self, t: i64) -> B {
        self.p.time_nanos = t;
        self
    }

    pub(crate) fn period(mut self, period: i64) -> B {
        self.p.period = period;
        self
    }

    /// The period type and period (the default is a heap profile's `space/bytes`, 524288).
    pub(crate) fn period_type(mut self, ty: &str, unit: &str, period: i64) -> B {
        self.p.period_type = Some(ValueType {
            r#type: self.s(ty),
            unit: self.s(unit),
        });
        self.p.period = period;
        self
    }

    pub(crate) fn duration(mut self, nanos: i64) -> B {
        self.p.duration_nanos = nanos;
        self
    }

    pub(crate) fn build_id(mut self, id: &str) -> B {
        let i = self.s(id);
        self.p.mapping[0].build_id = i;
        self
    }

    fn s(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.p.string_table.len() as i64;
        self.p.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    fn function(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.functions.get(name) {
            return id;
        }
        let id = self.id_base + self.p.function.len() as u64 * 3;
        let (n, f) = (self.s(name), self.s(&format!("{name}.go")));
        self.p.function.push(Function {
            id,
            name: n,
            system_name: n,
            filename: f,
            start_line: start_line(name),
        });
        self.functions.insert(name.to_owned(), id);
        id
    }

    /// Pushes a location with `line` at an address derived from `key`; its id counts down.
    fn push_location(&mut self, key: &str, line: Vec<Line>) -> u64 {
        // Ids count down from `id_base * 7 + 1000`; a profile with more locations than that
        // needs a larger `ids_from`.
        let id = (self.id_base * 7 + 1000)
            .checked_sub(self.p.location.len() as u64)
            .filter(|id| *id > 0)
            .expect("more locations than ids below the base: use ids_from with a larger base");
        self.p.location.push(Location {
            id,
            mapping_id: 1,
            address: MAP_START + (fnv(key) % 0x1_0000) * 16,
            line,
            is_folded: false,
        });
        id
    }

    fn location(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.locations.get(name) {
            return id;
        }
        let line = vec![Line {
            function_id: self.function(name),
            line: (fnv(name) % 1000) as i64 + 1,
            column: 0,
        }];
        let id = self.push_location(name, line);
        self.locations.insert(name.to_owned(), id);
        id
    }

    /// The location of a frame given as `(function, line)` pairs, inlined callee first. Its
    /// lines have column 3, so that a column lost on the way shows.
    fn frame_location(&mut self, frame: &[(&str, i64)]) -> u64 {
        let key: Vec<(String, i64)> = frame.iter().map(|&(f, l)| (f.to_owned(), l)).collect();
        if let Some(&id) = self.frame_locations.get(&key) {
            return id;
        }
        let line = frame
            .iter()
            .map(|&(name, line)| Line {
                function_id: self.function(name),
                line,
                column: 3,
            })
            .collect();
        let text: Vec<String> = key.iter().map(|(f, l)| format!("{f}:{l}")).collect();
        let id = self.push_location(&text.join("+"), line);
        self.frame_locations.insert(key, id);
        id
    }

    /// A sample with `stack` (leaf first) and `values`.
    pub(crate) fn sample(self, stack: &[&str], values: &[i64]) -> B {
        self.labeled(stack, values, &[])
    }

    pub(crate) fn labeled(mut self, stack: &[&str], values: &[i64], labels: &[(&str, &str)]) -> B {
        let location_id = stack.iter().map(|f| self.location(f)).collect();
        self.push_sample(location_id, values, labels);
        self
    }

    fn push_sample(&mut self, location_id: Vec<u64>, values: &[i64], labels: &[(&str, &str)]) {
        let label = labels
            .iter()
            .map(|(k, v)| Label {
                key: self.s(k),
                str: self.s(v),
                ..Label::default()
            })
            .collect();
        self.p.sample.push(Sample {
            location_id,
            value: values.to_vec(),
            label,
        });
    }

    /// A sample whose frames (leaf first) say their lines: each frame is `(function, line)`
    /// pairs, inlined callee first (`&[("f", 12)]` for a frame of one line). Equal frames share
    /// a location; a function is the same whether reached here or through [`B::sample`].
    pub(crate) fn frames(
        mut self,
        stack: &[&[(&str, i64)]],
        values: &[i64],
        labels: &[(&str, &str)],
    ) -> B {
        let location_id = stack.iter().map(|f| self.frame_location(f)).collect();
        self.push_sample(location_id, values, labels);
        self
    }

    pub(crate) fn build(self) -> Profile {
        self.p
    }

    pub(crate) fn raw(self) -> Vec<u8> {
        self.p.encode_to_vec()
    }
}

pub(crate) const HEAP: &[(&str, &str)] = &[
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// Decodes a raw or gzipped profile produced by our code (panics: test helper).
pub(crate) fn decode(bytes: &[u8]) -> Profile {
    super::codec::decode(bytes, &super::codec::Limits::default()).expect("valid profile")
}
