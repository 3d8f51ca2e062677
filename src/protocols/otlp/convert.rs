//! pprof ⇄ OTLP profiles (v1development, dictionary tables): pprof → OTLP here, OTLP → pprof
//! in [`super::to_pprof`], attribute values as labels in [`super::labels`] (re-exported here).
//!
//! Everything that depends on the OTLP profiles schema is in these three files, so the next
//! revision of the proto (the signal is still "Development") is a change to them and the
//! .proto files.
//!
//! pprof → OTLP ([`RequestBuilder`]):
//! * One `ResourceProfiles` per pprof, its series labels as resource attributes (`service_name`
//!   becomes `service.name`; private `__*` labels are left out), with one `ScopeProfiles`
//!   (scope `scraper`) holding one OTLP `Profile` per pprof sample type, since an OTLP profile
//!   has exactly one.
//! * Strings, functions, mappings, locations, stacks and attributes go into the request-wide
//!   dictionary, deduplicated, each table starting with its zero value.
//! * Samples whose value for a type is 0 are left out of that type's profile; pprof labels
//!   become sample attributes (numeric ones keep their unit); a mapping's build id becomes the
//!   attribute `process.executable.build_id.gnu` (what Go's runtime/pprof records).
//! * Dropped, as the schema has no place for them: comments, `drop_frames`/`keep_frames`,
//!   `default_sample_type`, `doc_url`, `is_folded` and the mappings' `has_*` flags.
//!
//! OTLP → pprof ([`to_pprof`]) checks every index and returns one single-type pprof per OTLP
//! profile, keeping what pprof can hold ([`SampleLabels::Lossless`]): tests and the fake
//! Pyroscope use it for round trips. A receiver uses [`samples_to_pprof`] with
//! [`SampleLabels::Pyroscope`] and [`label_value`], which read attributes as Pyroscope's OTLP
//! ingestion does (see [`label_value`] for the source followed).

use std::collections::HashMap;

use thiserror::Error;

use super::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use super::proto::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use super::proto::profiles::v1development as otlp;
use super::proto::resource::v1::Resource;
use crate::pprof::proto as pprof;
use crate::profiles::Label;

pub use super::labels::{
    DroppedAttributes, DroppedKind, LabelValue, MAX_KEY_BYTES, Place, ValueKind, label_value,
};
pub use super::to_pprof::{
    Converted, SPAN_ID_LABEL, SampleLabels, TRACE_ID_LABEL, output_bytes, samples_to_pprof,
    to_pprof,
};

/// The resource attribute the `service_name` label becomes, and back.
pub const SERVICE_NAME_ATTRIBUTE: &str = "service.name";
/// Where a pprof mapping's build id goes.
pub const BUILD_ID_ATTRIBUTE: &str = "process.executable.build_id.gnu";
/// The instrumentation scope of everything we export.
pub const SCOPE_NAME: &str = "scraper";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConvertError {
    #[error("pprof {table} index {index} is out of range ({len} entries)")]
    PprofIndex {
        table: &'static str,
        index: i64,
        len: usize,
    },
    #[error("pprof {table} id {id} is not defined")]
    PprofId { table: &'static str, id: u64 },
    #[error("OTLP {table} index {index} is out of range ({len} entries)")]
    OtlpIndex {
        table: &'static str,
        index: i64,
        len: usize,
    },
    #[error("OTLP dictionary is missing")]
    NoDictionary,
    #[error("OTLP profile has no sample_type")]
    NoSampleType,
    #[error("OTLP sample has {got} values and {timestamps} timestamps")]
    SampleShape { got: usize, timestamps: usize },
    #[error("OTLP sample values overflow a 64-bit sum")]
    ValueOverflow,
    #[error("OTLP sample has neither values nor timestamps (a sample value is required)")]
    NoValue,
}

/// Entry `i` of an OTLP dictionary table, or the error naming the table: every index of a
/// received request is checked.
pub(super) fn get<'a, T>(
    table: &'static str,
    items: &'a [T],
    i: i64,
) -> Result<&'a T, ConvertError> {
    usize::try_from(i)
        .ok()
        .and_then(|u| items.get(u))
        .ok_or(ConvertError::OtlpIndex {
            table,
            index: i,
            len: items.len(),
        })
}

/// Attribute `a` of the dictionary and its key, both indices checked.
pub(super) fn keyed_attribute(
    dict: &otlp::ProfilesDictionary,
    a: i32,
) -> Result<(&otlp::KeyValueAndUnit, &str), ConvertError> {
    let kv = get("attribute_table", &dict.attribute_table, i64::from(a))?;
    let key = get("string_table", &dict.string_table, kv.key_strindex.into())?;
    Ok((kv, key.as_str()))
}

