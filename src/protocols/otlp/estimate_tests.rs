use std::mem::size_of;

use proptest::prelude::*;
use prost::Message;

use super::*;
use crate::profiles::Label;
use crate::protocols::otlp::convert::BUILD_ID_ATTRIBUTE;
use crate::protocols::otlp::ingest::{Ingested, ingest};
use crate::protocols::otlp::proto::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, any_value,
};
use crate::protocols::otlp::proto::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, ProfilesDictionary, ResourceProfiles,
    ScopeProfiles, Stack, ValueType,
};
use crate::protocols::otlp::proto::resource::v1::Resource;

/// What the server refuses past (`receiver_otlp::server::MAX_OUTPUT_BYTES`), which doubles
/// this estimate for the encoded pprofs.
const MAX_OUTPUT_BYTES: u64 = 1 << 30;

/// Bytes a converted profile holds on the heap, and its place in the output: every vector
/// at its capacity (spare room included) times its element's size, and every string's
/// capacity. (Not the encoded size: that is what the server's doubling of the estimate is
/// for; see `encoded` below.)
fn in_memory(i: &Ingested) -> u64 {
    fn vec<T>(v: &Vec<T>) -> u64 {
        (v.capacity() * size_of::<T>()) as u64
    }
    let p = &i.profile;
    let strings = |v: &Vec<String>| vec(v) + v.iter().map(|s| s.capacity() as u64).sum::<u64>();
    let labels = vec(&i.labels)
        + i.labels
            .iter()
            .map(|(k, v)| (k.capacity() + v.capacity()) as u64)
            .sum::<u64>();
    size_of::<Ingested>() as u64
        + labels
        + strings(&p.string_table)
        + vec(&p.function)
        + vec(&p.mapping)
        + vec(&p.location)
        + p.location.iter().map(|l| vec(&l.line)).sum::<u64>()
        + vec(&p.sample)
        + p.sample
            .iter()
            .map(|s| vec(&s.location_id) + vec(&s.value) + vec(&s.label))
            .sum::<u64>()
        + vec(&p.sample_type)
        + vec(&p.comment)
}

fn encoded(i: &Ingested) -> u64 {
    i.profile.encoded_len() as u64
        + i.labels
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum::<u64>()
}

fn text(s: &str) -> Option<AnyValue> {
    Some(AnyValue {
        value: Some(any_value::Value::StringValue(s.into())),
    })
}

fn kv(key: &str, value: Option<AnyValue>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value,
        ..KeyValue::default()
    }
}

fn attr(key: i32, value: Option<AnyValue>) -> KeyValueAndUnit {
    KeyValueAndUnit {
        key_strindex: key,
        value,
        unit_strindex: 0,
    }
}

fn request(
    dictionary: ProfilesDictionary,
    resources: Vec<(Vec<KeyValue>, Vec<otlp::Profile>)>,
) -> ExportProfilesServiceRequest {
    ExportProfilesServiceRequest {
        resource_profiles: resources
            .into_iter()
            .map(|(attributes, profiles)| ResourceProfiles {
                resource: Some(Resource {
                    attributes,
                    ..Resource::default()
                }),
                scope_profiles: vec![ScopeProfiles {
                    scope: Some(InstrumentationScope {
                        name: "ebpf-profiler".into(),
                        attributes: vec![kv("scope.attr", text("s"))],
                        ..InstrumentationScope::default()
                    }),
                    profiles,
                    ..ScopeProfiles::default()
                }],
                ..ResourceProfiles::default()
            })
            .collect(),
        dictionary: Some(dictionary),
    }
}

/// Strings every test dictionary starts with.
const STRINGS: [&str; 6] = ["", "samples", "count", "cpu", "nanoseconds", "service.name"];
const SERVICE_KEY: i32 = 5;

fn cpu_profile(samples: Vec<otlp::Sample>) -> otlp::Profile {
    otlp::Profile {
        sample_type: Some(ValueType {
            type_strindex: 1,
            unit_strindex: 2,
        }),
        period_type: Some(ValueType {
            type_strindex: 3,
            unit_strindex: 4,
        }),
        period: 10_000_000,
        samples,
        ..otlp::Profile::default()
    }
}

fn sample(stack: i32, attrs: Vec<i32>, link: i32) -> otlp::Sample {
    otlp::Sample {
        stack_index: stack,
        attribute_indices: attrs,
        link_index: link,
        values: vec![1],
        ..otlp::Sample::default()
    }
}

