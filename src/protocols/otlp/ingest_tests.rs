use super::*;
use crate::protocols::otlp::convert::ValueKind;
use crate::protocols::otlp::proto::common::v1::{AnyValue, InstrumentationScope, any_value};
use crate::protocols::otlp::proto::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Location, ProfilesDictionary, ResourceProfiles, ScopeProfiles,
    Stack, ValueType,
};
use crate::protocols::otlp::proto::resource::v1::Resource;
use crate::protocols::otlp::to_pprof::output_bytes;

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..KeyValue::default()
    }
}

/// Strings: 0 "", 1 samples, 2 count, 3 cpu, 4 nanoseconds, 5 main, 6 work, 7 service.name,
/// 8 thread, 9 alloc_space, 10 bytes. Stacks: 1 = [work, main], 2 = [main]. Attributes:
/// 1 service.name=a, 2 service.name=b, 3 thread=t1.
fn dictionary() -> ProfilesDictionary {
    let strings = [
        "",
        "samples",
        "count",
        "cpu",
        "nanoseconds",
        "main",
        "work",
        "service.name",
        "thread",
        "alloc_space",
        "bytes",
    ];
    let attr = |key: i32, value: &str| KeyValueAndUnit {
        key_strindex: key,
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        unit_strindex: 0,
    };
    let loc = |f: i32| Location {
        lines: vec![Line {
            function_index: f,
            line: 10,
            column: 0,
        }],
        ..Location::default()
    };
    ProfilesDictionary {
        string_table: strings.iter().map(|s| s.to_string()).collect(),
        function_table: vec![
            Function::default(),
            Function {
                name_strindex: 5,
                ..Function::default()
            },
            Function {
                name_strindex: 6,
                ..Function::default()
            },
        ],
        location_table: vec![Location::default(), loc(1), loc(2)],
        stack_table: vec![
            Stack::default(),
            Stack {
                location_indices: vec![2, 1],
            },
            Stack {
                location_indices: vec![1],
            },
        ],
        attribute_table: vec![
            KeyValueAndUnit::default(),
            attr(7, "a"),
            attr(7, "b"),
            attr(8, "t1"),
        ],
        ..ProfilesDictionary::default()
    }
}

fn sample(stack: i32, attrs: &[i32], value: i64) -> otlp::Sample {
    otlp::Sample {
        stack_index: stack,
        attribute_indices: attrs.to_vec(),
        values: vec![value],
        ..otlp::Sample::default()
    }
}

fn request(profile: otlp::Profile, resource: Vec<KeyValue>) -> ExportProfilesServiceRequest {
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: resource,
                ..Resource::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "ebpf-profiler".into(),
                    attributes: vec![kv("scope.attr", "s"), kv("host.name", "ignored")],
                    ..InstrumentationScope::default()
                }),
                profiles: vec![profile],
                ..ScopeProfiles::default()
            }],
            ..ResourceProfiles::default()
        }],
        dictionary: Some(dictionary()),
    }
}