// ---------------------------------------------------------------------------------------------
// pprof → OTLP
// ---------------------------------------------------------------------------------------------

/// Attribute values as dictionary keys: we only ever write strings and integers.
#[derive(Clone, PartialEq, Eq, Hash)]
enum AttrValue {
    Str(String),
    Int(i64),
}

/// Dictionary keys: an entry's content, with the indices it refers to already resolved.
type MappingKey = (u64, u64, u64, i32, Vec<i32>);
type FunctionKey = (i32, i32, i32, i64);
/// (function, line, column)
type LineKey = (i32, i64, i64);
type LocationKey = (i32, u64, Vec<LineKey>);

#[derive(Default)]
struct Dictionary {
    strings: Vec<String>,
    string_index: HashMap<String, i32>,
    mappings: Vec<otlp::Mapping>,
    mapping_index: HashMap<MappingKey, i32>,
    functions: Vec<otlp::Function>,
    function_index: HashMap<FunctionKey, i32>,
    locations: Vec<otlp::Location>,
    location_index: HashMap<LocationKey, i32>,
    stacks: Vec<otlp::Stack>,
    stack_index: HashMap<Vec<i32>, i32>,
    attributes: Vec<otlp::KeyValueAndUnit>,
    attribute_index: HashMap<(i32, AttrValue, i32), i32>,
}

fn index(len: usize) -> i32 {
    // The tables are bounded by the pprof that fills them, whose own indices are at most i64;
    // a request past 2^31 entries cannot be encoded anyway (protobuf messages are < 2 GiB).
    i32::try_from(len).unwrap_or(i32::MAX)
}

impl Dictionary {
    fn new() -> Self {
        let mut d = Dictionary::default();
        d.string("");
        d.mappings.push(otlp::Mapping::default());
        d.functions.push(otlp::Function::default());
        d.locations.push(otlp::Location::default());
        d.stacks.push(otlp::Stack::default());
        d.attributes.push(otlp::KeyValueAndUnit::default());
        d
    }

    fn string(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.string_index.get(s) {
            return i;
        }
        let i = index(self.strings.len());
        self.strings.push(s.to_owned());
        self.string_index.insert(s.to_owned(), i);
        i
    }

    fn attribute(&mut self, key: &str, value: AttrValue, unit: &str) -> i32 {
        let key = self.string(key);
        let unit = if unit.is_empty() {
            0
        } else {
            self.string(unit)
        };
        let map_key = (key, value, unit);
        if let Some(&i) = self.attribute_index.get(&map_key) {
            return i;
        }
        let i = index(self.attributes.len());
        let value = match &map_key.1 {
            AttrValue::Str(s) => any_value::Value::StringValue(s.clone()),
            AttrValue::Int(n) => any_value::Value::IntValue(*n),
        };
        self.attributes.push(otlp::KeyValueAndUnit {
            key_strindex: key,
            value: Some(AnyValue { value: Some(value) }),
            unit_strindex: unit,
        });
        self.attribute_index.insert(map_key, i);
        i
    }

    fn into_proto(self) -> otlp::ProfilesDictionary {
        otlp::ProfilesDictionary {
            mapping_table: self.mappings,
            location_table: self.locations,
            function_table: self.functions,
            link_table: vec![otlp::Link::default()],
            string_table: self.strings,
            attribute_table: self.attributes,
            stack_table: self.stacks,
        }
    }
}

/// The pprof's tables, looked up by id and index with errors instead of panics.
struct Source<'a> {
    p: &'a pprof::Profile,
    functions: HashMap<u64, &'a pprof::Function>,
    mappings: HashMap<u64, &'a pprof::Mapping>,
    locations: HashMap<u64, &'a pprof::Location>,
}

impl<'a> Source<'a> {
    fn new(p: &'a pprof::Profile) -> Self {
        Source {
            p,
            functions: p.function.iter().map(|f| (f.id, f)).collect(),
            mappings: p.mapping.iter().map(|m| (m.id, m)).collect(),
            locations: p.location.iter().map(|l| (l.id, l)).collect(),
        }
    }

    fn string(&self, i: i64) -> Result<&'a str, ConvertError> {
        usize::try_from(i)
            .ok()
            .and_then(|u| self.p.string_table.get(u))
            .map(String::as_str)
            .ok_or(ConvertError::PprofIndex {
                table: "string_table",
                index: i,
                len: self.p.string_table.len(),
            })
    }
}

