//! The request seeds of fuzz/corpus/querier: one valid request of every method (some gzipped,
//! some with every optional field), and a few invalid ones. The pprof seeds are copies of
//! tests/data/pprof made by fuzz/make-seeds.sh.

use prost::Message as _;

use crate::protocols::pyroscope::proto::querier::v1 as q;
use crate::protocols::pyroscope::proto::types::v1 as t;

const CPU: &str = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const START: i64 = 1_700_000_000_000;
const END: i64 = 1_700_003_600_000;

fn stacktraces(format: i32, max_nodes: Option<i64>) -> q::SelectMergeStacktracesRequest {
    q::SelectMergeStacktracesRequest {
        profile_type_id: CPU.into(),
        label_selector: r#"{service_name="web", env=~"prod|staging", pod!=""}"#.into(),
        start: START,
        end: END,
        max_nodes,
        format,
        ..Default::default()
    }
}

/// (file name, request body).
fn fuzz_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let matchers = vec![r#"{service_name="web"}"#.to_string(), "{}".to_string()];
    let call_site = t::StackTraceSelector {
        call_site: ["main", "handle"]
            .map(|name| t::Location { name: name.into() })
            .to_vec(),
        go_pgo: None,
    };
    let pgo = t::StackTraceSelector {
        call_site: Vec::new(),
        go_pgo: Some(t::GoPgo {
            keep_locations: 5,
            aggregate_callees: true,
        }),
    };
    let series = q::SelectSeriesRequest {
        profile_type_id: "memory:inuse_space:bytes:space:bytes".into(),
        label_selector: r#"{__profile_type__="memory:inuse_space:bytes:space:bytes"}"#.into(),
        start: START,
        end: END,
        group_by: vec!["service_name".into(), "pod".into()],
        step: 15.0,
        aggregation: Some(t::TimeSeriesAggregationType::Average as i32),
        stack_trace_selector: None,
        limit: Some(10),
    };
    let seeds: Vec<(&'static str, Vec<u8>)> = vec![
        (
            "profile-types",
            q::ProfileTypesRequest {
                start: START,
                end: END,
            }
            .encode_to_vec(),
        ),
        (
            "label-names",
            t::LabelNamesRequest {
                matchers: matchers.clone(),
                start: START,
                end: 0,
            }
            .encode_to_vec(),
        ),
        (
            "label-values",
            t::LabelValuesRequest {
                name: "service_name".into(),
                matchers: matchers.clone(),
                start: 0,
                end: END,
            }
            .encode_to_vec(),
        ),
        (
            "series",
            q::SeriesRequest {
                matchers,
                label_names: vec!["service_name".into(), "__profile_type__".into()],
                start: START,
                end: END,
            }
            .encode_to_vec(),
        ),
        ("profile-stats-empty", Vec::new()),
        (
            "stacktraces-flamegraph",
            stacktraces(q::ProfileFormat::Flamegraph as i32, Some(16)).encode_to_vec(),
        ),
        (
            "stacktraces-call-site",
            q::SelectMergeStacktracesRequest {
                stack_trace_selector: Some(call_site.clone()),
                ..stacktraces(0, None)
            }
            .encode_to_vec(),
        ),
        (
            "stacktraces-pprof-pgo",
            q::SelectMergeStacktracesRequest {
                stack_trace_selector: Some(pgo.clone()),
                ..stacktraces(q::ProfileFormat::Pprof as i32, None)
            }
            .encode_to_vec(),
        ),
        (
            "merge-profile",
            q::SelectMergeProfileRequest {
                profile_type_id: "memory".into(),
                label_selector: "{}".into(),
                start: START,
                end: END,
                max_nodes: Some(1024),
                stack_trace_selector: Some(pgo),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        ("select-series", series.clone().encode_to_vec()),
        (
            "select-series.gz",
            crate::pprof::gzip(&series.encode_to_vec(), 1),
        ),
        (
            "diff",
            q::DiffRequest {
                left: Some(stacktraces(0, Some(8))),
                right: Some(q::SelectMergeStacktracesRequest {
                    stack_trace_selector: Some(call_site),
                    end: 0,
                    ..stacktraces(1, None)
                }),
            }
            .encode_to_vec(),
        ),
        (
            "diff.gz",
            crate::pprof::gzip(
                &q::DiffRequest {
                    left: Some(stacktraces(0, Some(1))),
                    right: Some(stacktraces(0, Some(1))),
                }
                .encode_to_vec(),
                1,
            ),
        ),
        (
            "invalid-selector-and-range",
            q::SelectMergeStacktracesRequest {
                label_selector: r#"{service_name=~"(", "#.into(),
                start: END,
                end: START,
                max_nodes: Some(-1),
                ..stacktraces(9, None)
            }
            .encode_to_vec(),
        ),
        (
            "invalid-step",
            q::SelectSeriesRequest {
                step: f64::NAN,
                aggregation: Some(7),
                profile_type_id: "a:b".into(),
                ..series
            }
            .encode_to_vec(),
        ),
        ("profile-root-self", root_self_profile()),
    ];
    seeds
}

/// A profile with a sample without locations (its value is the flame graph root's own) and
/// one with a stack: what the fuzz target's first finding needed (see fuzz/README.md).
fn root_self_profile() -> Vec<u8> {
    use crate::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};
    Profile {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        sample: vec![
            Sample {
                location_id: vec![],
                value: vec![5],
                label: vec![],
            },
            Sample {
                location_id: vec![1],
                value: vec![3],
                label: vec![],
            },
        ],
        location: vec![Location {
            id: 1,
            line: vec![Line {
                function_id: 1,
                line: 1,
                column: 0,
            }],
            ..Default::default()
        }],
        function: vec![Function {
            id: 1,
            name: 3,
            ..Default::default()
        }],
        string_table: ["", "samples", "count", "main"].map(String::from).to_vec(),
        ..Default::default()
    }
    .encode_to_vec()
}

fn corpus() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/querier")
}

