//! OTLP → pprof: each OTLP profile as a single-type pprof, every dictionary index checked.
//!
//! [`to_pprof`] keeps what pprof can hold ([`SampleLabels::Lossless`]): tests and the fake
//! Pyroscope use it for round trips. A receiver uses [`samples_to_pprof`] with
//! [`SampleLabels::Pyroscope`], which reads attributes as Pyroscope's OTLP ingestion does
//! ([`label_value`]) and labels a sample's trace link, after measuring what the conversion
//! will take with [`output_bytes`].

use std::collections::HashMap;

use super::convert::{
    BUILD_ID_ATTRIBUTE, ConvertError, SERVICE_NAME_ATTRIBUTE, get, keyed_attribute,
};
use super::labels::{DroppedAttributes, LabelValue, Place, ValueKind, label_value, string_index};
use super::pprof_strings::PprofStrings;
use super::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use super::proto::common::v1::{AnyValue, any_value};
use super::proto::profiles::v1development as otlp;
use super::proto::resource::v1::Resource;
use crate::pprof::proto as pprof;
use crate::profiles::Label;

/// One OTLP profile as a pprof with a single sample type, and its resource's attributes as
/// labels (`service.name` back to `service_name`).
#[derive(Debug)]
pub struct Converted {
    pub labels: Vec<Label>,
    pub profile: pprof::Profile,
}

