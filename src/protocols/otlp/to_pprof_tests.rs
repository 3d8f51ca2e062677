use super::*;
use crate::pprof::testutil::B;
use crate::protocols::otlp::convert::RequestBuilder;
use crate::protocols::otlp::proto::common::v1::ArrayValue;

fn any(v: any_value::Value) -> AnyValue {
    AnyValue { value: Some(v) }
}

fn array(values: Vec<any_value::Value>) -> any_value::Value {
    any_value::Value::ArrayValue(ArrayValue {
        values: values.into_iter().map(any).collect(),
    })
}

/// A profile whose one sample carries every attribute of `attrs` and optionally a link.
fn with_attributes(
    attrs: Vec<(&str, any_value::Value, &str)>,
    link: Option<otlp::Link>,
) -> (otlp::ProfilesDictionary, otlp::Profile) {
    let p = B::new(&[("samples", "count")]).sample(&["a"], &[1]).build();
    let mut b = RequestBuilder::new();
    b.add(&[], &p).expect("convert");
    let mut req = b.build();
    let mut dict = req.dictionary.take().expect("dictionary");
    let mut prof = req.resource_profiles[0].scope_profiles[0]
        .profiles
        .remove(0);
    let mut indices = Vec::new();
    for (key, value, unit) in attrs {
        let key_strindex = dict.string_table.len() as i32;
        dict.string_table.push(key.to_owned());
        let unit_strindex = dict.string_table.len() as i32;
        dict.string_table.push(unit.to_owned());
        indices.push(dict.attribute_table.len() as i32);
        dict.attribute_table.push(otlp::KeyValueAndUnit {
            key_strindex,
            value: Some(any(value)),
            unit_strindex,
        });
    }
    prof.samples[0].attribute_indices = indices;
    if let Some(link) = link {
        prof.samples[0].link_index = dict.link_table.len() as i32;
        dict.link_table.push(link);
    }
    (dict, prof)
}

/// (key, string, number, unit) of every label of the only sample, in order.
fn sample_labels(p: &pprof::Profile) -> Vec<(String, String, i64, String)> {
    let s = |i: i64| p.string_table[i as usize].clone();
    p.sample[0]
        .label
        .iter()
        .map(|l| (s(l.key), s(l.str), l.num, s(l.num_unit)))
        .collect()
}

