use std::collections::BTreeMap;

use prost::Message as _;

use super::*;
use crate::pprof::testutil::{B, HEAP, decode};

/// One frame as a reader sees it: function name, system name, file, line, column, and the
/// mapping's file and build id.
type Frame = (String, String, String, i64, i64, String, String);
/// A sample as a reader sees it: locations (leaf first), each its lines (inlined first), and
/// the labels (key, string, number, unit), sorted.
type Key = (Vec<(u64, Vec<Frame>)>, Vec<(String, String, i64, String)>);

/// Value per (stack, labels) for sample type `k`, zeros left out: what a round trip keeps.
fn values(p: &pprof::Profile, k: usize) -> BTreeMap<Key, i64> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for sample in &p.sample {
        let v = sample.value[k];
        if v == 0 {
            continue;
        }
        let stack = sample
            .location_id
            .iter()
            .map(|id| {
                let l = p.location.iter().find(|l| l.id == *id).expect("location");
                let (file, build) = p
                    .mapping
                    .iter()
                    .find(|m| m.id == l.mapping_id)
                    .map(|m| (s(m.filename), s(m.build_id)))
                    .unwrap_or_default();
                let frames = l
                    .line
                    .iter()
                    .map(|ln| {
                        let f = p
                            .function
                            .iter()
                            .find(|f| f.id == ln.function_id)
                            .expect("function");
                        (
                            s(f.name),
                            s(f.system_name),
                            s(f.filename),
                            ln.line,
                            ln.column,
                            file.clone(),
                            build.clone(),
                        )
                    })
                    .collect();
                (l.address, frames)
            })
            .collect();
        let mut labels: Vec<_> = sample
            .label
            .iter()
            .map(|l| (s(l.key), s(l.str), l.num, s(l.num_unit)))
            .collect();
        labels.sort();
        *out.entry((stack, labels)).or_insert(0) += v;
    }
    out
}

