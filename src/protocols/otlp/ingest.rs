//! An OTLP profiles export request as the profiles and series labels Pyroscope's own OTLP
//! ingestion makes of it (`pkg/ingester/otlp`, pyroscope-protocol.md §8), so that a local
//! store or a Pyroscope-compatible backend fed through `otelcol.receiver.otlp` holds what
//! Pyroscope would hold for the same request.
//!
//! Per OTLP profile (one sample type each):
//! * its samples are split by their `service.name` sample attribute (the OpenTelemetry eBPF
//!   profiler sets it per process); each part becomes one pprof, without that attribute among
//!   its sample labels;
//! * the type `samples`/`count` with a `cpu`/`nanoseconds` period becomes `cpu`/`nanoseconds`,
//!   each value multiplied by the period, named `process_cpu`; `off_cpu`/`nanoseconds` without a
//!   period is `off_cpu`; any other profile is named after its period type (Pyroscope's rule)
//!   or, when it has none, after its sample type (where Pyroscope would leave `__name__` empty
//!   and the profile could not be queried);
//! * series labels: `__delta__="false"`, `__otel__="true"`, `__name__`, then the resource's and
//!   the scope's attributes that have a label value (the first of a key wins), then
//!   `service_name`: the samples' `service.name`, else the resource's, else
//!   `unknown_service`, followed by `:<name>` for each `process.executable.name` of the
//!   resource that has a label value, in order (Pyroscope's `getServiceNameFromAttributes`);
//! * sample labels: the samples' attributes but `service.name`, and their trace link as
//!   `span_id`/`trace_id` ([`SampleLabels::Pyroscope`]);
//! * attribute values, on the resource, the scope and the samples alike, as Pyroscope reads
//!   them ([`label_value`]: strings, ints in decimal, an array of one of those; no label for an
//!   empty value); bool, double, bytes, kvlist and other arrays have no label form and are
//!   left out, as in Pyroscope, but counted in [`Ingest::dropped`] for the receiver to report
//!   (only those whose key would be read: not one already given a label, `__name__` or
//!   `service_name`, which Pyroscope skips before reading the value);
//! * a zero `time_unix_nano` becomes the time of receipt, a zero duration 10 s.
//!
//! Label count and length: Pyroscope's OTLP ingestion caps neither; its distributor refuses a
//! series past its limits (`validation.max-label-names-per-series` 30, label names 1024 and
//! values 2048 bytes) for every push path alike. `pyroscope.receive_http` forwards pushed
//! labels as sent and leaves those limits to the backend, and so does this conversion: nothing
//! is trimmed or dropped here for its size.
//!
//! Not carried over (as in Pyroscope, or not yet): `[kernel]` mapping names and the mappings'
//! `has_*` flags.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::convert::{ConvertError, SERVICE_NAME_ATTRIBUTE};
pub use super::estimate::request_output_bytes;
use super::labels::{DroppedAttributes, LabelValue, Place, label_value, string_index};
use super::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use super::proto::common::v1::KeyValue;
use super::proto::profiles::v1development as otlp;
use super::to_pprof::{SampleLabels, samples_to_pprof};
use crate::pprof::proto as pprof;
use crate::profiles::Label;

/// The resource attribute naming the executable, for `unknown_service:<name>`.
pub const EXECUTABLE_NAME_ATTRIBUTE: &str = "process.executable.name";
/// What Pyroscope names a service that did not name itself.
pub const UNKNOWN_SERVICE: &str = "unknown_service";
/// A profile's duration when the request gives none (Pyroscope's default).
pub const DEFAULT_DURATION_NANOS: i64 = 10_000_000_000;

/// One profile ready for the pipeline: series labels and a single-type pprof.
#[derive(Debug)]
pub struct Ingested {
    pub labels: Vec<Label>,
    pub profile: pprof::Profile,
}

/// A request's profiles, and the attributes left out of their labels.
#[derive(Debug, Default)]
pub struct Ingest {
    pub profiles: Vec<Ingested>,
    /// Resource and scope attributes count once per resource and scope, sample attributes
    /// once per sample that refers to them.
    pub dropped: DroppedAttributes,
}