#[test]
fn sample_attributes_become_labels_by_rule() {
    use any_value::Value as V;
    let attrs = || {
        vec![
            ("thread.name", V::StringValue("worker".into()), ""),
            ("empty", V::StringValue(String::new()), ""),
            ("cpu.logical_number", V::IntValue(7), ""),
            ("bytes.allocated", V::IntValue(4096), "bytes"),
            ("process.pid", array(vec![V::IntValue(12)]), ""),
            ("flag", V::BoolValue(true), ""),
            ("ratio", V::DoubleValue(0.5), ""),
            ("pair", array(vec![V::IntValue(1), V::IntValue(2)]), ""),
            ("service.name", V::StringValue("svc".into()), ""),
        ]
    };
    let l = |k: &str, s: &str, n: i64, u: &str| (k.to_owned(), s.to_owned(), n, u.to_owned());
    let link = otlp::Link {
        trace_id: (1..=16).collect(),
        span_id: vec![0xab, 0, 0xcd, 1, 2, 3, 4, 0xef],
    };
    // (rule, link, skip, labels, dropped (kind, count, first key))
    type Case<'a> = (
        SampleLabels,
        Option<otlp::Link>,
        &'a [&'a str],
        Vec<(String, String, i64, String)>,
        Vec<(ValueKind, u64, &'a str)>,
    );
    let cases: Vec<Case> = vec![
        (
            // Pyroscope v2.2.1 convertSampleAttributesToLabelsBack: string labels only, no
            // unit, empty values and kinds without a label form left out.
            SampleLabels::Pyroscope,
            None,
            &["service.name"],
            vec![
                l("thread.name", "worker", 0, ""),
                l("cpu.logical_number", "7", 0, ""),
                l("bytes.allocated", "4096", 0, ""),
                l("process.pid", "12", 0, ""),
            ],
            vec![
                (ValueKind::Bool, 1, "flag"),
                (ValueKind::Double, 1, "ratio"),
                (ValueKind::Array, 1, "pair"),
            ],
        ),
        (
            SampleLabels::Pyroscope,
            Some(link.clone()),
            &["service.name"],
            vec![
                l("thread.name", "worker", 0, ""),
                l("cpu.logical_number", "7", 0, ""),
                l("bytes.allocated", "4096", 0, ""),
                l("process.pid", "12", 0, ""),
                l("span_id", "ab00cd01020304ef", 0, ""),
                l("trace_id", "0102030405060708090a0b0c0d0e0f10", 0, ""),
            ],
            vec![
                (ValueKind::Bool, 1, "flag"),
                (ValueKind::Double, 1, "ratio"),
                (ValueKind::Array, 1, "pair"),
            ],
        ),
        (
            // A trace id that is not 16 bytes gives no trace_id; an empty span id no span_id
            // (the lengths are in `links_are_labelled_by_their_length`).
            SampleLabels::Pyroscope,
            Some(otlp::Link {
                trace_id: vec![1, 2],
                span_id: Vec::new(),
            }),
            &[],
            vec![
                l("thread.name", "worker", 0, ""),
                l("cpu.logical_number", "7", 0, ""),
                l("bytes.allocated", "4096", 0, ""),
                l("process.pid", "12", 0, ""),
                l("service.name", "svc", 0, ""),
            ],
            vec![
                (ValueKind::Bool, 1, "flag"),
                (ValueKind::Double, 1, "ratio"),
                (ValueKind::Array, 1, "pair"),
            ],
        ),
        (
            // What to_pprof keeps for round trips: numbers with their unit, links left out.
            SampleLabels::Lossless,
            Some(link.clone()),
            &[],
            vec![
                l("thread.name", "worker", 0, ""),
                l("empty", "", 0, ""),
                l("cpu.logical_number", "", 7, ""),
                l("bytes.allocated", "", 4096, "bytes"),
                l("flag", "", 1, ""),
                l("service.name", "svc", 0, ""),
            ],
            Vec::new(),
        ),
    ];
    for (i, (rule, link, skip, want, want_dropped)) in cases.into_iter().enumerate() {
        let (dict, prof) = with_attributes(attrs(), link);
        let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
        let mut dropped = DroppedAttributes::default();
        let p =
            samples_to_pprof(&dict, &prof, &samples, rule, skip, &mut dropped).expect("converts");
        assert_eq!(sample_labels(&p), want, "case {i}");
        let got: Vec<(ValueKind, u64, &str)> = dropped
            .counts
            .iter()
            .map(|((place, kind), d)| {
                assert_eq!(*place, Place::Sample);
                (*kind, d.count, d.first_key.as_str())
            })
            .collect();
        assert_eq!(got, want_dropped, "case {i}");
        // Pyroscope's rule adds a key to the string table only with its label.
        if rule == SampleLabels::Pyroscope {
            for key in ["empty", "flag", "ratio", "pair"] {
                assert!(!p.string_table.iter().any(|s| s == key), "case {i}: {key}");
            }
        }
    }
}

#[test]
fn dropped_sample_attributes_count_once_per_sample() {
    let (dict, mut prof) =
        with_attributes(vec![("flag", any_value::Value::BoolValue(true), "")], None);
    let s = prof.samples[0].clone();
    prof.samples = vec![s; 3];
    let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
    let mut dropped = DroppedAttributes::default();
    let p = samples_to_pprof(
        &dict,
        &prof,
        &samples,
        SampleLabels::Pyroscope,
        &[],
        &mut dropped,
    )
    .expect("converts");
    assert!(p.sample.iter().all(|s| s.label.is_empty()));
    assert_eq!(dropped.total(), 3);
    assert_eq!(
        dropped.counts.keys().copied().collect::<Vec<_>>(),
        [(Place::Sample, ValueKind::Bool)]
    );
}

