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
//!   the scope's attributes with non-empty string values (the first of a key wins), then
//!   `service_name`: the samples' `service.name`, else the resource's, else
//!   `unknown_service[:<process.executable.name>]`;
//! * a zero `time_unix_nano` becomes the time of receipt, a zero duration 10 s.
//!
//! Not carried over (as in Pyroscope, or not yet): trace links (`span_id`/`trace_id` labels),
//! `[kernel]` mapping names and the mappings' `has_*` flags.

use std::collections::{HashMap, HashSet};

use super::convert::{ConvertError, SERVICE_NAME_ATTRIBUTE, output_bytes, samples_to_pprof};
use super::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use super::proto::common::v1::{KeyValue, any_value};
use super::proto::profiles::v1development as otlp;
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

/// Why a request was refused (all of it: Pyroscope refuses the request at the first bad
/// profile, and so do we, so that a client never has half a request accepted silently).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IngestError {
    #[error("missing profile metadata dictionary")]
    NoDictionary,
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

/// A non-empty string value of an attribute list (`None` for other kinds).
fn string_value(kv: &KeyValue) -> Option<&str> {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// The resource's service name, or `unknown_service[:<executable>]`.
fn resource_service_name(attrs: &[KeyValue]) -> String {
    let mut fallback = UNKNOWN_SERVICE.to_owned();
    for kv in attrs {
        if kv.key == SERVICE_NAME_ATTRIBUTE
            && let Some(s) = string_value(kv)
        {
            return s.to_owned();
        }
        if kv.key == EXECUTABLE_NAME_ATTRIBUTE
            && let Some(s) = string_value(kv)
        {
            fallback.push(':');
            fallback.push_str(s);
        }
    }
    fallback
}

/// The value of a sample's `service.name` attribute, or "" (an unresolvable index counts as
/// absent here; the conversion reports it). Borrowed from the request: a long name shared by
/// many samples is not copied per sample.
fn sample_service<'d>(s: &otlp::Sample, dict: &'d otlp::ProfilesDictionary) -> &'d str {
    for &a in &s.attribute_indices {
        let Some(kv) = usize::try_from(a)
            .ok()
            .and_then(|i| dict.attribute_table.get(i))
        else {
            continue;
        };
        let key = usize::try_from(kv.key_strindex)
            .ok()
            .and_then(|i| dict.string_table.get(i));
        if key.map(String::as_str) != Some(SERVICE_NAME_ATTRIBUTE) {
            continue;
        }
        return match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => s,
            Some(any_value::Value::StringValueStrindex(i)) => usize::try_from(*i)
                .ok()
                .and_then(|i| dict.string_table.get(i))
                .map_or("", String::as_str),
            _ => "",
        };
    }
    ""
}

/// Bytes the pprof samples of the whole request take once converted (see
/// [`output_bytes`]): a caller reserves or refuses this before calling [`ingest`].
pub fn request_output_bytes(req: &ExportProfilesServiceRequest) -> u64 {
    let Some(dict) = req.dictionary.as_ref() else {
        return 0;
    };
    let samples = req
        .resource_profiles
        .iter()
        .flat_map(|rp| &rp.scope_profiles)
        .flat_map(|sp| &sp.profiles)
        .flat_map(|p| &p.samples);
    output_bytes(dict, samples)
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
            let cpu = p.string_table.len() as i64;
            p.string_table.push("cpu".to_owned());
            p.string_table.push("nanoseconds".to_owned());
            p.sample_type = vec![pprof::ValueType {
                r#type: cpu,
                unit: cpu + 1,
            }];
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

/// Appends the non-empty string attributes whose key is not `seen` yet.
fn append_attributes<'a>(
    labels: &mut Vec<Label>,
    attrs: &'a [KeyValue],
    seen: &mut HashSet<&'a str>,
) {
    for kv in attrs {
        if seen.contains(kv.key.as_str()) {
            continue;
        }
        if let Some(v) = string_value(kv) {
            labels.push((kv.key.clone(), v.to_owned()));
            seen.insert(kv.key.as_str());
        }
    }
}

/// Every profile of `req`, converted as Pyroscope converts it; `now_nanos` stands in for a
/// missing timestamp.
pub fn ingest(
    req: &ExportProfilesServiceRequest,
    now_nanos: i64,
) -> Result<Vec<Ingested>, IngestError> {
    let dict = req.dictionary.as_ref().ok_or(IngestError::NoDictionary)?;
    let mut out = Vec::new();
    for (ri, rp) in req.resource_profiles.iter().enumerate() {
        let resource_attrs = rp.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let resource_service = resource_service_name(resource_attrs);
        for (si, sp) in rp.scope_profiles.iter().enumerate() {
            let scope_attrs = sp.scope.as_ref().map_or(&[][..], |s| &s.attributes[..]);
            for (pi, prof) in sp.profiles.iter().enumerate() {
                let fail = |source| IngestError::Convert {
                    resource: ri,
                    scope: si,
                    profile: pi,
                    source,
                };
                // Groups in order of first appearance, so the output is deterministic.
                let mut order: Vec<&str> = Vec::new();
                let mut groups: HashMap<&str, Vec<&otlp::Sample>> = HashMap::new();
                for s in &prof.samples {
                    let svc = sample_service(s, dict);
                    groups
                        .entry(svc)
                        .or_insert_with(|| {
                            order.push(svc);
                            Vec::new()
                        })
                        .push(s);
                }
                for svc in order {
                    let samples = groups.remove(svc).unwrap_or_default();
                    let mut profile =
                        samples_to_pprof(dict, prof, &samples, &[SERVICE_NAME_ATTRIBUTE])
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
                    let mut seen: HashSet<&str> = HashSet::from(["__name__", "service_name"]);
                    append_attributes(&mut labels, resource_attrs, &mut seen);
                    append_attributes(&mut labels, scope_attrs, &mut seen);
                    let service = if svc.is_empty() {
                        resource_service.clone()
                    } else {
                        svc.to_owned()
                    };
                    labels.push(("service_name".into(), service));
                    out.push(Ingested { labels, profile });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "ingest_tests.rs"]
mod tests;