/// Why a request was refused (all of it: Pyroscope refuses the request at the first bad
/// profile, and so do we, so that a client never has half a request accepted silently).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IngestError {
    #[error("missing profile metadata dictionary")]
    NoDictionary,
    #[error("failed to read the attributes of {}: {source}", attributes_of(*.resource, *.scope))]
    Attributes {
        resource: usize,
        /// `None` for the resource's own attributes.
        scope: Option<usize>,
        source: ConvertError,
    },
    #[error(
        "failed to convert otel profile (resource {resource}, scope {scope}, profile {profile}): {source}"
    )]
    Convert {
        resource: usize,
        scope: usize,
        profile: usize,
        source: ConvertError,
    },
}

fn attributes_of(resource: usize, scope: Option<usize>) -> String {
    match scope {
        None => format!("resource {resource}"),
        Some(scope) => format!("scope {scope} of resource {resource}"),
    }
}

/// Keys that never become a series label from an attribute: `__name__` is the profile's type,
/// `service_name` is added last. Pyroscope reserves only `__name__`: it lets a `service_name`
/// attribute through next to the `service_name` it adds, and its distributor then refuses the
/// series for the duplicate; here the one added last is the only one.
const RESERVED_KEYS: [&str; 2] = ["__name__", "service_name"];

/// An attribute list's labels in order, the first of a key winning, and the executable names
/// it gives; the attributes without a label form are counted in `dropped`.
///
/// Borrowed from the request: a label is copied only into the parts that carry it (which the
/// estimate charges per part). Copied here, many attributes naming one long string would
/// take their length each, even for a resource without samples.
struct AttributeLabels<'a> {
    labels: Vec<(&'a str, Cow<'a, str>)>,
    /// Every `process.executable.name` with a label value, in order, duplicates included.
    executables: Vec<Cow<'a, str>>,
}

impl<'a> AttributeLabels<'a> {
    /// Pyroscope's `appendAttributesUnique`: an attribute whose key is `taken` (already given
    /// a label, here or by an earlier list) is skipped before its value is read, so it is not
    /// counted as dropped; a key is taken by its first value that gives a label.
    fn read(
        attrs: &'a [KeyValue],
        place: Place,
        strings: &'a [String],
        taken: &HashSet<&str>,
        dropped: &mut DroppedAttributes,
    ) -> Result<Self, ConvertError> {
        let mut labels: Vec<(&'a str, Cow<'a, str>)> = Vec::new();
        let mut executables: Vec<Cow<'a, str>> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for kv in attrs {
            let key = kv.key.as_str();
            // Read for every attribute, whatever its key: an index out of the string table
            // is a broken request.
            let value = label_value(kv.value.as_ref(), strings)?;
            if key == EXECUTABLE_NAME_ATTRIBUTE
                && let LabelValue::Text(v) = &value
            {
                executables.push(v.clone());
            }
            if taken.contains(key) || seen.contains(key) {
                continue;
            }
            match value {
                LabelValue::Text(v) => {
                    seen.insert(key);
                    labels.push((key, v));
                }
                LabelValue::Absent => {}
                LabelValue::Dropped(kind) => dropped.add(place, kind, key),
            }
        }
        Ok(AttributeLabels {
            labels,
            executables,
        })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// The labels as a part holds them: its own copy.
    fn owned(&self) -> impl Iterator<Item = Label> + '_ {
        self.labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone().into_owned()))
    }

    /// The resource's service name (its first `service.name` with a label value), or
    /// `unknown_service` followed by `:<name>` for each executable name (Pyroscope's
    /// `getServiceNameFromAttributes`, which reads values as [`label_value`] does and appends
    /// every non-empty `process.executable.name`).
    fn service_name(&self) -> String {
        if let Some(s) = self.get(SERVICE_NAME_ATTRIBUTE) {
            return s.to_owned();
        }
        let mut name = UNKNOWN_SERVICE.to_owned();
        for exe in &self.executables {
            name.push(':');
            name.push_str(exe);
        }
        name
    }
}

/// The index of a sample's first `service.name` attribute, or `None`: Pyroscope's
/// `getAttributeValueByKeyOrEmpty`, where the first attribute with the key decides even when
/// its value gives no label. Indices out of the table are skipped here (the conversion reports
/// them). Constant work per attribute index: a key is compared (its length first), never
/// hashed, and the value is not read.
fn service_attribute(s: &otlp::Sample, dict: &otlp::ProfilesDictionary) -> Option<i32> {
    s.attribute_indices.iter().copied().find(|&a| {
        usize::try_from(a)
            .ok()
            .and_then(|i| dict.attribute_table.get(i))
            .and_then(|kv| usize::try_from(kv.key_strindex).ok())
            .and_then(|i| dict.string_table.get(i))
            .is_some_and(|key| key == SERVICE_NAME_ATTRIBUTE)
    })
}