fn link(span_id: Vec<u8>, trace_id: Vec<u8>) -> otlp::Link {
    otlp::Link { trace_id, span_id }
}

#[test]
fn links_are_labelled_by_their_length() {
    let span: Vec<u8> = (1..=8).collect();
    let trace: Vec<u8> = (1..=16).collect();
    let span_hex = "0102030405060708";
    let trace_hex = "0102030405060708090a0b0c0d0e0f10";
    // (span id, trace id, labels): Pyroscope reads back only 8-byte span ids and labels only
    // 16-byte trace ids.
    type Case = (Vec<u8>, Vec<u8>, Vec<(&'static str, &'static str)>);
    let cases: Vec<Case> = vec![
        (
            span.clone(),
            trace.clone(),
            vec![("span_id", span_hex), ("trace_id", trace_hex)],
        ),
        (span.clone(), Vec::new(), vec![("span_id", span_hex)]),
        (Vec::new(), trace.clone(), vec![("trace_id", trace_hex)]),
        (vec![1; 7], trace.clone(), vec![("trace_id", trace_hex)]),
        (vec![1; 9], vec![1; 15], Vec::new()),
        (vec![1; 4096], vec![1; 17], Vec::new()),
    ];
    for (i, (span_id, trace_id, want)) in cases.into_iter().enumerate() {
        let (dict, prof) = with_attributes(Vec::new(), Some(link(span_id, trace_id)));
        let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
        let p = samples_to_pprof(
            &dict,
            &prof,
            &samples,
            SampleLabels::Pyroscope,
            &[],
            &mut DroppedAttributes::default(),
        )
        .expect("converts");
        let got: Vec<(String, String, i64, String)> = sample_labels(&p);
        let want: Vec<(String, String, i64, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string(), 0, String::new()))
            .collect();
        assert_eq!(got, want, "case {i}");
    }
}

/// Pyroscope's distributor finds `span_id` and `trace_id` by their last index in the string
/// table: every sample must name the same one, or a span id becomes a series label.
#[test]
fn strings_are_in_the_table_once() {
    use any_value::Value as V;
    let (mut dict, mut prof) = with_attributes(
        vec![
            ("thread.name", V::StringValue("main".into()), ""),
            ("thread.id", V::IntValue(7), ""),
        ],
        Some(link((1..=8).collect(), (1..=16).collect())),
    );
    // Three more samples: two more links, and an attribute whose value repeats another's.
    let key_strindex = dict.string_table.len() as i32;
    dict.string_table.push("other".into());
    dict.attribute_table.push(otlp::KeyValueAndUnit {
        key_strindex,
        value: Some(any(V::StringValue("main".into()))),
        unit_strindex: 0,
    });
    let other = dict.attribute_table.len() as i32 - 1;
    let first = prof.samples[0].clone();
    for (n, attrs) in [(2u8, vec![other]), (3, first.attribute_indices.clone())] {
        dict.link_table.push(link(vec![n; 8], vec![n; 16]));
        let mut s = first.clone();
        s.link_index = dict.link_table.len() as i32 - 1;
        s.attribute_indices = attrs;
        prof.samples.push(s);
    }
    // The same link again, on a sample of its own.
    prof.samples.push(first.clone());
    let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
    let p = samples_to_pprof(
        &dict,
        &prof,
        &samples,
        SampleLabels::Pyroscope,
        &[],
        &mut DroppedAttributes::default(),
    )
    .expect("converts");
    let mut sorted = p.string_table.clone();
    sorted.sort();
    let len = sorted.len();
    sorted.dedup();
    assert_eq!(sorted.len(), len, "a string twice: {:?}", p.string_table);
    for key in ["span_id", "trace_id", "main", "7"] {
        assert_eq!(
            p.string_table.iter().filter(|s| *s == key).count(),
            1,
            "{key}: {:?}",
            p.string_table
        );
    }
    // Every label with a key names the one copy of it.
    let index = |s: &str| p.string_table.iter().position(|t| t == s).expect(s) as i64;
    let mut spans = 0;
    for sample in &p.sample {
        for l in &sample.label {
            let key = &p.string_table[l.key as usize];
            assert_eq!(l.key, index(key), "{key}");
            spans += usize::from(key == "span_id");
        }
    }
    assert_eq!(spans, 4);
}