fn type_name(p: &pprof::Profile, vt: &pprof::ValueType) -> (String, String) {
    (
        p.string_table[vt.r#type as usize].clone(),
        p.string_table[vt.unit as usize].clone(),
    )
}

/// pprof → OTLP → bytes → OTLP → pprof, checked type by type.
fn round_trip(inputs: &[(Vec<Label>, pprof::Profile)]) -> ExportProfilesServiceRequest {
    let mut b = RequestBuilder::new();
    for (labels, p) in inputs {
        b.add(labels, p).expect("convert");
    }
    let req = b.build();
    let bytes = req.encode_to_vec();
    let decoded = ExportProfilesServiceRequest::decode(bytes.as_slice()).expect("decode");
    assert_eq!(decoded, req);
    let back = to_pprof(&decoded).expect("back to pprof");
    let mut back = back.iter();
    for (labels, p) in inputs {
        let mut want_labels: Vec<Label> = labels
            .iter()
            .filter(|(n, _)| !n.starts_with("__"))
            .cloned()
            .collect();
        want_labels.sort();
        for (k, vt) in p.sample_type.iter().enumerate() {
            let got = back.next().expect("one OTLP profile per sample type");
            assert_eq!(got.labels, want_labels);
            let g = &got.profile;
            assert_eq!(g.sample_type.len(), 1);
            assert_eq!(type_name(g, &g.sample_type[0]), type_name(p, vt));
            assert_eq!(
                g.period_type.as_ref().map(|t| type_name(g, t)),
                p.period_type.as_ref().map(|t| type_name(p, t))
            );
            assert_eq!(g.period, p.period);
            assert_eq!(g.time_nanos, p.time_nanos);
            assert_eq!(g.duration_nanos, p.duration_nanos);
            let want = values(p, k);
            assert!(!want.is_empty() || p.sample.is_empty());
            assert_eq!(values(g, 0), want, "sample type {k}");
        }
    }
    assert!(back.next().is_none());
    decoded
}

fn fixture(name: &str) -> pprof::Profile {
    let path = format!("{}/tests/data/pprof/{name}", env!("CARGO_MANIFEST_DIR"));
    decode(&std::fs::read(&path).expect("fixture"))
}

fn labels(service: &str) -> Vec<Label> {
    vec![
        ("__name__".into(), "memory".into()),
        ("service_name".into(), service.into()),
        ("namespace".into(), "otel".into()),
    ]
}

#[test]
fn real_go_profiles_keep_every_value_and_stack() {
    let names = [
        "goapp-heap-1.pb.gz",
        "goapp-allocs-2.pb.gz",
        "goapp-block-1.pb.gz",
        "goapp-mutex-2.pb.gz",
        "prometheus-heap-1.pb.gz",
        "prometheus-block-2.pb.gz",
    ];
    let inputs: Vec<_> = names.iter().map(|n| (labels(n), fixture(n))).collect();
    assert!(
        inputs
            .iter()
            .any(|(_, p)| p.sample.iter().any(|s| !s.label.is_empty()))
    );
    let req = round_trip(&inputs);
    // One dictionary for all: a function both profiles have (the Go runtime's, where both
    // binaries were built from the same source) is stored once.
    let dict = req.dictionary.expect("dictionary");
    let mut names: Vec<_> = dict
        .function_table
        .iter()
        .map(|f| {
            (
                f.name_strindex,
                f.system_name_strindex,
                f.filename_strindex,
                f.start_line,
            )
        })
        .collect();
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    let separately: usize = inputs.iter().map(|(_, p)| p.function.len()).sum();
    assert!(
        total - 1 < separately,
        "{} functions in the dictionary, {separately} in the inputs",
        total - 1
    );
    assert_eq!(names.len(), total, "a function stored twice");
}

#[test]
fn labels_inline_frames_and_mappings_survive() {
    let mut p = B::new(HEAP)
        .labeled(&["leaf", "mid", "main"], &[1, 100, 0, 0], &[("span", "a")])
        .labeled(&["leaf", "main"], &[2, 200, 2, 200], &[])
        .sample(&["other", "main"], &[0, 0, 0, 0])
        .build();
    // A numeric label with a unit, an inlined frame, a second mapping without a build id, and
    // a location without a mapping.
    let key = p.string_table.len() as i64;
    p.string_table.push("bytes".into());
    p.sample[1].label.push(pprof::Label {
        key,
        num: 4096,
        num_unit: key,
        ..pprof::Label::default()
    });
    let inlined = p.location[0].line[0];
    p.location[1].line.insert(0, inlined);
    let file = p.string_table.len() as i64;
    p.string_table.push("/lib/libc.so.6".into());
    p.mapping.push(pprof::Mapping {
        id: 2,
        memory_start: 0x7f00_0000,
        memory_limit: 0x7f10_0000,
        filename: file,
        ..pprof::Mapping::default()
    });
    p.location[2].mapping_id = 2;
    p.location[0].mapping_id = 0;
    p.duration_nanos = 15_000_000_000;
    round_trip(&[(labels("svc"), p)]);
}

#[test]
fn tables_start_with_their_zero_value_and_ids_are_valid() {
    let p = B::new(&[("samples", "count"), ("cpu", "nanoseconds")])
        .sample(&["a", "b"], &[1, 10_000_000])
        .sample(&["b"], &[0, 0])
        .build();
    let mut b = RequestBuilder::new();
    b.add(&labels("svc"), &p).expect("convert");
    b.add(&labels("svc"), &p).expect("convert");
    assert_eq!(b.len(), 2);
    let req = b.build();
    let dict = req.dictionary.as_ref().expect("dictionary");
    assert_eq!(dict.string_table[0], "");
    assert_eq!(dict.mapping_table[0], otlp::Mapping::default());
    assert_eq!(dict.location_table[0], otlp::Location::default());
    assert_eq!(dict.function_table[0], otlp::Function::default());
    assert_eq!(dict.link_table, vec![otlp::Link::default()]);
    assert_eq!(dict.attribute_table[0], otlp::KeyValueAndUnit::default());
    assert_eq!(dict.stack_table[0], otlp::Stack::default());
    // The same pprof twice shares every table entry: 2 functions, 2 locations, 2 stacks.
    assert_eq!(dict.function_table.len(), 3);
    assert_eq!(dict.location_table.len(), 3);
    assert_eq!(
        dict.stack_table.len(),
        2,
        "the all-zero sample adds no stack"
    );
    let mut ids = Vec::new();
    for rp in &req.resource_profiles {
        let resource = rp.resource.as_ref().expect("resource");
        let keys: Vec<&str> = resource.attributes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["namespace", "service.name"]);
        let sp = &rp.scope_profiles[0];
        assert_eq!(sp.scope.as_ref().map(|s| s.name.as_str()), Some(SCOPE_NAME));
        assert_eq!(sp.profiles.len(), 2);
        for prof in &sp.profiles {
            assert_eq!(prof.samples.len(), 1);
            assert_eq!(prof.profile_id.len(), 16);
            assert!(prof.profile_id.iter().any(|&b| b != 0));
            ids.push(prof.profile_id.clone());
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "profile ids are distinct");
}

#[test]
fn bad_references_are_errors_not_panics() {
    let mut p = B::new(HEAP).sample(&["a"], &[1, 1, 1, 1]).build();
    p.location[0].line[0].function_id = 999;
    let mut b = RequestBuilder::new();
    assert_eq!(
        b.add(&[], &p),
        Err(ConvertError::PprofId {
            table: "function",
            id: 999
        })
    );
    assert!(b.is_empty());

    let mut p = B::new(HEAP).sample(&["a"], &[1, 1, 1, 1]).build();
    p.sample[0].location_id.push(12345);
    assert!(matches!(
        RequestBuilder::new().add(&[], &p),
        Err(ConvertError::PprofId {
            table: "location",
            ..
        })
    ));

    let p = B::new(HEAP).sample(&["a"], &[1, 1, 1, 1]).build();
    let mut b = RequestBuilder::new();
    b.add(&[], &p).expect("convert");
    let good = b.build();
    let mut bad = good.clone();
    bad.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index = 77;
    assert!(matches!(
        to_pprof(&bad),
        Err(ConvertError::OtlpIndex {
            table: "stack_table",
            index: 77,
            ..
        })
    ));
    let mut bad = good.clone();
    bad.dictionary = None;
    assert_eq!(to_pprof(&bad).unwrap_err(), ConvertError::NoDictionary);
    let mut bad = good.clone();
    if let Some(d) = bad.dictionary.as_mut() {
        d.location_table[1].lines[0].function_index = -1;
    }
    assert!(matches!(
        to_pprof(&bad),
        Err(ConvertError::OtlpIndex {
            table: "function_table",
            index: -1,
            ..
        })
    ));
    let mut bad = good;
    let s = &mut bad.resource_profiles[0].scope_profiles[0].profiles[0].samples[0];
    s.timestamps_unix_nano = vec![1, 2];
    assert_eq!(
        to_pprof(&bad).unwrap_err(),
        ConvertError::SampleShape {
            got: 1,
            timestamps: 2
        }
    );
}

#[test]
fn timestamp_only_samples_count_one_each() {
    let p = B::new(&[("samples", "count")]).sample(&["a"], &[1]).build();
    let mut b = RequestBuilder::new();
    b.add(&[], &p).expect("convert");
    let mut req = b.build();
    let s = &mut req.resource_profiles[0].scope_profiles[0].profiles[0].samples[0];
    s.values.clear();
    s.timestamps_unix_nano = vec![10, 20, 30];
    let back = to_pprof(&req).expect("convert");
    assert_eq!(back[0].profile.sample[0].value, vec![3]);
}