/// The service name attribute `a` gives its samples, read as [`label_value`] reads it, or ""
/// (no attribute, a value without a label form or an unresolvable index: the conversion
/// reports the latter). Borrowed from the request when it is a string.
fn service_text<'d>(a: Option<i32>, dict: &'d otlp::ProfilesDictionary) -> Cow<'d, str> {
    let kv = a
        .and_then(|a| usize::try_from(a).ok())
        .and_then(|i| dict.attribute_table.get(i));
    match kv.map(|kv| label_value(kv.value.as_ref(), &dict.string_table)) {
        Some(Ok(LabelValue::Text(v))) => v,
        _ => Cow::Borrowed(""),
    }
}

/// A profile's samples split by their `service.name` ([`service_attribute`]), the parts in
/// order of first appearance so the output is deterministic. [`request_output_bytes`]
/// measures the same parts.
///
/// Linear in the request, however long a name and however many samples or attributes share
/// it: a sample is keyed by the index of its `service.name` attribute, and a name's text is
/// read and hashed once per distinct attribute, or once per string-table index when the
/// attributes hold it there ([`string_index`]); equal texts from different sources still
/// make one part.
pub(super) fn group_by_service<'a>(
    prof: &'a otlp::Profile,
    dict: &'a otlp::ProfilesDictionary,
) -> Vec<(Cow<'a, str>, Vec<&'a otlp::Sample>)> {
    let mut parts = ServiceParts {
        dict,
        parts: Vec::new(),
        by_attribute: HashMap::new(),
        by_string: HashMap::new(),
        by_text: HashMap::new(),
    };
    for s in &prof.samples {
        let part = parts.part(service_attribute(s, dict));
        if let Some((_, samples)) = parts.parts.get_mut(part) {
            samples.push(s);
        }
    }
    parts.parts
}

/// The parts of [`group_by_service`] as they are found, and the three steps from a sample's
/// `service.name` attribute to its part, each remembered so that a text is hashed once.
struct ServiceParts<'a> {
    dict: &'a otlp::ProfilesDictionary,
    parts: Vec<(Cow<'a, str>, Vec<&'a otlp::Sample>)>,
    /// Part of each `service.name` attribute index (`None`: no such attribute).
    by_attribute: HashMap<Option<i32>, usize>,
    /// Part of each string-table index a service name was read from.
    by_string: HashMap<i32, usize>,
    by_text: HashMap<Cow<'a, str>, usize>,
}

impl<'a> ServiceParts<'a> {
    /// The part of the samples whose first `service.name` attribute is `a`, made if new.
    fn part(&mut self, a: Option<i32>) -> usize {
        if let Some(&part) = self.by_attribute.get(&a) {
            return part;
        }
        let strindex = a
            .and_then(|a| usize::try_from(a).ok())
            .and_then(|i| self.dict.attribute_table.get(i))
            .and_then(|kv| string_index(kv.value.as_ref()));
        let part = match strindex.and_then(|i| self.by_string.get(&i)) {
            Some(&part) => part,
            None => {
                let part = self.part_of_text(service_text(a, self.dict));
                if let Some(i) = strindex {
                    self.by_string.insert(i, part);
                }
                part
            }
        };
        self.by_attribute.insert(a, part);
        part
    }

    fn part_of_text(&mut self, text: Cow<'a, str>) -> usize {
        if let Some(&part) = self.by_text.get(&text) {
            return part;
        }
        let part = self.parts.len();
        self.by_text.insert(text.clone(), part);
        self.parts.push((text, Vec::new()));
        part
    }
}