#[test]
fn output_bytes_count_what_the_conversion_makes() {
    use any_value::Value as V;
    let (dict, prof) = with_attributes(
        vec![
            (
                "s",
                V::StringValue("long string copied, not made".into()),
                "",
            ),
            ("i", V::IntValue(-120), ""),
            ("a", array(vec![V::IntValue(7)]), ""),
            ("b", V::BoolValue(true), ""),
        ],
        None,
    );
    let base = {
        let mut s = prof.samples[0].clone();
        s.attribute_indices.clear();
        output_bytes(&dict, [&s])
    };
    let attrs = output_bytes(&dict, &prof.samples) - base;
    // Four labels; the decimal strings "-120" and "7" with their overhead.
    assert_eq!(attrs, 4 * 32 + (4 + 40) + (1 + 40));
    let mut linked = prof.samples[0].clone();
    linked.attribute_indices.clear();
    linked.link_index = 1;
    // Room for two labels (a list allocated for no attribute grows to 4), the 16- and
    // 32-character ids, their overhead and the link's labels.
    assert_eq!(
        output_bytes(&dict, [&linked]) - base,
        4 * 32 + (16 + 40) + (32 + 40) + 2 * 32
    );
    // With three attributes the list may grow to 2 * 3 + 4 labels.
    let mut both = prof.samples[0].clone();
    both.link_index = 1;
    both.attribute_indices.truncate(3);
    let three = {
        let mut s = both.clone();
        s.link_index = 0;
        output_bytes(&dict, [&s])
    };
    assert_eq!(
        output_bytes(&dict, [&both]) - three,
        (2 * 3 + 4 - 3) * 32 + (16 + 40) + (32 + 40) + 2 * 32
    );
    // (value, decimal length)
    for (n, len) in [
        (0, 1),
        (9, 1),
        (10, 2),
        (-1, 2),
        (i64::MAX, 19),
        (i64::MIN, 20),
    ] {
        assert_eq!(decimal_len(Some(&any(V::IntValue(n)))), Some(len), "{n}");
        assert_eq!(len as usize, n.to_string().len());
    }
    assert_eq!(decimal_len(Some(&any(V::StringValue("12".into())))), None);
    assert_eq!(
        decimal_len(Some(&any(array(vec![V::IntValue(1), V::IntValue(2)])))),
        None
    );
}

/// A dictionary whose one sample's stack has a location per entry of `mappings`, each with
/// its own mapping of those attribute indices. Strings: 0 "", 1 samples, 2 count, 3 the
/// build id key, 4 a 1 MiB string, 5 other. Attributes: 1 build id = 1 MiB inline, 2 build
/// id = string 4, 3 build id "a", 4 build id "b", 5 build id = int 5, 6 other = "x".
fn with_mappings(mappings: Vec<Vec<i32>>) -> (otlp::ProfilesDictionary, otlp::Profile) {
    use any_value::Value as V;
    let attr = |key: i32, value: V| otlp::KeyValueAndUnit {
        key_strindex: key,
        value: Some(any(value)),
        unit_strindex: 0,
    };
    let n = mappings.len() as i32;
    let big = "m".repeat(1 << 20);
    let dict = otlp::ProfilesDictionary {
        string_table: [
            "",
            "samples",
            "count",
            BUILD_ID_ATTRIBUTE,
            big.as_str(),
            "other",
        ]
        .map(String::from)
        .to_vec(),
        attribute_table: vec![
            otlp::KeyValueAndUnit::default(),
            attr(3, V::StringValue(big.clone())),
            attr(3, V::StringValueStrindex(4)),
            attr(3, V::StringValue("a".into())),
            attr(3, V::StringValue("b".into())),
            attr(3, V::IntValue(5)),
            attr(5, V::StringValue("x".into())),
        ],
        mapping_table: std::iter::once(otlp::Mapping::default())
            .chain(mappings.into_iter().map(|attribute_indices| otlp::Mapping {
                attribute_indices,
                ..otlp::Mapping::default()
            }))
            .collect(),
        location_table: std::iter::once(otlp::Location::default())
            .chain((1..=n).map(|m| otlp::Location {
                mapping_index: m,
                ..otlp::Location::default()
            }))
            .collect(),
        stack_table: vec![
            otlp::Stack::default(),
            otlp::Stack {
                location_indices: (1..=n).collect(),
            },
        ],
        ..otlp::ProfilesDictionary::default()
    };
    let prof = otlp::Profile {
        sample_type: Some(otlp::ValueType {
            type_strindex: 1,
            unit_strindex: 2,
        }),
        samples: vec![otlp::Sample {
            stack_index: 1,
            values: vec![1],
            ..otlp::Sample::default()
        }],
        ..otlp::Profile::default()
    };
    (dict, prof)
}