/// Converts the pprof tables a sample refers to, memoized per pprof id.
struct Translator<'a, 'd> {
    src: Source<'a>,
    dict: &'d mut Dictionary,
    mappings: HashMap<u64, i32>,
    functions: HashMap<u64, i32>,
    locations: HashMap<u64, i32>,
}

impl Translator<'_, '_> {
    fn mapping(&mut self, id: u64) -> Result<i32, ConvertError> {
        if id == 0 {
            return Ok(0);
        }
        if let Some(&i) = self.mappings.get(&id) {
            return Ok(i);
        }
        let m = *self.src.mappings.get(&id).ok_or(ConvertError::PprofId {
            table: "mapping",
            id,
        })?;
        let filename = self.src.string(m.filename)?;
        let build_id = self.src.string(m.build_id)?;
        let filename_strindex = self.dict.string(filename);
        let attribute_indices = if build_id.is_empty() {
            Vec::new()
        } else {
            vec![
                self.dict
                    .attribute(BUILD_ID_ATTRIBUTE, AttrValue::Str(build_id.to_owned()), ""),
            ]
        };
        let key = (
            m.memory_start,
            m.memory_limit,
            m.file_offset,
            filename_strindex,
            attribute_indices.clone(),
        );
        let i = match self.dict.mapping_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = index(self.dict.mappings.len());
                self.dict.mappings.push(otlp::Mapping {
                    memory_start: m.memory_start,
                    memory_limit: m.memory_limit,
                    file_offset: m.file_offset,
                    filename_strindex,
                    attribute_indices,
                });
                self.dict.mapping_index.insert(key, i);
                i
            }
        };
        self.mappings.insert(id, i);
        Ok(i)
    }

    fn function(&mut self, id: u64) -> Result<i32, ConvertError> {
        if let Some(&i) = self.functions.get(&id) {
            return Ok(i);
        }
        let f = *self.src.functions.get(&id).ok_or(ConvertError::PprofId {
            table: "function",
            id,
        })?;
        let key = (
            self.dict.string(self.src.string(f.name)?),
            self.dict.string(self.src.string(f.system_name)?),
            self.dict.string(self.src.string(f.filename)?),
            f.start_line,
        );
        let i = match self.dict.function_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = index(self.dict.functions.len());
                self.dict.functions.push(otlp::Function {
                    name_strindex: key.0,
                    system_name_strindex: key.1,
                    filename_strindex: key.2,
                    start_line: key.3,
                });
                self.dict.function_index.insert(key, i);
                i
            }
        };
        self.functions.insert(id, i);
        Ok(i)
    }

    fn location(&mut self, id: u64) -> Result<i32, ConvertError> {
        if let Some(&i) = self.locations.get(&id) {
            return Ok(i);
        }
        let l = *self.src.locations.get(&id).ok_or(ConvertError::PprofId {
            table: "location",
            id,
        })?;
        let mapping_index = self.mapping(l.mapping_id)?;
        let mut lines = Vec::with_capacity(l.line.len());
        for line in &l.line {
            lines.push((self.function(line.function_id)?, line.line, line.column));
        }
        let key = (mapping_index, l.address, lines);
        let i = match self.dict.location_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = index(self.dict.locations.len());
                self.dict.locations.push(otlp::Location {
                    mapping_index,
                    address: l.address,
                    lines: key
                        .2
                        .iter()
                        .map(|&(function_index, line, column)| otlp::Line {
                            function_index,
                            line,
                            column,
                        })
                        .collect(),
                    attribute_indices: Vec::new(),
                });
                self.dict.location_index.insert(key, i);
                i
            }
        };
        self.locations.insert(id, i);
        Ok(i)
    }

    fn stack(&mut self, location_ids: &[u64]) -> Result<i32, ConvertError> {
        let mut indices = Vec::with_capacity(location_ids.len());
        for &id in location_ids {
            indices.push(self.location(id)?);
        }
        if let Some(&i) = self.dict.stack_index.get(&indices) {
            return Ok(i);
        }
        let i = index(self.dict.stacks.len());
        self.dict.stacks.push(otlp::Stack {
            location_indices: indices.clone(),
        });
        self.dict.stack_index.insert(indices, i);
        Ok(i)
    }

    fn sample_attributes(&mut self, labels: &[pprof::Label]) -> Result<Vec<i32>, ConvertError> {
        let mut out = Vec::with_capacity(labels.len());
        for l in labels {
            let key = self.src.string(l.key)?;
            let i = if l.str != 0 {
                let value = self.src.string(l.str)?.to_owned();
                self.dict.attribute(key, AttrValue::Str(value), "")
            } else {
                let unit = self.src.string(l.num_unit)?;
                self.dict.attribute(key, AttrValue::Int(l.num), unit)
            };
            out.push(i);
        }
        Ok(out)
    }

    fn value_type(
        &mut self,
        vt: Option<&pprof::ValueType>,
    ) -> Result<otlp::ValueType, ConvertError> {
        let Some(vt) = vt else {
            return Ok(otlp::ValueType::default());
        };
        Ok(otlp::ValueType {
            type_strindex: self.dict.string(self.src.string(vt.r#type)?),
            unit_strindex: self.dict.string(self.src.string(vt.unit)?),
        })
    }
}

/// Builds one `ExportProfilesServiceRequest` from any number of pprofs.
pub struct RequestBuilder {
    dict: Dictionary,
    resources: Vec<otlp::ResourceProfiles>,
    scope: InstrumentationScope,
}

impl Default for RequestBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestBuilder {
    pub fn new() -> Self {
        RequestBuilder {
            dict: Dictionary::new(),
            resources: Vec::new(),
            scope: InstrumentationScope {
                name: SCOPE_NAME.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                ..InstrumentationScope::default()
            },
        }
    }

    /// Number of pprofs added so far.
    pub fn len(&self) -> usize {
        self.resources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// Adds one decoded pprof with its series labels. On error nothing is added (the
    /// dictionary may keep a few unused entries, which is harmless).
    pub fn add(&mut self, labels: &[Label], p: &pprof::Profile) -> Result<(), ConvertError> {
        let mut t = Translator {
            src: Source::new(p),
            dict: &mut self.dict,
            mappings: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
        };
        let period_type = t.value_type(p.period_type.as_ref())?;
        let mut profiles: Vec<otlp::Profile> = Vec::with_capacity(p.sample_type.len());
        for vt in &p.sample_type {
            profiles.push(otlp::Profile {
                sample_type: Some(t.value_type(Some(vt))?),
                time_unix_nano: u64::try_from(p.time_nanos).unwrap_or(0),
                duration_nano: u64::try_from(p.duration_nanos).unwrap_or(0),
                period_type: Some(period_type),
                period: p.period,
                ..otlp::Profile::default()
            });
        }
        for s in &p.sample {
            if s.value.iter().all(|&v| v == 0) {
                continue;
            }
            let stack_index = t.stack(&s.location_id)?;
            let attribute_indices = t.sample_attributes(&s.label)?;
            for (profile, &value) in profiles.iter_mut().zip(&s.value) {
                if value != 0 {
                    profile.samples.push(otlp::Sample {
                        stack_index,
                        attribute_indices: attribute_indices.clone(),
                        values: vec![value],
                        ..otlp::Sample::default()
                    });
                }
            }
        }
        let ordinal = self.resources.len() as u64;
        for (i, profile) in profiles.iter_mut().enumerate() {
            profile.profile_id = profile_id(labels, p, ordinal, i);
        }
        self.resources.push(otlp::ResourceProfiles {
            resource: Some(resource(labels)),
            scope_profiles: vec![otlp::ScopeProfiles {
                scope: Some(self.scope.clone()),
                profiles,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        });
        Ok(())
    }

    pub fn build(self) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest {
            resource_profiles: self.resources,
            dictionary: Some(self.dict.into_proto()),
        }
    }
}

/// Series labels as resource attributes.
fn resource(labels: &[Label]) -> Resource {
    let mut attributes: Vec<KeyValue> = labels
        .iter()
        .filter(|(name, _)| !name.starts_with("__"))
        .map(|(name, value)| KeyValue {
            key: if name == "service_name" {
                SERVICE_NAME_ATTRIBUTE.to_owned()
            } else {
                name.clone()
            },
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.clone())),
            }),
            key_strindex: 0,
        })
        .collect();
    attributes.sort_by(|a, b| a.key.cmp(&b.key));
    Resource {
        attributes,
        ..Resource::default()
    }
}

/// 16 bytes, never all zero (which the schema calls invalid), the same for the same input: a
/// retried export carries the same ids, so a backend can deduplicate it.
fn profile_id(labels: &[Label], p: &pprof::Profile, ordinal: u64, type_index: usize) -> Vec<u8> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for (n, v) in labels {
        h.update(n.as_bytes());
        h.update(&[0]);
        h.update(v.as_bytes());
        h.update(&[0]);
    }
    h.update(&p.time_nanos.to_le_bytes());
    h.update(&(p.sample.len() as u64).to_le_bytes());
    h.update(&ordinal.to_le_bytes());
    h.update(&(type_index as u64).to_le_bytes());
    let id = h.digest128().max(1);
    id.to_be_bytes().to_vec()
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