fn text(p: &pprof::Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

/// Pyroscope's type rewrites and the profile's `__name__`.
fn name_and_normalise(p: &mut pprof::Profile) -> String {
    let Some(st) = p.sample_type.first().copied() else {
        return "process_cpu".to_owned();
    };
    let (ty, unit) = (text(p, st.r#type).to_owned(), text(p, st.unit).to_owned());
    let (period_type, period_unit) = match &p.period_type {
        Some(pt) if p.period != 0 => (text(p, pt.r#type).to_owned(), text(p, pt.unit).to_owned()),
        _ => (String::new(), String::new()),
    };
    match (
        ty.as_str(),
        unit.as_str(),
        period_type.as_str(),
        period_unit.as_str(),
    ) {
        ("samples", "count", "cpu", "nanoseconds") => {
            // Already in the table as the period type: each string stays there once.
            let r#type = intern(p, "cpu");
            let unit = intern(p, "nanoseconds");
            p.sample_type = vec![pprof::ValueType { r#type, unit }];
            let period = p.period;
            for s in &mut p.sample {
                for v in &mut s.value {
                    *v = v.saturating_mul(period);
                }
            }
            "process_cpu".to_owned()
        }
        ("off_cpu", "nanoseconds", "", "") => "off_cpu".to_owned(),
        (ty, _, "", _) if !ty.is_empty() => ty.to_owned(),
        (_, _, "", _) => "process_cpu".to_owned(),
        (_, _, period_type, _) => period_type.to_owned(),
    }
}

/// The index of `s` in the profile's string table, added if it is not there: the table holds
/// each string once (see `pprof_strings`).
fn intern(p: &mut pprof::Profile, s: &str) -> i64 {
    if let Some(i) = p.string_table.iter().position(|t| t == s) {
        return i64::try_from(i).unwrap_or(i64::MAX);
    }
    p.string_table.push(s.to_owned());
    i64::try_from(p.string_table.len() - 1).unwrap_or(i64::MAX)
}

/// Every profile of `req`, converted as Pyroscope converts it; `now_nanos` stands in for a
/// missing timestamp.
pub fn ingest(req: &ExportProfilesServiceRequest, now_nanos: i64) -> Result<Ingest, IngestError> {
    let dict = req.dictionary.as_ref().ok_or(IngestError::NoDictionary)?;
    let strings = &dict.string_table[..];
    let mut out = Ingest::default();
    for (ri, rp) in req.resource_profiles.iter().enumerate() {
        let attrs_failed = |scope| {
            move |source| IngestError::Attributes {
                resource: ri,
                scope,
                source,
            }
        };
        let resource_attrs = rp.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let reserved: HashSet<&str> = HashSet::from(RESERVED_KEYS);
        let resource = AttributeLabels::read(
            resource_attrs,
            Place::Resource,
            strings,
            &reserved,
            &mut out.dropped,
        )
        .map_err(attrs_failed(None))?;
        // Made when a part first needs it (samples that name no service): it can be long,
        // and the estimate charges it only to such parts.
        let mut resource_service: Option<String> = None;
        // A scope attribute whose key the resource gave a label is skipped (and not counted).
        let mut taken = reserved;
        taken.extend(resource.labels.iter().map(|(k, _)| *k));
        for (si, sp) in rp.scope_profiles.iter().enumerate() {
            let scope_attrs = sp.scope.as_ref().map_or(&[][..], |s| &s.attributes[..]);
            let scope =
                AttributeLabels::read(scope_attrs, Place::Scope, strings, &taken, &mut out.dropped)
                    .map_err(attrs_failed(Some(si)))?;
            for (pi, prof) in sp.profiles.iter().enumerate() {
                let fail = |source| IngestError::Convert {
                    resource: ri,
                    scope: si,
                    profile: pi,
                    source,
                };
                for (svc, samples) in group_by_service(prof, dict) {
                    let mut profile = samples_to_pprof(
                        dict,
                        prof,
                        &samples,
                        SampleLabels::Pyroscope,
                        &[SERVICE_NAME_ATTRIBUTE],
                        &mut out.dropped,
                    )
                    .map_err(fail)?;
                    let name = name_and_normalise(&mut profile);
                    if profile.time_nanos == 0 {
                        profile.time_nanos = now_nanos;
                    }
                    if profile.duration_nanos == 0 {
                        profile.duration_nanos = DEFAULT_DURATION_NANOS;
                    }
                    let mut labels: Vec<Label> = vec![
                        ("__delta__".into(), "false".into()),
                        ("__otel__".into(), "true".into()),
                        ("__name__".into(), name),
                    ];
                    // Their keys are distinct and none is reserved (`AttributeLabels::read`).
                    labels.extend(resource.owned());
                    labels.extend(scope.owned());
                    let service = if svc.is_empty() {
                        resource_service
                            .get_or_insert_with(|| resource.service_name())
                            .clone()
                    } else {
                        svc.into_owned()
                    };
                    labels.push(("service_name".into(), service));
                    out.profiles.push(Ingested { labels, profile });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "ingest_tests.rs"]
mod tests;