fn label<'a>(i: &'a Ingested, name: &str) -> Option<&'a str> {
    i.labels
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn cpu_samples_are_split_by_service_and_converted_to_nanoseconds() {
    let profile = otlp::Profile {
        sample_type: Some(ValueType {
            type_strindex: 1,
            unit_strindex: 2,
        }),
        period_type: Some(ValueType {
            type_strindex: 3,
            unit_strindex: 4,
        }),
        period: 50_000_000,
        time_unix_nano: 1_700_000_000_000_000_000,
        samples: vec![
            sample(1, &[1, 3], 2),
            sample(2, &[2], 1),
            sample(2, &[1], 3),
            sample(1, &[], 4),
        ],
        ..otlp::Profile::default()
    };
    let resource = vec![kv("host.name", "h1"), kv(EXECUTABLE_NAME_ATTRIBUTE, "app")];
    let got = ingest(&request(profile, resource), 42)
        .expect("ingests")
        .profiles;
    let services: Vec<_> = got.iter().map(|i| label(i, "service_name")).collect();
    assert_eq!(
        services,
        [Some("a"), Some("b"), Some("unknown_service:app")]
    );
    for i in &got {
        assert_eq!(label(i, "__name__"), Some("process_cpu"));
        assert_eq!(label(i, "__delta__"), Some("false"));
        assert_eq!(label(i, "__otel__"), Some("true"));
        assert_eq!(label(i, "host.name"), Some("h1"), "the resource's wins");
        assert_eq!(label(i, "scope.attr"), Some("s"));
        let p = &i.profile;
        let st = p.sample_type[0];
        assert_eq!(
            (text(p, st.r#type), text(p, st.unit)),
            ("cpu", "nanoseconds")
        );
        // The period type's strings serve the new sample type: each is in the table once.
        for name in ["cpu", "nanoseconds"] {
            assert_eq!(p.string_table.iter().filter(|s| *s == name).count(), 1);
        }
        assert_eq!(
            p.sample_type[0].r#type,
            p.period_type.expect("period").r#type
        );
        assert_eq!(p.duration_nanos, DEFAULT_DURATION_NANOS);
        assert_eq!(p.time_nanos, 1_700_000_000_000_000_000);
    }
    let values: Vec<Vec<i64>> = got
        .iter()
        .map(|i| i.profile.sample.iter().map(|s| s.value[0]).collect())
        .collect();
    assert_eq!(
        values,
        [
            vec![100_000_000, 150_000_000],
            vec![50_000_000],
            vec![200_000_000]
        ]
    );
    // `service.name` is a series label, not a sample label; other attributes stay.
    let a = &got[0].profile;
    let keys: Vec<&str> = a.sample[0].label.iter().map(|l| text(a, l.key)).collect();
    assert_eq!(keys, ["thread"]);
    assert!(a.sample[1].label.is_empty());
}

#[test]
fn names_follow_pyroscope() {
    let cases = [
        // (sample type, period type, period, name)
        ((9, 10), Some((9, 10)), 512, "alloc_space"),
        ((9, 10), None, 0, "alloc_space"),
        ((3, 4), Some((3, 4)), 10, "cpu"),
        ((1, 2), Some((3, 4)), 0, "samples"),
    ];
    for ((ty, unit), period_type, period, want) in cases {
        let profile = otlp::Profile {
            sample_type: Some(ValueType {
                type_strindex: ty,
                unit_strindex: unit,
            }),
            period_type: period_type.map(|(t, u)| ValueType {
                type_strindex: t,
                unit_strindex: u,
            }),
            period,
            samples: vec![sample(1, &[], 7)],
            ..otlp::Profile::default()
        };
        let got = ingest(&request(profile, vec![kv("service.name", "svc")]), 42)
            .expect("ok")
            .profiles;
        assert_eq!(got.len(), 1);
        assert_eq!(label(&got[0], "__name__"), Some(want), "{ty} {period}");
        assert_eq!(label(&got[0], "service_name"), Some("svc"));
        assert_eq!(got[0].profile.sample[0].value, [7], "not rescaled");
        assert_eq!(got[0].profile.time_nanos, 42, "time of receipt");
    }
}

#[test]
fn bad_requests_are_refused() {
    let mut req = request(otlp::Profile::default(), Vec::new());
    req.dictionary = None;
    assert_eq!(ingest(&req, 0).unwrap_err(), IngestError::NoDictionary);
    let profile = otlp::Profile {
        sample_type: Some(ValueType::default()),
        samples: vec![sample(9, &[], 1)],
        ..otlp::Profile::default()
    };
    let err = ingest(&request(profile, Vec::new()), 0).unwrap_err();
    assert!(
        err.to_string()
            .contains("stack_table index 9 is out of range"),
        "{err}"
    );
    let none = otlp::Profile::default();
    assert_eq!(
        ingest(&request(none, Vec::new()), 0).map(|v| v.profiles.len()),
        Ok(0),
        "no samples, no profile"
    );
}

fn cpu(samples: Vec<otlp::Sample>) -> otlp::Profile {
    otlp::Profile {
        sample_type: Some(ValueType {
            type_strindex: 9,
            unit_strindex: 10,
        }),
        samples,
        ..otlp::Profile::default()
    }
}

#[test]
fn an_attribute_shared_by_many_samples_is_copied_once() {
    // A 1 MiB attribute value on 1000 samples: resolved once, so the pprof string table holds
    // it once (not 1000 times, which for real sizes is the memory blow-up this guards against).
    let big = "x".repeat(1 << 20);
    let mut req = request(cpu(Vec::new()), vec![kv("service.name", "svc")]);
    let dict = req.dictionary.as_mut().expect("dictionary");
    dict.attribute_table.push(KeyValueAndUnit {
        key_strindex: 8,
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(big.clone())),
        }),
        unit_strindex: 0,
    });
    let samples = (0..1000).map(|i| sample(1 + i % 2, &[4, 3], 1)).collect();
    req.resource_profiles[0].scope_profiles[0].profiles[0].samples = samples;
    let got = ingest(&req, 1).expect("ingests").profiles;
    let p = &got[0].profile;
    assert_eq!(p.sample.len(), 1000);
    let copies = p.string_table.iter().filter(|s| **s == big).count();
    assert_eq!(copies, 1, "the large value is in the string table once");
    assert!(p.string_table.len() < 20, "{}", p.string_table.len());
    for s in &p.sample {
        assert_eq!(s.label.len(), 2);
        assert_eq!(text(p, s.label[0].str), big);
        assert_eq!(text(p, s.label[1].str), "t1");
    }
}

