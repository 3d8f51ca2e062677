//! pprof ⇄ OTLP profiles (v1development, dictionary tables).
//!
//! Everything that depends on the OTLP profiles schema is here, so the next revision of the
//! proto (the signal is still "Development") is a change to this file and the .proto files.
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

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use thiserror::Error;

use super::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use super::proto::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use super::proto::profiles::v1development as otlp;
use super::proto::resource::v1::Resource;
use crate::pprof::proto as pprof;
use crate::profiles::Label;

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

// ---------------------------------------------------------------------------------------------
// Attribute values as labels
// ---------------------------------------------------------------------------------------------

/// The kinds of attribute value that have no label form in Pyroscope's OTLP ingestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    Bool,
    Double,
    Bytes,
    /// An array of more than one value, or of one value that is neither a string nor an int.
    Array,
    Kvlist,
}

impl ValueKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ValueKind::Bool => "bool",
            ValueKind::Double => "double",
            ValueKind::Bytes => "bytes",
            ValueKind::Array => "array",
            ValueKind::Kvlist => "kvlist",
        }
    }
}

/// Where an attribute was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    Resource,
    Scope,
    Sample,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Resource => "resource",
            Place::Scope => "scope",
            Place::Sample => "sample",
        }
    }
}

/// What an attribute value is as a label.
#[derive(Debug, PartialEq, Eq)]
pub enum LabelValue<'a> {
    Text(Cow<'a, str>),
    /// No value, or an empty one: nothing is lost by leaving the label out.
    Absent,
    /// A value with content that has no label form: left out, and counted by the caller.
    Dropped(ValueKind),
}

/// An attribute value as the label value Pyroscope's OTLP ingestion makes of it, for resource,
/// scope and sample attributes alike. Followed: grafana/pyroscope v2.2.1 (unchanged on main at
/// 3fe6a457, 2026-08-21), `pkg/ingester/otlp/ingest_handler.go` `stringValueFromAnyValue` and
/// `decodeSingleAnyValue` (since #4988), used by `appendAttributesUnique` and
/// `getServiceNameFromAttributes` for resource and scope attributes and by
/// `convertSampleAttributesToLabelsBack` in `convert.go` for sample attributes:
/// * a string is itself, an int its decimal form (`strconv.FormatInt`);
/// * an array of exactly one string or int is that element, as above;
/// * bool, double, bytes, kvlist, other arrays give "" there, and an empty value means no label.
///
/// One difference: `string_value_strindex` (a string kept in the dictionary's string table) is
/// read as the string it stands for, where Pyroscope, whose switch has no case for it, drops
/// it; an index out of the table is an error, like every other dictionary index.
pub fn label_value<'a>(
    value: Option<&'a AnyValue>,
    strings: &'a [String],
) -> Result<LabelValue<'a>, ConvertError> {
    let Some(value) = value.and_then(|v| v.value.as_ref()) else {
        return Ok(LabelValue::Absent);
    };
    if let any_value::Value::ArrayValue(a) = value {
        return match a.values.as_slice() {
            [] => Ok(LabelValue::Absent),
            [one] => Ok(match single_value(one.value.as_ref(), strings)? {
                LabelValue::Dropped(_) => LabelValue::Dropped(ValueKind::Array),
                v => v,
            }),
            _ => Ok(LabelValue::Dropped(ValueKind::Array)),
        };
    }
    single_value(Some(value), strings)
}

/// A value that is not an array, or an array's only element (a nested array is dropped).
fn single_value<'a>(
    value: Option<&'a any_value::Value>,
    strings: &'a [String],
) -> Result<LabelValue<'a>, ConvertError> {
    use any_value::Value;
    let text = |s: &'a str| {
        if s.is_empty() {
            LabelValue::Absent
        } else {
            LabelValue::Text(Cow::Borrowed(s))
        }
    };
    Ok(match value {
        None => LabelValue::Absent,
        Some(Value::StringValue(s)) => text(s),
        Some(Value::StringValueStrindex(i)) => {
            text(get("string_table", strings, i64::from(*i))?.as_str())
        }
        Some(Value::IntValue(n)) => LabelValue::Text(Cow::Owned(n.to_string())),
        Some(Value::BoolValue(_)) => LabelValue::Dropped(ValueKind::Bool),
        Some(Value::DoubleValue(_)) => LabelValue::Dropped(ValueKind::Double),
        Some(Value::BytesValue(b)) if b.is_empty() => LabelValue::Absent,
        Some(Value::BytesValue(_)) => LabelValue::Dropped(ValueKind::Bytes),
        Some(Value::KvlistValue(l)) if l.values.is_empty() => LabelValue::Absent,
        Some(Value::KvlistValue(_)) => LabelValue::Dropped(ValueKind::Kvlist),
        Some(Value::ArrayValue(a)) if a.values.is_empty() => LabelValue::Absent,
        Some(Value::ArrayValue(_)) => LabelValue::Dropped(ValueKind::Array),
    })
}