/// Rebuilds pprof string/function/mapping/location tables from the dictionary, on demand.
struct Rebuild<'a> {
    dict: &'a otlp::ProfilesDictionary,
    /// The pprof being built, but for its string table: `table`.
    p: pprof::Profile,
    /// Every string, each once (dictionary strings, attribute values, link ids alike).
    table: PprofStrings,
    /// Dictionary string index → pprof string index, so a string is hashed once.
    strings: HashMap<i32, i64>,
    functions: HashMap<i32, u64>,
    mappings: HashMap<i32, u64>,
    locations: HashMap<i32, u64>,
    /// Each attribute resolved once (its strings are in `table` once anyway; this saves
    /// reading and hashing a large value once per sample).
    labels: HashMap<i32, Resolved>,
    /// A link's labels, made once per link like the attributes.
    links: HashMap<i32, Vec<pprof::Label>>,
    /// String attribute index → pprof string index, for build ids (see `attribute_string`).
    attribute_strings: HashMap<i32, i64>,
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
/// The lengths of the ids a link is labelled with; other lengths give no label.
const SPAN_ID_BYTES: usize = 8;
const TRACE_ID_BYTES: usize = 16;

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
            p: pprof::Profile::default(),
            table: PprofStrings::new(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            mappings: HashMap::new(),
            locations: HashMap::new(),
            labels: HashMap::new(),
            links: HashMap::new(),
            attribute_strings: HashMap::new(),
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
        let s = self.table.intern(text);
        self.strings.insert(i, s);
        Ok(s)
    }

    /// A string that is not the dictionary's as is (an int's decimal form, a hex id).
    fn string_value(&mut self, text: &str) -> i64 {
        self.table.intern(text)
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
        // Every index is checked, but only the last build id with a string value is read
        // (the last one wins): a mapping may list one attribute with a long value many
        // times, and reading it each time would cost its length per copy.
        let mut last_build_id = None;
        for &a in &m.attribute_indices {
            let (kv, key) = keyed_attribute(self.dict, a)?;
            if key == BUILD_ID_ATTRIBUTE && attribute_text(kv, &self.dict.string_table)?.is_some() {
                last_build_id = Some((a, kv));
            }
        }
        let build_id = match last_build_id {
            Some((a, kv)) => self.attribute_string(a, kv)?,
            None => 0,
        };
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

    /// The table index of string attribute `a`'s text (0 for other kinds), hashed once per
    /// part: by its string-table index when it has one, else by `a` (attributes are
    /// resolved once anyway, but a mapping's build id is read outside `labels`).
    fn attribute_string(
        &mut self,
        a: i32,
        kv: &otlp::KeyValueAndUnit,
    ) -> Result<i64, ConvertError> {
        if let Some(any_value::Value::StringValueStrindex(i)) =
            kv.value.as_ref().and_then(|v| v.value.as_ref())
        {
            return self.string(*i);
        }
        if let Some(&s) = self.attribute_strings.get(&a) {
            return Ok(s);
        }
        let s = match attribute_text(kv, &self.dict.string_table)? {
            Some(text) => self.table.intern(text),
            None => 0,
        };
        self.attribute_strings.insert(a, s);
        Ok(s)
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
                let (_, key) = keyed_attribute(self.dict, a)?;
                dropped.add(Place::Sample, kind, key);
                None
            }
        })
    }

    fn resolve_label(&mut self, a: i32) -> Result<Resolved, ConvertError> {
        let kv = get("attribute_table", &self.dict.attribute_table, i64::from(a))?;
        if self.rule == SampleLabels::Pyroscope {
            // The key is checked first (a broken index is an error whatever the value) but
            // added to the table only for a label: a dropped attribute leaves no string.
            keyed_attribute(self.dict, a)?;
            let text = match label_value(kv.value.as_ref(), &self.dict.string_table)? {
                LabelValue::Text(t) => t,
                LabelValue::Absent => return Ok(Resolved::Absent),
                LabelValue::Dropped(kind) => return Ok(Resolved::Dropped(kind)),
            };
            let key = self.string(kv.key_strindex)?;
            // Many attributes may name one long string: hashed once, by its index.
            let str = match string_index(kv.value.as_ref()) {
                Some(i) => self.string(i)?,
                None => self.string_value(&text),
            };
            return Ok(Resolved::Label(pprof::Label {
                key,
                str,
                ..pprof::Label::default()
            }));
        }
        let key = self.string(kv.key_strindex)?;
        if attribute_text(kv, &self.dict.string_table)?.is_some() {
            let str = self.attribute_string(a, kv)?;
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

    /// A sample's trace link as Pyroscope labels it: `span_id` (hex) when it has the 8 bytes
    /// of a span id, and `trace_id` (hex) when it has the 16 bytes of a trace id.
    ///
    /// Pyroscope writes `span_id` for every link, as the hex of whatever bytes it holds, but
    /// reads back only 16 hex digits as a span id (`decodeSpanID` in `pkg/pprof/pprof.go`);
    /// any other length is a label that names no span (an empty one is no label in a series
    /// either). Leaving those out also bounds the strings a link adds (see [`output_bytes`]).
    fn link_labels(&mut self, i: i32, out: &mut Vec<pprof::Label>) -> Result<(), ConvertError> {
        if let Some(labels) = self.links.get(&i) {
            out.extend_from_slice(labels);
            return Ok(());
        }
        let link = get("link_table", &self.dict.link_table, i64::from(i))?;
        let mut labels = Vec::with_capacity(2);
        for (name, id, len) in [
            (SPAN_ID_LABEL, &link.span_id, SPAN_ID_BYTES),
            (TRACE_ID_LABEL, &link.trace_id, TRACE_ID_BYTES),
        ] {
            if id.len() == len {
                labels.push(pprof::Label {
                    key: self.string_value(name),
                    str: self.string_value(&hex(id)),
                    ..pprof::Label::default()
                });
            }
        }
        out.extend_from_slice(&labels);
        self.links.insert(i, labels);
        Ok(())
    }
}

/// A string attribute's text (plain or through the string table); `None` for other kinds.
/// Borrowed: checking an attribute costs nothing whatever its length.
fn attribute_text<'k>(
    kv: &'k otlp::KeyValueAndUnit,
    strings: &'k [String],
) -> Result<Option<&'k str>, ConvertError> {
    Ok(match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
        Some(any_value::Value::StringValueStrindex(i)) => {
            Some(get("string_table", strings, i64::from(*i))?.as_str())
        }
        _ => None,
    })
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
/// frame of each sample's stack and a label per attribute (and room for a link's two), each sample holding
/// its own copy (the OTLP dictionary shares a stack among samples, pprof does not), and the
/// strings the conversion makes rather than copies: an int attribute's decimal form and a
/// link's hex ids. Those are made once per attribute or link and pprof, so counting them per
/// sample is an upper bound. Out-of-range indices count as nothing here (the conversion
/// reports them). Saturates.
pub fn output_bytes<'a>(
    dict: &otlp::ProfilesDictionary,
    samples: impl IntoIterator<Item = &'a otlp::Sample>,
) -> u64 {
    const SAMPLE: u64 = 96;
    const LOCATION_ID: u64 = 8;
    const LABEL: u64 = 32;
    /// A string's header and its entry in the table's index, besides its bytes.
    const STRING: u64 = 40;
    /// A link's strings: its two hex ids (16 and 32 bytes, see `link_labels`: no other
    /// length is labelled), and its two labels kept for the samples that share it.
    const LINK: u64 =
        (SPAN_ID_BYTES as u64 * 2 + STRING) + (TRACE_ID_BYTES as u64 * 2 + STRING) + 2 * LABEL;
    let mut total: u64 = 0;
    for s in samples {
        let frames = usize::try_from(s.stack_index)
            .ok()
            .and_then(|i| dict.stack_table.get(i))
            .map_or(0, |st| st.location_indices.len() as u64);
        // A link adds up to two labels (span and trace id) and their strings, pushed onto a
        // list allocated for the attributes: it may grow to twice that, and to at least 4.
        let attributes = s.attribute_indices.len() as u64;
        let (labels, link_strings) = if s.link_index != 0 {
            (attributes.saturating_mul(2).saturating_add(4), LINK)
        } else {
            (attributes, 0)
        };
        let decimals = s
            .attribute_indices
            .iter()
            .filter_map(|&a| {
                usize::try_from(a)
                    .ok()
                    .and_then(|a| dict.attribute_table.get(a))
            })
            .filter_map(|kv| decimal_len(kv.value.as_ref()))
            .fold(0u64, |acc, len| acc.saturating_add(len + STRING));
        total = total
            .saturating_add(SAMPLE)
            .saturating_add(frames.saturating_mul(LOCATION_ID))
            .saturating_add(labels.saturating_mul(LABEL))
            .saturating_add(link_strings)
            .saturating_add(decimals);
    }
    total
}

/// The length of the decimal string [`label_value`] makes of an int (alone or the only
/// element of an array); `None` for every other value, which is either copied from the
/// request or no label.
fn decimal_len(value: Option<&AnyValue>) -> Option<u64> {
    use any_value::Value;
    let int = match value?.value.as_ref()? {
        Value::IntValue(n) => *n,
        Value::ArrayValue(a) => match a.values.as_slice() {
            [one] => match one.value.as_ref()? {
                Value::IntValue(n) => *n,
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    let digits = int
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| u64::from(d) + 1);
    Some(digits + u64::from(int < 0))
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
                let (_, key) = keyed_attribute(dict, a)?;
                if skip.contains(&key) {
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
    p.string_table = r.table.into_table();
    p.sample_type = vec![sample_type];
    p.sample = out;
    p.period_type = period_type;
    p.period = prof.period;
    p.time_nanos = i64::try_from(prof.time_unix_nano).unwrap_or(i64::MAX);
    p.duration_nanos = i64::try_from(prof.duration_nano).unwrap_or(i64::MAX);
    Ok(p)
}

#[cfg(test)]
#[path = "to_pprof_tests.rs"]
mod tests;