#[test]
fn output_size_is_measured_before_converting() {
    // Per-sample terms (see `estimate` for the rest): (samples as (stack, attributes),
    // expected bytes): 96 per sample, 8 per frame, 32 per
    // attribute; an out-of-range stack counts no frames (the conversion reports it).
    type Samples<'a> = &'a [(i32, &'a [i32])];
    let cases: [(Samples, u64); 4] = [
        (&[], 0),
        (&[(1, &[])], 96 + 2 * 8),
        (&[(1, &[1, 3]), (2, &[])], 96 + 16 + 64 + 96 + 8),
        (&[(99, &[1])], 96 + 32),
    ];
    for (case, (samples, want)) in cases.into_iter().enumerate() {
        let samples = samples.iter().map(|(st, a)| sample(*st, a, 1)).collect();
        let req = request(cpu(samples), Vec::new());
        let dict = req.dictionary.as_ref().expect("dictionary");
        let samples = &req.resource_profiles[0].scope_profiles[0].profiles[0].samples;
        assert_eq!(output_bytes(dict, samples), want, "case {case}");
        // The whole estimate adds each part's copies of the dictionary and labels.
        assert!(request_output_bytes(&req) >= want, "case {case}");
    }
    // One shared stack of 500k frames on 500k samples: 2 TB of location ids, measured from
    // the request's few megabytes without building any.
    let mut req = request(cpu(Vec::new()), Vec::new());
    let dict = req.dictionary.as_mut().expect("dictionary");
    dict.stack_table.push(Stack {
        location_indices: vec![1; 500_000],
    });
    let samples = vec![sample(3, &[], 1); 500_000];
    req.resource_profiles[0].scope_profiles[0].profiles[0].samples = samples;
    assert!(request_output_bytes(&req) > 2_000_000_000_000);
}

#[test]
fn overflowing_sample_values_are_refused() {
    let cases = [
        (vec![i64::MAX, 1], true),
        (vec![i64::MIN, -1], true),
        (vec![i64::MAX, -1, 1], false),
        (vec![i64::MAX], false),
    ];
    for (values, overflow) in cases {
        let mut s = sample(1, &[], 0);
        s.values = values.clone();
        let got = ingest(&request(cpu(vec![s]), Vec::new()), 1);
        match got {
            Err(IngestError::Convert { source, .. }) => {
                assert!(overflow, "{values:?}: {source}");
                assert_eq!(source, ConvertError::ValueOverflow);
            }
            Ok(_) => assert!(!overflow, "{values:?} must be refused"),
            Err(e) => panic!("{values:?}: {e}"),
        }
    }
}

#[test]
fn samples_without_values_or_with_bad_links_are_refused() {
    let mut no_value = sample(1, &[], 0);
    no_value.values.clear();
    let mut timestamps_only = no_value.clone();
    timestamps_only.timestamps_unix_nano = vec![1, 2];
    let mut bad_link = sample(1, &[], 1);
    bad_link.link_index = 1;
    let mut no_link = sample(1, &[], 1);
    no_link.link_index = 0;
    let cases = [
        (no_value, Some(ConvertError::NoValue)),
        (timestamps_only, None),
        (
            bad_link,
            Some(ConvertError::OtlpIndex {
                table: "link_table",
                index: 1,
                len: 0,
            }),
        ),
        (no_link, None),
    ];
    for (i, (s, want)) in cases.into_iter().enumerate() {
        let got = ingest(&request(cpu(vec![s]), Vec::new()), 1);
        match (got, want) {
            (Ok(_), None) => {}
            (Err(IngestError::Convert { source, .. }), Some(want)) => {
                assert_eq!(source, want, "case {i}")
            }
            (got, want) => panic!("case {i}: {got:?}, want {want:?}"),
        }
    }
}

fn kv_any(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn one(values: Vec<any_value::Value>) -> any_value::Value {
    any_value::Value::ArrayValue(crate::protocols::otlp::proto::common::v1::ArrayValue {
        values: values
            .into_iter()
            .map(|v| AnyValue { value: Some(v) })
            .collect(),
    })
}

#[test]
fn resource_and_scope_attributes_become_labels_as_in_pyroscope() {
    use any_value::Value as V;
    // (resource attributes, scope attributes, labels wanted besides __delta__, __otel__ and
    // __name__, in order, and the attributes dropped as (place, kind)).
    type Case = (
        Vec<KeyValue>,
        Vec<KeyValue>,
        Vec<(&'static str, &'static str)>,
        Vec<(Place, ValueKind)>,
    );
    let cases: Vec<Case> = vec![
        (
            // Pyroscope v2.2.1 stringValueFromAnyValue: ints in decimal, arrays of one.
            vec![
                kv("service.name", "svc"),
                kv_any("process.pid", V::IntValue(1234)),
                kv_any("host.ip", one(vec![V::StringValue("10.0.0.1".into())])),
                kv_any("cpu.count", one(vec![V::IntValue(8)])),
                kv_any("container.debug", V::BoolValue(true)),
                kv_any("load", V::DoubleValue(0.5)),
                kv_any(
                    "host.ips",
                    one(vec![V::StringValue("a".into()), V::StringValue("b".into())]),
                ),
                kv_any("raw", V::BytesValue(vec![1])),
                kv("empty", ""),
            ],
            vec![kv_any("scope.n", V::IntValue(-3))],
            vec![
                ("service.name", "svc"),
                ("process.pid", "1234"),
                ("host.ip", "10.0.0.1"),
                ("cpu.count", "8"),
                ("scope.n", "-3"),
                ("service_name", "svc"),
            ],
            vec![
                (Place::Resource, ValueKind::Bool),
                (Place::Resource, ValueKind::Double),
                (Place::Resource, ValueKind::Bytes),
                (Place::Resource, ValueKind::Array),
            ],
        ),
        (
            // An int service name names the service; the executable name read the same way.
            vec![kv_any("service.name", V::IntValue(7))],
            Vec::new(),
            vec![("service.name", "7"), ("service_name", "7")],
            Vec::new(),
        ),
        (
            vec![
                kv_any("service.name", V::BoolValue(true)),
                kv_any(
                    EXECUTABLE_NAME_ATTRIBUTE,
                    one(vec![V::StringValue("app".into())]),
                ),
            ],
            Vec::new(),
            vec![
                (EXECUTABLE_NAME_ATTRIBUTE, "app"),
                ("service_name", "unknown_service:app"),
            ],
            vec![(Place::Resource, ValueKind::Bool)],
        ),
        (
            // A resource key without a label value leaves the key to the scope; a key given
            // twice keeps its first value.
            vec![
                kv_any("k", V::BoolValue(false)),
                kv("dup", "first"),
                kv("dup", "second"),
            ],
            vec![
                kv("k", "from-scope"),
                kv("dup", "scope"),
                kv_any("m", one(Vec::new())),
            ],
            vec![
                ("dup", "first"),
                ("k", "from-scope"),
                ("service_name", "unknown_service"),
            ],
            vec![(Place::Resource, ValueKind::Bool)],
        ),
        (
            // Pyroscope's getServiceNameFromAttributes appends every executable name with a
            // value, in order; the label keeps the first.
            vec![
                kv(EXECUTABLE_NAME_ATTRIBUTE, "a"),
                kv(EXECUTABLE_NAME_ATTRIBUTE, ""),
                kv_any(
                    EXECUTABLE_NAME_ATTRIBUTE,
                    one(vec![V::StringValue("b".into())]),
                ),
                kv_any(EXECUTABLE_NAME_ATTRIBUTE, V::IntValue(3)),
                kv_any(EXECUTABLE_NAME_ATTRIBUTE, V::BoolValue(true)),
                kv(EXECUTABLE_NAME_ATTRIBUTE, "a"),
            ],
            Vec::new(),
            vec![
                (EXECUTABLE_NAME_ATTRIBUTE, "a"),
                ("service_name", "unknown_service:a:b:3:a"),
            ],
            // The bool's key already has a label: Pyroscope skips it unread.
            Vec::new(),
        ),
        (
            // A service name anywhere wins over the executable names before it.
            vec![
                kv(EXECUTABLE_NAME_ATTRIBUTE, "a"),
                kv("service.name", ""),
                kv("service.name", "svc"),
            ],
            Vec::new(),
            vec![
                (EXECUTABLE_NAME_ATTRIBUTE, "a"),
                ("service.name", "svc"),
                ("service_name", "svc"),
            ],
            Vec::new(),
        ),
        (
            // Dropped values count only where the key would be read: not a key given a label
            // already (here or on the resource), nor __name__ or service_name.
            vec![
                kv("dup", "x"),
                kv_any("dup", V::BoolValue(true)),
                kv_any("__name__", V::BoolValue(true)),
                kv_any("service_name", V::DoubleValue(1.0)),
                kv("k", "v"),
            ],
            vec![
                kv_any("k", V::BoolValue(true)),
                kv_any("dup", V::DoubleValue(2.0)),
                kv_any("z", V::BoolValue(true)),
                kv("__name__", "not-a-name"),
            ],
            vec![
                ("dup", "x"),
                ("k", "v"),
                ("service_name", "unknown_service"),
            ],
            vec![(Place::Scope, ValueKind::Bool)],
        ),
    ];
    for (i, (resource, scope, want, want_dropped)) in cases.into_iter().enumerate() {
        let mut req = request(cpu(vec![sample(1, &[], 1)]), resource);
        if let Some(s) = req.resource_profiles[0].scope_profiles[0].scope.as_mut() {
            s.attributes = scope;
        }
        // Two profiles of the same resource and scope: their attributes count once.
        let prof = req.resource_profiles[0].scope_profiles[0].profiles[0].clone();
        req.resource_profiles[0].scope_profiles[0]
            .profiles
            .push(prof);
        let got = ingest(&req, 1).expect("ingests");
        assert_eq!(got.profiles.len(), 2, "case {i}");
        for p in &got.profiles {
            let labels: Vec<(&str, &str)> = p
                .labels
                .iter()
                .skip(3)
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(labels, want, "case {i}");
        }
        let dropped: Vec<(Place, ValueKind)> = got.dropped.counts.keys().copied().collect();
        let mut want_dropped = want_dropped;
        want_dropped.sort();
        assert_eq!(dropped, want_dropped, "case {i}");
        assert!(
            got.dropped.counts.values().all(|d| d.count == 1),
            "case {i}"
        );
    }
}

#[test]
fn sample_service_names_are_read_like_other_values() {
    use any_value::Value as V;
    let mut req = request(cpu(Vec::new()), vec![kv("service.name", "res")]);
    let dict = req.dictionary.as_mut().expect("dictionary");
    let attr = |value| KeyValueAndUnit {
        key_strindex: 7,
        value: Some(AnyValue { value: Some(value) }),
        unit_strindex: 0,
    };
    // 4: an int, 5: an array of one string, 6: a bool (no label: the resource's name).
    dict.attribute_table.push(attr(V::IntValue(42)));
    dict.attribute_table
        .push(attr(one(vec![V::StringValue("arr".into())])));
    dict.attribute_table.push(attr(V::BoolValue(true)));
    req.resource_profiles[0].scope_profiles[0].profiles[0].samples =
        vec![sample(1, &[4], 1), sample(1, &[5], 1), sample(1, &[6], 1)];
    let got = ingest(&req, 1).expect("ingests");
    let services: Vec<_> = got
        .profiles
        .iter()
        .map(|i| label(i, "service_name"))
        .collect();
    assert_eq!(services, [Some("42"), Some("arr"), Some("res")]);
    // service.name is never a sample label, so the bool is not counted as dropped.
    assert!(got.dropped.is_empty(), "{:?}", got.dropped);
    assert!(
        got.profiles
            .iter()
            .all(|i| i.profile.sample[0].label.is_empty())
    );
}

#[test]
fn out_of_table_string_references_in_attributes_are_refused() {
    let req = request(
        cpu(vec![sample(1, &[], 1)]),
        vec![kv_any("k", any_value::Value::StringValueStrindex(999))],
    );
    let err = ingest(&req, 1).unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::Attributes {
                resource: 0,
                scope: None,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("failed to read the attributes of resource 0: "),
        "{err}"
    );

    let mut req = request(cpu(vec![sample(1, &[], 1)]), Vec::new());
    if let Some(s) = req.resource_profiles[0].scope_profiles[0].scope.as_mut() {
        s.attributes
            .push(kv_any("k", any_value::Value::StringValueStrindex(999)));
    }
    let err = ingest(&req, 1).unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::Attributes {
                resource: 0,
                scope: Some(0),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("failed to read the attributes of scope 0 of resource 0: "),
        "{err}"
    );
}

/// How many samples (or attributes, or references) the CPU-bomb tests below put on one long
/// string. Each test finishes in well under a second when the work is linear; were the string
/// read or hashed once per reference, it would take 200k x 1 MiB = 200 GB of hashing (or
/// copying), which does not finish in any reasonable time: completing is the assertion (no
/// timing is measured, so a slow machine cannot fail them).
const REFERENCES: usize = 200_000;

fn big() -> String {
    "s".repeat(1 << 20)
}

/// A request whose `samples` refer to attributes from `attributes`, which are added to the
/// dictionary from index 4 on (`big()` is string 11).
fn with_sample_attributes(
    attributes: Vec<KeyValueAndUnit>,
    samples: Vec<otlp::Sample>,
) -> ExportProfilesServiceRequest {
    let mut req = request(cpu(samples), vec![kv("service.name", "res")]);
    let dict = req.dictionary.as_mut().expect("dictionary");
    dict.string_table.push(big());
    dict.attribute_table.extend(attributes);
    req
}

fn attr_value(key: i32, value: any_value::Value) -> KeyValueAndUnit {
    KeyValueAndUnit {
        key_strindex: key,
        value: Some(AnyValue { value: Some(value) }),
        unit_strindex: 0,
    }
}

#[test]
fn a_long_service_name_is_read_once_however_many_samples_share_it() {
    use any_value::Value as V;
    let n = REFERENCES as i32;
    // (case, attributes from index 4, samples): every case names the service `big()`.
    let cases: Vec<(&str, Vec<KeyValueAndUnit>, Vec<otlp::Sample>)> = vec![
        (
            "one attribute holding the name, on every sample",
            vec![attr_value(7, V::StringValue(big()))],
            vec![sample(1, &[4], 1); REFERENCES],
        ),
        (
            "an attribute per sample, all naming one string of the table",
            (0..n)
                .map(|_| attr_value(7, V::StringValueStrindex(11)))
                .collect(),
            (0..n).map(|i| sample(1, &[4 + i], 1)).collect(),
        ),
        (
            "the same, as arrays of one string",
            (0..n)
                .map(|_| attr_value(7, one(vec![V::StringValueStrindex(11)])))
                .collect(),
            (0..n).map(|i| sample(1, &[4 + i], 1)).collect(),
        ),
        (
            "two attributes with equal text (held apart) make one part",
            vec![
                attr_value(7, V::StringValue(big())),
                attr_value(7, V::StringValueStrindex(11)),
                attr_value(7, V::StringValue(big())),
            ],
            (0..n).map(|i| sample(1, &[4 + i % 3], 1)).collect(),
        ),
    ];
    for (case, attributes, samples) in cases {
        let req = with_sample_attributes(attributes, samples);
        let dict = req.dictionary.as_ref().expect("dictionary");
        let prof = &req.resource_profiles[0].scope_profiles[0].profiles[0];
        let parts = group_by_service(prof, dict);
        assert_eq!(parts.len(), 1, "{case}");
        assert_eq!(parts[0].0, big(), "{case}");
        assert_eq!(parts[0].1.len(), REFERENCES, "{case}");
        assert!(request_output_bytes(&req) > 0, "{case}");
        let got = ingest(&req, 1).expect("ingests").profiles;
        assert_eq!(got.len(), 1, "{case}");
        assert_eq!(
            label(&got[0], "service_name"),
            Some(big().as_str()),
            "{case}"
        );
        assert_eq!(got[0].profile.sample.len(), REFERENCES, "{case}");
    }
}

#[test]
fn parts_are_told_apart_by_text_in_order_of_first_appearance() {
    use any_value::Value as V;
    // Attributes 4.. : "b" inline, "b" through the table (string 12), "a" inline, an int 7,
    // "7" inline, a bool (no label: the resource's name, like no attribute at all).
    let mut req = with_sample_attributes(
        vec![
            attr_value(7, V::StringValue("b".into())),
            attr_value(7, V::StringValueStrindex(12)),
            attr_value(7, V::StringValue("a".into())),
            attr_value(7, V::IntValue(7)),
            attr_value(7, V::StringValue("7".into())),
            attr_value(7, V::BoolValue(true)),
        ],
        [5, 4, 6, 8, 7, 9, 6]
            .iter()
            .map(|&a| sample(1, &[a], 1))
            .chain([sample(1, &[], 1), sample(1, &[3], 1)])
            .collect(),
    );
    req.dictionary
        .as_mut()
        .expect("dictionary")
        .string_table
        .push("b".into());
    let dict = req.dictionary.as_ref().expect("dictionary");
    let prof = &req.resource_profiles[0].scope_profiles[0].profiles[0];
    let parts: Vec<(String, usize)> = group_by_service(prof, dict)
        .into_iter()
        .map(|(svc, samples)| (svc.into_owned(), samples.len()))
        .collect();
    let want = [("b", 2), ("a", 2), ("7", 2), ("", 3)].map(|(s, n)| (s.to_owned(), n));
    assert_eq!(parts, want);
}

#[test]
fn a_long_label_value_named_by_many_attributes_is_hashed_once() {
    // An attribute per sample, each a `thread` label naming the same long string of the
    // table: resolved once per attribute, the string is hashed once (by its index).
    let n = REFERENCES as i32;
    let attributes = (0..n)
        .map(|_| attr_value(8, any_value::Value::StringValueStrindex(11)))
        .collect();
    let samples = (0..n).map(|i| sample(1, &[4 + i], 1)).collect();
    let req = with_sample_attributes(attributes, samples);
    let got = ingest(&req, 1).expect("ingests").profiles;
    let p = &got[0].profile;
    let big = big();
    assert_eq!(p.sample.len(), REFERENCES);
    assert_eq!(p.string_table.iter().filter(|s| **s == big).count(), 1);
    assert!(p.sample.iter().all(|s| text(p, s.label[0].str) == big));
}

#[test]
fn long_resource_attributes_are_copied_only_into_the_parts_that_carry_them() {
    use any_value::Value as V;
    let exe = |_| kv_any(EXECUTABLE_NAME_ATTRIBUTE, V::StringValueStrindex(11));
    let distinct = |i: usize| kv_any(&format!("k{i}"), V::StringValueStrindex(11));
    // (case, resource attributes, samples, profiles made): read before any is copied, 200k
    // references to a 1 MiB string would take 200 GB.
    let cases: Vec<(&str, Vec<KeyValue>, Vec<otlp::Sample>, usize)> = vec![
        (
            "executable names, every sample naming its service",
            (0..REFERENCES).map(exe).collect(),
            vec![sample(1, &[1], 1)],
            1,
        ),
        (
            "executable names, no samples",
            (0..REFERENCES).map(exe).collect(),
            Vec::new(),
            0,
        ),
        (
            "labels, no samples",
            (0..REFERENCES).map(distinct).collect(),
            Vec::new(),
            0,
        ),
    ];
    for (case, resource, samples, want) in cases {
        let mut req = with_sample_attributes(Vec::new(), samples);
        if let Some(r) = req.resource_profiles[0].resource.as_mut() {
            r.attributes = resource;
        }
        let got = ingest(&req, 1).expect("ingests").profiles;
        assert_eq!(got.len(), want, "{case}");
        for i in &got {
            assert_eq!(label(i, "service_name"), Some("a"), "{case}");
        }
    }
}