/// Attributes left out of the labels for want of a label form ([`LabelValue::Dropped`]), per
/// place and kind: a receiver counts and reports them (Pyroscope drops them silently).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DroppedAttributes {
    pub counts: BTreeMap<(Place, ValueKind), u64>,
    /// The first one's key, for the warning.
    pub first_key: Option<String>,
}

impl DroppedAttributes {
    pub fn add(&mut self, place: Place, kind: ValueKind, key: &str) {
        *self.counts.entry((place, kind)).or_insert(0) += 1;
        if self.first_key.is_none() {
            self.first_key = Some(key.to_owned());
        }
    }

    pub fn merge(&mut self, other: DroppedAttributes) {
        for (k, n) in other.counts {
            *self.counts.entry(k).or_insert(0) += n;
        }
        if self.first_key.is_none() {
            self.first_key = other.first_key;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.values().fold(0u64, |a, n| a.saturating_add(*n))
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
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

// ---------------------------------------------------------------------------------------------
// OTLP → pprof
// ---------------------------------------------------------------------------------------------

/// One OTLP profile as a pprof with a single sample type, and its resource's attributes as
/// labels (`service.name` back to `service_name`).
#[derive(Debug)]
pub struct Converted {
    pub labels: Vec<Label>,
    pub profile: pprof::Profile,
}

fn get<'a, T>(table: &'static str, items: &'a [T], i: i64) -> Result<&'a T, ConvertError> {
    usize::try_from(i)
        .ok()
        .and_then(|u| items.get(u))
        .ok_or(ConvertError::OtlpIndex {
            table,
            index: i,
            len: items.len(),
        })
}

/// Rebuilds pprof string/function/mapping/location tables from the dictionary, on demand.
struct Rebuild<'a> {
    dict: &'a otlp::ProfilesDictionary,
    p: pprof::Profile,
    strings: HashMap<i32, i64>,
    functions: HashMap<i32, u64>,
    mappings: HashMap<i32, u64>,
    locations: HashMap<i32, u64>,
    /// Each attribute resolved once: a large attribute shared by many samples is copied into
    /// the string table once, not once per sample (as Pyroscope's `addstr` does).
    labels: HashMap<i32, Resolved>,
    /// A link's labels, made once per link like the attributes.
    links: HashMap<i32, Vec<pprof::Label>>,
    rule: SampleLabels,
}

/// How sample attributes become pprof labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleLabels {
    /// Everything pprof can hold: strings as string labels (empty ones too), ints and bools as
    /// numeric labels with their unit; other kinds are left out. For round trips.
    Lossless,
    /// As Pyroscope's OTLP ingestion makes them ([`label_value`]): string labels only, empty
    /// values and kinds without a label form left out, and a sample's link as `span_id` and
    /// `trace_id` labels (`convertSampleAttributesToLabelsBack` in
    /// `pkg/ingester/otlp/convert.go`, grafana/pyroscope v2.2.1).
    Pyroscope,
}

/// Pyroscope's names for a sample's trace link (`pkg/pprof/pprof.go`, `SpanIDLabelName`,
/// `TraceIDLabelName`).
pub const SPAN_ID_LABEL: &str = "span_id";
pub const TRACE_ID_LABEL: &str = "trace_id";

/// One attribute as a pprof label, or why it is none.
#[derive(Clone, Copy)]
enum Resolved {
    Label(pprof::Label),
    Absent,
    Dropped(ValueKind),
}

/// Lowercase hex, as Go's `hex.EncodeToString`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

impl<'a> Rebuild<'a> {
    fn new(dict: &'a otlp::ProfilesDictionary, rule: SampleLabels) -> Self {
        let mut r = Rebuild {
            dict,
            p: pprof::Profile {
                string_table: vec![String::new()],
                ..pprof::Profile::default()
            },
            strings: HashMap::new(),
            functions: HashMap::new(),
            mappings: HashMap::new(),
            locations: HashMap::new(),
            labels: HashMap::new(),
            links: HashMap::new(),
            rule,
        };
        r.strings.insert(0, 0);
        r
    }