#[test]
fn a_huge_name_shared_by_many_services_is_refused() {
    // One 1 MiB function name on a shared one-frame stack, and 100k samples each naming its
    // own service: 100k parts, each copying the name. About 3 MB of request for ~100 GB.
    let mut strings: Vec<String> = STRINGS.iter().map(|s| s.to_string()).collect();
    strings.push("f".repeat(1 << 20));
    let services = 100_000;
    let mut attribute_table = vec![KeyValueAndUnit::default()];
    attribute_table.extend((0..services).map(|i| attr(SERVICE_KEY, text(&format!("s{i}")))));
    let dict = ProfilesDictionary {
        string_table: strings,
        function_table: vec![
            Function::default(),
            Function {
                name_strindex: 6,
                ..Function::default()
            },
        ],
        location_table: vec![
            Location::default(),
            Location {
                lines: vec![Line {
                    function_index: 1,
                    line: 1,
                    column: 0,
                }],
                ..Location::default()
            },
        ],
        stack_table: vec![
            Stack::default(),
            Stack {
                location_indices: vec![1],
            },
        ],
        attribute_table,
        ..ProfilesDictionary::default()
    };
    let samples = (1..=services).map(|a| sample(1, vec![a], 0)).collect();
    let req = request(dict, vec![(Vec::new(), vec![cpu_profile(samples)])]);
    let size = req.encoded_len() as u64;
    let got = request_output_bytes(&req);
    let per_sample = {
        let dict = req.dictionary.as_ref().expect("dictionary");
        output_bytes(
            dict,
            &req.resource_profiles[0].scope_profiles[0].profiles[0].samples,
        )
    };
    println!("bomb: request {size} bytes, estimate {got} bytes (per-sample terms {per_sample})");
    assert!(size < 4 << 20, "{size}");
    // The per-sample terms alone let it through: the hole this closes.
    assert!(per_sample < MAX_OUTPUT_BYTES, "{per_sample}");
    assert!(got > 100_000 * (1 << 20), "{got}");
    assert!(got > 50 * MAX_OUTPUT_BYTES, "{got}");
}

/// A realistic eBPF profiler request: 50 services, each with its own functions and stacks
/// over a few shared library frames, 5,000 samples, a ~2 MB dictionary.
fn realistic() -> ExportProfilesServiceRequest {
    let services = 50;
    let per_service_functions = 220;
    let shared_functions = 60;
    let mut strings: Vec<String> = STRINGS.iter().map(|s| s.to_string()).collect();
    strings.push("thread.name".into());
    let string = |strings: &mut Vec<String>, s: String| {
        strings.push(s);
        (strings.len() - 1) as i32
    };
    let mut functions = vec![Function::default()];
    let mut locations = vec![Location::default()];
    let mut mappings = vec![Mapping::default()];
    let lib = string(&mut strings, "/usr/lib/x86_64-linux-gnu/libc.so.6".into());
    mappings.push(Mapping {
        filename_strindex: lib,
        memory_limit: 1 << 30,
        ..Mapping::default()
    });
    let mut add_function = |strings: &mut Vec<String>, name: String, file: String, mapping| {
        let name = string(strings, name);
        let file = string(strings, file);
        functions.push(Function {
            name_strindex: name,
            system_name_strindex: name,
            filename_strindex: file,
            start_line: 1,
        });
        locations.push(Location {
            mapping_index: mapping,
            address: locations.len() as u64 * 16,
            lines: vec![Line {
                function_index: (functions.len() - 1) as i32,
                line: 42,
                column: 0,
            }],
            ..Location::default()
        });
        (locations.len() - 1) as i32
    };
    let shared: Vec<i32> = (0..shared_functions)
        .map(|f| {
            add_function(
                &mut strings,
                format!("__libc_shared_function_with_a_long_mangled_name_{f:04}_v2"),
                format!("/build/glibc-2.36/sysdeps/unix/sysv/linux/file_{f:04}.c"),
                1,
            )
        })
        .collect();
    let mut stacks = vec![Stack::default()];
    let mut attribute_table = vec![KeyValueAndUnit::default()];
    let mut samples = Vec::new();
    for svc in 0..services {
        let own: Vec<i32> = (0..per_service_functions)
            .map(|f| {
                add_function(
                    &mut strings,
                    format!(
                        "github.com/example/service{svc:02}/internal/handlers.(*Server).handleRequest{f:04}.func1"
                    ),
                    format!("/src/github.com/example/service{svc:02}/internal/handlers/h{f:04}.go"),
                    0,
                )
            })
            .collect();
        let first_stack = stacks.len() as i32;
        for st in 0..40 {
            let mut frames: Vec<i32> = (0..25).map(|d| own[(st * 7 + d * 3) % own.len()]).collect();
            frames.extend(&shared[(st % 10)..(st % 10) + 5]);
            stacks.push(Stack {
                location_indices: frames,
            });
        }
        attribute_table.push(attr(SERVICE_KEY, text(&format!("service-{svc:02}"))));
        let service_attr = (attribute_table.len() - 1) as i32;
        attribute_table.push(attr(6, text(&format!("worker-{svc}"))));
        let thread_attr = (attribute_table.len() - 1) as i32;
        for s in 0..100 {
            samples.push(sample(
                first_stack + (s % 40),
                vec![service_attr, thread_attr],
                0,
            ));
        }
    }
    let dict = ProfilesDictionary {
        string_table: strings,
        function_table: functions,
        location_table: locations,
        mapping_table: mappings,
        stack_table: stacks,
        attribute_table,
        ..ProfilesDictionary::default()
    };
    let resource = vec![
        kv("host.name", text("node-1.example.com")),
        kv("os.type", text("linux")),
    ];
    request(dict, vec![(resource, vec![cpu_profile(samples)])])
}