#[test]
fn a_build_id_is_read_once_however_often_it_is_listed() {
    // 200k references to a 1 MiB value: read or hashed once per reference, they would take
    // 200 GB of work, which does not finish; linear, each case takes well under a second.
    // Completing is the assertion (no timing is measured).
    const REFERENCES: usize = 200_000;
    let big = "m".repeat(1 << 20);
    let big = big.as_str();
    // (case, each mapping's attribute indices, each mapping's build id)
    type Mappings = Vec<Vec<i32>>;
    let cases: Vec<(&str, Mappings, Vec<&str>)> = vec![
        ("none", vec![vec![]], vec![""]),
        ("another key", vec![vec![6]], vec![""]),
        ("the last string wins", vec![vec![3, 4, 5, 6]], vec!["b"]),
        ("in list order", vec![vec![4, 6, 3]], vec!["a"]),
        (
            "one inline value listed 200k times",
            vec![vec![1; REFERENCES]],
            vec![big],
        ),
        (
            "one table string listed 200k times",
            vec![vec![2; REFERENCES]],
            vec![big],
        ),
        (
            "200k mappings sharing an inline value",
            vec![vec![1]; REFERENCES],
            vec![big; REFERENCES],
        ),
        (
            "200k mappings sharing a table string",
            vec![vec![2]; REFERENCES],
            vec![big; REFERENCES],
        ),
    ];
    for (case, mappings, want) in cases {
        let (dict, prof) = with_mappings(mappings);
        let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
        let mut dropped = DroppedAttributes::default();
        let p = samples_to_pprof(
            &dict,
            &prof,
            &samples,
            SampleLabels::Pyroscope,
            &[],
            &mut dropped,
        )
        .expect("converts");
        let got: Vec<&str> = p
            .mapping
            .iter()
            .map(|m| p.string_table[m.build_id as usize].as_str())
            .collect();
        assert!(got == want, "{case}");
        let copies = p.string_table.iter().filter(|s| *s == big).count();
        assert!(copies <= 1, "{case}: {copies} copies");
    }
}

#[test]
fn a_mapping_listing_a_bad_index_is_refused_whatever_its_build_id() {
    // Every index is checked, not only the build id that is read.
    for (case, attributes) in [("after", vec![3, 99]), ("before", vec![99, 3])] {
        let (dict, prof) = with_mappings(vec![attributes]);
        let samples: Vec<&otlp::Sample> = prof.samples.iter().collect();
        let mut dropped = DroppedAttributes::default();
        let got = samples_to_pprof(
            &dict,
            &prof,
            &samples,
            SampleLabels::Pyroscope,
            &[],
            &mut dropped,
        );
        assert!(
            matches!(
                got,
                Err(ConvertError::OtlpIndex {
                    table: "attribute_table",
                    index: 99,
                    ..
                })
            ),
            "{case}: {got:?}"
        );
    }
}