    fn string(&mut self, i: i32) -> Result<i64, ConvertError> {
        if let Some(&s) = self.strings.get(&i) {
            return Ok(s);
        }
        let text = get("string_table", &self.dict.string_table, i64::from(i))?;
        let s = self.p.string_table.len() as i64;
        self.p.string_table.push(text.clone());
        self.strings.insert(i, s);
        Ok(s)
    }

    fn string_value(&mut self, text: &str) -> i64 {
        let s = self.p.string_table.len() as i64;
        self.p.string_table.push(text.to_owned());
        s
    }

    fn function(&mut self, i: i32) -> Result<u64, ConvertError> {
        if let Some(&id) = self.functions.get(&i) {
            return Ok(id);
        }
        let f = get("function_table", &self.dict.function_table, i64::from(i))?;
        let id = self.p.function.len() as u64 + 1;
        let function = pprof::Function {
            id,
            name: self.string(f.name_strindex)?,
            system_name: self.string(f.system_name_strindex)?,
            filename: self.string(f.filename_strindex)?,
            start_line: f.start_line,
        };
        self.p.function.push(function);
        self.functions.insert(i, id);
        Ok(id)
    }

    fn mapping(&mut self, i: i32) -> Result<u64, ConvertError> {
        if i == 0 {
            return Ok(0);
        }
        if let Some(&id) = self.mappings.get(&i) {
            return Ok(id);
        }
        let m = get("mapping_table", &self.dict.mapping_table, i64::from(i))?;
        let mut build_id = 0;
        for &a in &m.attribute_indices {
            let kv = get("attribute_table", &self.dict.attribute_table, i64::from(a))?;
            let key = get(
                "string_table",
                &self.dict.string_table,
                kv.key_strindex.into(),
            )?;
            if key == BUILD_ID_ATTRIBUTE
                && let Some(text) = self.attribute_text(kv)?
            {
                build_id = self.string_value(&text);
            }
        }
        let id = self.p.mapping.len() as u64 + 1;
        let mapping = pprof::Mapping {
            id,
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename: self.string(m.filename_strindex)?,
            build_id,
            ..pprof::Mapping::default()
        };
        self.p.mapping.push(mapping);
        self.mappings.insert(i, id);
        Ok(id)
    }

    fn location(&mut self, i: i32) -> Result<u64, ConvertError> {
        if let Some(&id) = self.locations.get(&i) {
            return Ok(id);
        }
        let l = get("location_table", &self.dict.location_table, i64::from(i))?;
        let mapping_id = self.mapping(l.mapping_index)?;
        let mut line = Vec::with_capacity(l.lines.len());
        for ln in &l.lines {
            line.push(pprof::Line {
                function_id: self.function(ln.function_index)?,
                line: ln.line,
                column: ln.column,
            });
        }
        let id = self.p.location.len() as u64 + 1;
        self.p.location.push(pprof::Location {
            id,
            mapping_id,
            address: l.address,
            line,
            is_folded: false,
        });
        self.locations.insert(i, id);
        Ok(id)
    }

    /// A string attribute's text (plain or through the string table); `None` for other kinds.
    fn attribute_text(&self, kv: &otlp::KeyValueAndUnit) -> Result<Option<String>, ConvertError> {
        Ok(match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => Some(s.clone()),
            Some(any_value::Value::StringValueStrindex(i)) => {
                Some(get("string_table", &self.dict.string_table, i64::from(*i))?.clone())
            }
            _ => None,
        })
    }

    /// Attribute `a` as a pprof label; a dropped one is counted in `dropped` each time a
    /// sample refers to it.
    fn label(
        &mut self,
        a: i32,
        dropped: &mut DroppedAttributes,
    ) -> Result<Option<pprof::Label>, ConvertError> {
        let resolved = match self.labels.get(&a) {
            Some(r) => *r,
            None => {
                let r = self.resolve_label(a)?;
                self.labels.insert(a, r);
                r
            }
        };
        Ok(match resolved {
            Resolved::Label(l) => Some(l),
            Resolved::Absent => None,
            Resolved::Dropped(kind) => {
                let kv = get("attribute_table", &self.dict.attribute_table, i64::from(a))?;
                let key = get(
                    "string_table",
                    &self.dict.string_table,
                    kv.key_strindex.into(),
                )?;
                dropped.add(Place::Sample, kind, key);
                None
            }
        })
    }