#[test]
fn a_realistic_request_is_far_from_the_limit() {
    let req = realistic();
    let dict_size = req.dictionary.as_ref().expect("dictionary").encoded_len();
    let got = request_output_bytes(&req);
    let out = ingest(&req, 1).expect("ingests");
    let built: u64 = out.profiles.iter().map(in_memory).sum();
    let encoded_size: u64 = out.profiles.iter().map(encoded).sum();
    println!(
        "realistic: dictionary {dict_size} bytes, {} parts, estimate {got} bytes \
         (server reserves {}), built {built} bytes in memory, {encoded_size} encoded; limit {MAX_OUTPUT_BYTES}",
        out.profiles.len(),
        got * 2
    );
    assert_eq!(out.profiles.len(), 50);
    assert!((1_800_000..2_600_000).contains(&dict_size), "{dict_size}");
    assert!(got >= built, "{got} < {built}");
    assert!(got * 2 < MAX_OUTPUT_BYTES / 8, "{got}");
}

#[test]
fn parts_are_measured_as_ingest_makes_them() {
    // (case, samples' service attributes, parts) — the same grouping as `ingest`.
    let mut strings: Vec<String> = STRINGS.iter().map(|s| s.to_string()).collect();
    strings.push("b".into());
    let int = |n| {
        Some(AnyValue {
            value: Some(any_value::Value::IntValue(n)),
        })
    };
    let dict = ProfilesDictionary {
        string_table: strings,
        location_table: vec![Location::default()],
        stack_table: vec![Stack::default()],
        attribute_table: vec![
            KeyValueAndUnit::default(),
            attr(SERVICE_KEY, text("a")),
            attr(SERVICE_KEY, text("b")),
            attr(
                SERVICE_KEY,
                Some(AnyValue {
                    value: Some(any_value::Value::StringValueStrindex(6)),
                }),
            ),
            attr(SERVICE_KEY, int(7)),
            attr(SERVICE_KEY, text("")),
        ],
        ..ProfilesDictionary::default()
    };
    let cases: [(&str, &[i32], usize); 5] = [
        ("none", &[], 0),
        ("one", &[1, 1, 1], 1),
        ("string and index of the same text", &[2, 3], 1),
        ("int, empty and absent", &[4, 5, 0], 2),
        ("all", &[1, 2, 3, 4, 5, 0], 4),
    ];
    for (case, attrs, parts) in cases {
        let samples = attrs
            .iter()
            .map(|&a| sample(0, if a == 0 { vec![] } else { vec![a] }, 0))
            .collect();
        let req = request(dict.clone(), vec![(Vec::new(), vec![cpu_profile(samples)])]);
        let prof = &req.resource_profiles[0].scope_profiles[0].profiles[0];
        assert_eq!(group_by_service(prof, &dict).len(), parts, "{case}");
        assert_eq!(ingest(&req, 1).expect(case).profiles.len(), parts, "{case}");
        // Each part costs at least its fixed overhead.
        assert!(request_output_bytes(&req) >= parts as u64 * PART, "{case}");
    }
}