/// Writes the request seeds of fuzz/corpus/querier (fuzz/make-seeds.sh runs this).
#[test]
#[ignore = "writes files; run by fuzz/make-seeds.sh (committed_fuzz_seeds_are_current checks them)"]
fn write_fuzz_seeds() {
    std::fs::create_dir_all(corpus()).expect("mkdir");
    for (name, bytes) in fuzz_seeds() {
        std::fs::write(corpus().join(name), bytes).expect("write seed");
    }
}

/// The regenerate-and-diff half of `write_fuzz_seeds`, which CI runs.
#[test]
fn committed_fuzz_seeds_are_current() {
    for (name, bytes) in fuzz_seeds() {
        let path = corpus().join(name);
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            committed == bytes,
            "{} is stale: run fuzz/make-seeds.sh querier",
            path.display()
        );
    }
}

/// Every valid seed is answered by its method (over no store), every invalid one refused
/// with invalid_argument: the seeds exercise what they are named after.
#[test]
fn seeds_reach_their_methods() {
    let method = |name: &str| -> Option<&str> {
        Some(match name.trim_end_matches(".gz") {
            "profile-types" => "ProfileTypes",
            "label-names" => "LabelNames",
            "label-values" => "LabelValues",
            "series" => "Series",
            "profile-stats-empty" => "GetProfileStats",
            "merge-profile" => "SelectMergeProfile",
            "select-series" | "invalid-step" => "SelectSeries",
            "diff" => "Diff",
            // A profile, not a request: no method's message (a profile's fields are not theirs).
            "profile-root-self" => return None,
            _ => "SelectMergeStacktraces",
        })
    };
    for (name, body) in fuzz_seeds() {
        let Some(method) = method(name) else { continue };
        let encoding = name.ends_with(".gz").then_some("gzip");
        let got = super::fuzz_request(method, encoding, &body);
        if name.starts_with("invalid-") {
            assert_eq!(got.expect_err(name).0, 400, "{name}");
        } else {
            got.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
    }
}