    fn resolve_label(&mut self, a: i32) -> Result<Resolved, ConvertError> {
        let kv = get("attribute_table", &self.dict.attribute_table, i64::from(a))?;
        let key = self.string(kv.key_strindex)?;
        if self.rule == SampleLabels::Pyroscope {
            let text = match label_value(kv.value.as_ref(), &self.dict.string_table)? {
                LabelValue::Text(t) => t.into_owned(),
                LabelValue::Absent => return Ok(Resolved::Absent),
                LabelValue::Dropped(kind) => return Ok(Resolved::Dropped(kind)),
            };
            let str = self.string_value(&text);
            return Ok(Resolved::Label(pprof::Label {
                key,
                str,
                ..pprof::Label::default()
            }));
        }
        if let Some(text) = self.attribute_text(kv)? {
            let str = self.string_value(&text);
            return Ok(Resolved::Label(pprof::Label {
                key,
                str,
                ..pprof::Label::default()
            }));
        }
        let num = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::IntValue(n)) => *n,
            Some(any_value::Value::BoolValue(b)) => i64::from(*b),
            // Doubles, bytes, arrays and maps have no pprof label form.
            _ => return Ok(Resolved::Absent),
        };
        Ok(Resolved::Label(pprof::Label {
            key,
            num,
            num_unit: self.string(kv.unit_strindex)?,
            ..pprof::Label::default()
        }))
    }

    /// A sample's trace link as Pyroscope labels it: `span_id` (hex), and `trace_id` (hex)
    /// when it has the 16 bytes of a trace id. An empty span id gives no label (Pyroscope
    /// writes an empty one, which is no label in a series either).
    fn link_labels(&mut self, i: i32, out: &mut Vec<pprof::Label>) -> Result<(), ConvertError> {
        if let Some(labels) = self.links.get(&i) {
            out.extend_from_slice(labels);
            return Ok(());
        }
        let link = get("link_table", &self.dict.link_table, i64::from(i))?;
        let mut labels = Vec::with_capacity(2);
        if !link.span_id.is_empty() {
            let key = self.string_value(SPAN_ID_LABEL);
            let str = self.string_value(&hex(&link.span_id));
            labels.push(pprof::Label {
                key,
                str,
                ..pprof::Label::default()
            });
        }
        if link.trace_id.len() == 16 {
            let key = self.string_value(TRACE_ID_LABEL);
            let str = self.string_value(&hex(&link.trace_id));
            labels.push(pprof::Label {
                key,
                str,
                ..pprof::Label::default()
            });
        }
        out.extend_from_slice(&labels);
        self.links.insert(i, labels);
        Ok(())
    }
}

fn resource_labels(resource: Option<&Resource>) -> Vec<Label> {
    let mut labels: Vec<Label> = resource
        .map(|r| r.attributes.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(
            |kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => Some((kv.key.clone(), s.clone())),
                Some(any_value::Value::IntValue(n)) => Some((kv.key.clone(), n.to_string())),
                _ => None,
            },
        )
        .map(|(key, value)| {
            let name = if key == SERVICE_NAME_ATTRIBUTE {
                "service_name".to_owned()
            } else {
                key
            };
            (name, value)
        })
        .collect();
    labels.sort();
    labels
}

/// The sum of outside values, refused rather than wrapped (or a panic in debug builds).
fn checked_sum(values: &[i64]) -> Result<i64, ConvertError> {
    values
        .iter()
        .try_fold(0i64, |acc, &v| acc.checked_add(v))
        .ok_or(ConvertError::ValueOverflow)
}

/// Bytes the pprof samples built from `samples` take, before any is built: a location id per
/// frame of each sample's stack and a label per attribute (two for a link), each sample holding
/// its own copy (the OTLP dictionary shares a stack among samples, pprof does not).
/// Out-of-range indices count as nothing here (the conversion reports them). Saturates.
pub fn output_bytes<'a>(
    dict: &otlp::ProfilesDictionary,
    samples: impl IntoIterator<Item = &'a otlp::Sample>,
) -> u64 {
    const SAMPLE: u64 = 96;
    const LOCATION_ID: u64 = 8;
    const LABEL: u64 = 32;
    let mut total: u64 = 0;
    for s in samples {
        let frames = usize::try_from(s.stack_index)
            .ok()
            .and_then(|i| dict.stack_table.get(i))
            .map_or(0, |st| st.location_indices.len() as u64);
        // A link adds up to two labels (span and trace id).
        let links = if s.link_index != 0 { 2 } else { 0 };
        let labels = (s.attribute_indices.len() as u64).saturating_add(links);
        total = total
            .saturating_add(SAMPLE)
            .saturating_add(frames.saturating_mul(LOCATION_ID))
            .saturating_add(labels.saturating_mul(LABEL));
    }
    total
}