/// A small deterministic generator, so that one proptest seed describes a whole request.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// An index in 1..n (entry 0 of each table is the default one).
    fn index(&mut self, n: usize) -> i32 {
        (1 + self.below(n - 1)) as i32
    }
}

/// A valid request: several resources and services, long strings shared by functions,
/// mappings, attributes and resource attributes, links of every id length, int, bool, array
/// and string attributes.
fn generated(seed: u64) -> ExportProfilesServiceRequest {
    let mut r = Rng(seed | 1);
    let mut strings: Vec<String> = STRINGS.iter().map(|s| s.to_string()).collect();
    strings.extend(["thread", BUILD_ID_ATTRIBUTE, "alloc_space", "bytes"].map(String::from));
    let big = 1 + r.below(3);
    for b in 0..big {
        strings.push(format!("{b}").repeat(1000 + r.below(20_000)));
    }
    for s in 0..r.below(20) {
        strings.push(format!("str{s}"));
    }
    let n_strings = strings.len();
    let functions: Vec<Function> = (0..1 + r.below(10))
        .map(|_| Function {
            name_strindex: r.index(n_strings),
            system_name_strindex: r.index(n_strings),
            filename_strindex: r.index(n_strings),
            start_line: 1,
        })
        .collect();
    let value = |r: &mut Rng| match r.below(6) {
        0 => Some(AnyValue {
            value: Some(any_value::Value::IntValue(r.next() as i64)),
        }),
        1 => Some(AnyValue {
            value: Some(any_value::Value::BoolValue(true)),
        }),
        2 => Some(AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue {
                values: vec![AnyValue {
                    value: Some(any_value::Value::IntValue(-(r.next() as i64).abs())),
                }],
            })),
        }),
        3 => Some(AnyValue {
            value: Some(any_value::Value::StringValueStrindex(r.index(n_strings))),
        }),
        4 => text(&"v".repeat(r.below(5000))),
        _ => text(&format!("value{}", r.below(10))),
    };
    let mut attributes = vec![KeyValueAndUnit::default()];
    for _ in 0..1 + r.below(12) {
        let key = match r.below(4) {
            0 | 1 => SERVICE_KEY,
            2 => 6,
            _ => r.index(n_strings),
        };
        attributes.push(attr(key, value(&mut r)));
    }
    let mappings_len = r.below(4);
    let mut mappings = vec![Mapping::default()];
    for _ in 0..mappings_len {
        let build_id = attr(7, text(&"b".repeat(r.below(3000))));
        attributes.push(build_id);
        mappings.push(Mapping {
            filename_strindex: r.index(n_strings),
            attribute_indices: vec![(attributes.len() - 1) as i32],
            ..Mapping::default()
        });
    }
    let mut function_table = vec![Function::default()];
    function_table.extend(functions);
    let mut locations = vec![Location::default()];
    for _ in 0..1 + r.below(12) {
        let lines = (0..r.below(4))
            .map(|_| Line {
                function_index: r.index(function_table.len()),
                line: 1,
                column: 0,
            })
            .collect();
        locations.push(Location {
            mapping_index: r.below(mappings.len()) as i32,
            lines,
            ..Location::default()
        });
    }
    let mut stacks = vec![Stack::default()];
    for _ in 0..1 + r.below(8) {
        stacks.push(Stack {
            location_indices: (0..r.below(10)).map(|_| r.index(locations.len())).collect(),
        });
    }
    let id = |r: &mut Rng, n: usize| (0..n).map(|_| r.next() as u8).collect::<Vec<u8>>();
    let mut links = vec![Link::default()];
    for _ in 0..r.below(4) {
        let span = [8, 8, 4, 0][r.below(4)];
        let trace = [16, 16, 3][r.below(3)];
        links.push(Link {
            trace_id: id(&mut r, trace),
            span_id: id(&mut r, span),
        });
    }
    let dict = ProfilesDictionary {
        string_table: strings,
        function_table,
        location_table: locations,
        mapping_table: mappings,
        stack_table: stacks,
        attribute_table: attributes,
        link_table: links,
    };
    let mut resources = Vec::new();
    for _ in 0..1 + r.below(3) {
        let mut attrs = Vec::new();
        for _ in 0..r.below(4) {
            let key = [
                "service.name",
                EXECUTABLE_NAME_ATTRIBUTE,
                "host.name",
                "big",
            ][r.below(4)];
            let v = value(&mut r);
            attrs.push(kv(key, v));
        }
        let mut profiles = Vec::new();
        for _ in 0..1 + r.below(2) {
            let samples = (0..r.below(60))
                .map(|_| {
                    let attrs = (0..r.below(4))
                        .map(|_| r.index(dict.attribute_table.len()))
                        .collect();
                    let link = r.below(dict.link_table.len()) as i32;
                    let mut s = sample(r.below(dict.stack_table.len()) as i32, attrs, link);
                    s.values = (0..1 + r.below(3)).map(|v| v as i64 + 1).collect();
                    s
                })
                .collect();
            let mut p = cpu_profile(samples);
            if r.below(2) == 0 {
                p.sample_type = Some(ValueType {
                    type_strindex: 8,
                    unit_strindex: 9,
                });
                p.period_type = None;
            }
            profiles.push(p);
        }
        resources.push((attrs, profiles));
    }
    request(dict, resources)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_estimate_bounds_what_ingest_builds(seed in any::<u64>()) {
        let req = generated(seed);
        let got = request_output_bytes(&req);
        let out = ingest(&req, 1).expect("a generated request is valid");
        let built: u64 = out.profiles.iter().map(in_memory).sum();
        let encoded_size: u64 = out.profiles.iter().map(encoded).sum();
        prop_assert!(got >= built, "estimate {} < built {}", got, built);
        prop_assert!(got >= encoded_size, "estimate {} < encoded {}", got, encoded_size);
    }
}

#[test]
fn past_the_walk_budget_a_stack_counts_all_its_locations() {
    // Stack 1 is [1, 1, 1]: walked, location 1 counts once; unwalked, three times.
    let mut req = realistic();
    let dict = req.dictionary.as_mut().expect("dictionary");
    dict.stack_table[1].location_indices = vec![1, 1, 1];
    let dict = req.dictionary.as_ref().expect("dictionary");
    let sizes = EntrySizes::new(dict);
    let s = sample(1, Vec::new(), 0);
    // (case, frames left to walk, bytes counted, frames left after)
    let one = sizes.locations[1];
    let cases = [("walked", 3, one, 0), ("budget spent", 2, 3 * one, 2)];
    for (case, budget, want, left) in cases {
        let mut walk = budget;
        assert_eq!(sizes.referenced(&[&s], &mut walk), want, "{case}");
        assert_eq!(walk, left, "{case}");
    }
}

#[test]
fn labels_keep_their_type() {
    // `Label` is the (key, value) pair `SERIES_LABEL` is sized for.
    assert_eq!(size_of::<Label>(), 2 * size_of::<String>());
}

#[test]
fn the_resource_service_name_is_charged_only_to_parts_that_take_it() {
    // A 64 KiB executable name on the resource, 100 samples each naming its own service:
    // every part copies the name as a series label, but `ingest` gives none of them the
    // resource's service name, so none is charged it (it was, twice, at 300 names); one
    // sample that names no service makes a part that takes it: label and service name.
    const NAME: u64 = 1 << 16;
    let services = 100;
    let mut attribute_table = vec![KeyValueAndUnit::default()];
    attribute_table.extend((0..services).map(|i| attr(SERVICE_KEY, text(&format!("s{i}")))));
    let dict = ProfilesDictionary {
        string_table: STRINGS.iter().map(|s| s.to_string()).collect(),
        location_table: vec![Location::default()],
        stack_table: vec![Stack::default()],
        attribute_table,
        ..ProfilesDictionary::default()
    };
    let resource = vec![kv(
        EXECUTABLE_NAME_ATTRIBUTE,
        text(&"e".repeat(NAME as usize)),
    )];
    let named: Vec<otlp::Sample> = (1..=services).map(|a| sample(0, vec![a], 0)).collect();
    let mut unnamed = named.clone();
    unnamed.push(sample(0, Vec::new(), 0));
    // (case, samples, the least and the most the estimate may be, in names)
    let cases = [
        ("every sample names its service", named, 100, 150),
        ("one does not", unnamed, 103, 150),
    ];
    for (case, samples, least, most) in cases {
        let req = request(
            dict.clone(),
            vec![(resource.clone(), vec![cpu_profile(samples)])],
        );
        let got = request_output_bytes(&req);
        assert!(got >= least * NAME && got <= most * NAME, "{case}: {got}");
        let built: u64 = ingest(&req, 1)
            .expect(case)
            .profiles
            .iter()
            .map(in_memory)
            .sum();
        assert!(got >= built, "{case}: estimate {got} < built {built}");
    }
}