/// Every profile of the request as a single-type pprof.
pub fn to_pprof(req: &ExportProfilesServiceRequest) -> Result<Vec<Converted>, ConvertError> {
    let dict = req.dictionary.as_ref().ok_or(ConvertError::NoDictionary)?;
    let mut out = Vec::new();
    for rp in &req.resource_profiles {
        let labels = resource_labels(rp.resource.as_ref());
        for sp in &rp.scope_profiles {
            for prof in &sp.profiles {
                let profile = profile_to_pprof(dict, prof)?;
                out.push(Converted {
                    labels: labels.clone(),
                    profile,
                });
            }
        }
    }
    Ok(out)
}

fn profile_to_pprof(
    dict: &otlp::ProfilesDictionary,
    prof: &otlp::Profile,
) -> Result<pprof::Profile, ConvertError> {
    let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
    let mut dropped = DroppedAttributes::default();
    samples_to_pprof(
        dict,
        prof,
        &samples,
        SampleLabels::Lossless,
        &[],
        &mut dropped,
    )
}

/// `prof` reduced to `samples` (some of its samples: a receiver splits a profile by a sample
/// attribute) as a single-type pprof, its labels made by `rule`; sample attributes whose key
/// is in `skip` do not become pprof labels, and those dropped for their kind are counted in
/// `dropped`.
pub fn samples_to_pprof(
    dict: &otlp::ProfilesDictionary,
    prof: &otlp::Profile,
    samples: &[&otlp::Sample],
    rule: SampleLabels,
    skip: &[&str],
    dropped: &mut DroppedAttributes,
) -> Result<pprof::Profile, ConvertError> {
    let mut r = Rebuild::new(dict, rule);
    let st = prof
        .sample_type
        .as_ref()
        .ok_or(ConvertError::NoSampleType)?;
    let sample_type = pprof::ValueType {
        r#type: r.string(st.type_strindex)?,
        unit: r.string(st.unit_strindex)?,
    };
    let period_type = match &prof.period_type {
        Some(pt) => Some(pprof::ValueType {
            r#type: r.string(pt.type_strindex)?,
            unit: r.string(pt.unit_strindex)?,
        }),
        None => None,
    };
    let mut out = Vec::with_capacity(samples.len());
    for s in samples.iter().copied() {
        // Values only, or one value per timestamp; timestamps alone count one each.
        let value: i64 = match (s.values.len(), s.timestamps_unix_nano.len()) {
            (0, 0) => return Err(ConvertError::NoValue),
            (_, 0) => checked_sum(&s.values)?,
            (0, n) => i64::try_from(n).unwrap_or(i64::MAX),
            (v, t) if v == t => checked_sum(&s.values)?,
            (got, timestamps) => return Err(ConvertError::SampleShape { got, timestamps }),
        };
        // A reference out of the link table is a broken request, whether or not the rule
        // labels links. (0 is "no link", valid even when the table is empty.)
        if s.link_index != 0 {
            get("link_table", &dict.link_table, i64::from(s.link_index))?;
        }
        let stack = get("stack_table", &dict.stack_table, i64::from(s.stack_index))?;
        let mut location_id = Vec::with_capacity(stack.location_indices.len());
        for &l in &stack.location_indices {
            location_id.push(r.location(l)?);
        }
        let mut label = Vec::with_capacity(s.attribute_indices.len());
        for &a in &s.attribute_indices {
            if !skip.is_empty() {
                let kv = get("attribute_table", &dict.attribute_table, i64::from(a))?;
                let key = get("string_table", &dict.string_table, kv.key_strindex.into())?;
                if skip.contains(&key.as_str()) {
                    continue;
                }
            }
            if let Some(l) = r.label(a, dropped)? {
                label.push(l);
            }
        }
        if rule == SampleLabels::Pyroscope && s.link_index != 0 {
            r.link_labels(s.link_index, &mut label)?;
        }
        out.push(pprof::Sample {
            location_id,
            value: vec![value],
            label,
        });
    }
    let mut p = r.p;
    p.sample_type = vec![sample_type];
    p.sample = out;
    p.period_type = period_type;
    p.period = prof.period;
    p.time_nanos = i64::try_from(prof.time_unix_nano).unwrap_or(i64::MAX);
    p.duration_nanos = i64::try_from(prof.duration_nano).unwrap_or(i64::MAX);
    Ok(p)
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
