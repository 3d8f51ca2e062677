//! The Pyroscope querier as a profile source (`scraper::query::remote`), against the fake
//! querier of tests/support: the merged result of a query is exactly the merge of the stored
//! profiles it selects, long ranges are cut into day chunks the backend accepts, old servers
//! are served through `SelectMergeProfile`, and failures name the cause.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scraper::pprof::proto::{Function, Line, Location, Mapping, Profile, Sample, ValueType};
use scraper::pprof::reference::{StackKey, by_stack};
use scraper::query::remote::{RemoteOptions, RemoteSource};
use scraper::query::selector::Selector;
use scraper::query::source::{ProfileSource, ProfileType, Query, QueryError};
use support::fake_querier::{
    Config, DAY_MS, FakeQuerier, SELECT_MERGE_PROFILE, SELECT_MERGE_STACKTRACES, SERIES, Stored,
};

const HOUR_MS: i64 = 3_600_000;
/// 2023-11-14T22:13:20Z, a whole second like /ingest timestamps.
const T0: i64 = 1_700_000_000_000;

/// A Go-style CPU profile (samples/count and cpu/nanoseconds, 10 ms period) with one sample
/// per `(stack, samples)`, stacks leaf first.
fn cpu(stacks: &[(&[&str], i64)]) -> Profile {
    let mut p = Profile {
        string_table: vec![String::new()],
        ..Profile::default()
    };
    let s = |p: &mut Profile, text: &str| -> i64 {
        if let Some(i) = p.string_table.iter().position(|x| x == text) {
            return i as i64;
        }
        p.string_table.push(text.to_string());
        p.string_table.len() as i64 - 1
    };
    p.sample_type = vec![
        ValueType {
            r#type: s(&mut p, "samples"),
            unit: s(&mut p, "count"),
        },
        ValueType {
            r#type: s(&mut p, "cpu"),
            unit: s(&mut p, "nanoseconds"),
        },
    ];
    p.period_type = Some(ValueType {
        r#type: s(&mut p, "cpu"),
        unit: s(&mut p, "nanoseconds"),
    });
    p.period = 10_000_000;
    let filename = s(&mut p, "/app");
    p.mapping.push(Mapping {
        id: 1,
        filename,
        has_functions: true,
        ..Mapping::default()
    });
    for (stack, samples) in stacks {
        let mut ids = Vec::new();
        for name in *stack {
            let n = s(&mut p, name);
            let id = match p.function.iter().find(|f| f.name == n) {
                Some(f) => f.id,
                None => {
                    let id = p.function.len() as u64 + 1;
                    p.function.push(Function {
                        id,
                        name: n,
                        system_name: n,
                        filename,
                        start_line: 1,
                    });
                    p.location.push(Location {
                        id,
                        mapping_id: 1,
                        line: vec![Line {
                            function_id: id,
                            line: 10,
                            column: 0,
                        }],
                        ..Location::default()
                    });
                    id
                }
            };
            ids.push(id);
        }
        p.sample.push(Sample {
            location_id: ids,
            value: vec![*samples, samples * 10_000_000],
            label: vec![],
        });
    }
    p
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn stored(pairs: &[(&str, &str)], time_ms: i64, profile: Profile) -> Stored {
    let mut l = labels(&[("__name__", "process_cpu")]);
    l.extend(labels(pairs));
    Stored {
        labels: l,
        time_ms,
        profile,
    }
}

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms as u64)
}

fn query(selector: &str, from_ms: i64, to_ms: i64) -> Query {
    Query {
        selector: Selector::parse(selector).expect("selector"),
        profile_type: ProfileType::parse("process_cpu").expect("type"),
        from: at(from_ms),
        to: at(to_ms),
        exclude_straddling: false,
    }
}

/// What the querier should answer: the stored profiles' cpu/nanoseconds values, by stack.
fn expected(profiles: &[&Profile]) -> BTreeMap<StackKey, Vec<i64>> {
    let mut out: BTreeMap<StackKey, Vec<i64>> = BTreeMap::new();
    for p in profiles {
        for (key, values) in by_stack(p) {
            out.entry(key).or_insert_with(|| vec![0])[0] += values[1];
        }
    }
    out
}

/// The fake on a runtime of its own, so the source under test can block the test thread.
struct Server {
    fake: FakeQuerier,
    _runtime: tokio::runtime::Runtime,
}

fn serve(config: Config, data: Vec<Stored>) -> Server {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let fake = runtime.block_on(FakeQuerier::start(config, data));
    Server {
        fake,
        _runtime: runtime,
    }
}

fn source(url: &str, options: RemoteOptions) -> RemoteSource {
    RemoteSource::new(url, options).expect("source")
}

fn no_progress() -> impl FnMut(usize, usize) {
    |_, _| {}
}

fn remote_error(err: QueryError) -> (String, String) {
    match err {
        QueryError::Remote { url, message } => (url, message),
        other => panic!("not a remote error: {other}"),
    }
}

/// Series `app/a` (two profiles), `app/b`, `other`, and a memory profile of `app/a`, within
/// the first four hours after T0; plus profiles just outside `[T0, T0 + 4h)`.
fn fixture() -> (Vec<Stored>, [Profile; 4]) {
    let a1 = cpu(&[(&["spin", "main"], 3), (&["work", "main"], 1)]);
    let a2 = cpu(&[(&["spin", "main"], 2), (&["gc"], 5)]);
    let b = cpu(&[(&["work", "main"], 7)]);
    let other = cpu(&[(&["other", "main"], 11)]);
    let mut memory = cpu(&[(&["alloc", "main"], 13)]);
    memory.sample_type.truncate(1);
    for s in &mut memory.sample {
        s.value.truncate(1);
    }
    let n = memory.string_table.len() as i64;
    memory
        .string_table
        .extend(["space".to_string(), "bytes".to_string()]);
    memory.period_type = Some(ValueType {
        r#type: n,
        unit: n + 1,
    });
    let app_a = [("service_name", "app"), ("pod", "a")];
    let data = vec![
        stored(&app_a, T0 + HOUR_MS, a1.clone()),
        stored(&app_a, T0 + 2 * HOUR_MS, a2.clone()),
        stored(
            &[("service_name", "app"), ("pod", "b")],
            T0 + 3 * HOUR_MS,
            b.clone(),
        ),
        stored(&[("service_name", "other")], T0 + HOUR_MS, other.clone()),
        Stored {
            labels: labels(&[
                ("__name__", "memory"),
                ("service_name", "app"),
                ("pod", "a"),
            ]),
            time_ms: T0 + HOUR_MS,
            profile: memory,
        },
        // Before the range, and at its (exclusive) end.
        stored(&app_a, T0 - 1, cpu(&[(&["early"], 100)])),
        stored(&app_a, T0 + 4 * HOUR_MS, cpu(&[(&["late"], 100)])),
    ];
    (data, [a1, a2, b, other])
}

#[test]
fn select_merge_returns_exactly_the_matching_profiles() {
    let (data, [a1, a2, b, _other]) = fixture();
    let server = serve(Config::default(), data);
    let remote = source(&server.fake.url(), RemoteOptions::default());

    let cases: Vec<(&str, Vec<&Profile>, usize)> = vec![
        (r#"{service_name="app"}"#, vec![&a1, &a2, &b], 2),
        (r#"{service_name="app", pod=~"a"}"#, vec![&a1, &a2], 1),
        (r#"{pod="b"}"#, vec![&b], 1),
    ];
    for (selector, want, series) in cases {
        let merged = remote
            .select_merge(&query(selector, T0, T0 + 4 * HOUR_MS), &mut no_progress())
            .expect(selector)
            .expect("some profiles match");
        scraper::pprof::validate(&merged.profile).expect("valid");
        assert_eq!(merged.profile.sample_type.len(), 1, "{selector}");
        assert_eq!(by_stack(&merged.profile), expected(&want), "{selector}");
        assert_eq!(merged.series, series, "{selector}");
        assert_eq!(merged.profiles, 0, "unknown remotely");
    }
    let none = remote
        .select_merge(
            &query(r#"{service_name="nope"}"#, T0, T0 + 4 * HOUR_MS),
            &mut no_progress(),
        )
        .expect("query");
    assert!(none.is_none());

    // The requests, as the spec describes them.
    let calls = server.fake.calls_to(SELECT_MERGE_STACKTRACES);
    let first = &calls[0];
    assert_eq!(
        first.profile_type_id,
        "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    );
    assert_eq!(first.label_selector, r#"{service_name="app"}"#);
    assert_eq!((first.start, first.end), (T0, T0 + 4 * HOUR_MS - 1));
    assert_eq!(first.format, 4, "PROFILE_FORMAT_PPROF");
    assert_eq!(first.header("content-type"), Some("application/proto"));
    assert_eq!(first.header("connect-protocol-version"), Some("1"));
    assert!(first.header("x-scope-orgid").is_none());
    let series = server.fake.calls_to(SERIES);
    assert_eq!(
        series[0].matchers,
        [r#"{service_name="app", __profile_type__="process_cpu:cpu:nanoseconds:cpu:nanoseconds"}"#]
    );
    assert_eq!((series[0].start, series[0].end), (T0, T0 + 4 * HOUR_MS - 1));
    assert!(server.fake.calls_to(SELECT_MERGE_PROFILE).is_empty());
    assert!(
        remote
            .marks(at(T0), at(T0 + DAY_MS))
            .expect("marks")
            .is_empty()
    );
}

#[test]
fn long_queries_are_split_into_day_chunks() {
    // One profile per 6 h over three days, some exactly on chunk boundaries.
    let mut data = Vec::new();
    let mut all = Vec::new();
    for i in 0..12i64 {
        let p = cpu(&[
            (&["spin", "main"], i + 1),
            (&[if i % 2 == 0 { "even" } else { "odd" }], 1),
        ]);
        let pod = if i % 3 == 0 { "a" } else { "b" };
        data.push(stored(
            &[("service_name", "app"), ("pod", pod)],
            T0 + i * 6 * HOUR_MS,
            p.clone(),
        ));
        all.push(p);
    }
    let server = serve(Config::default(), data);
    let remote = source(&server.fake.url(), RemoteOptions::default());
    let mut progress = Vec::new();
    let merged = remote
        .select_merge(
            &query(r#"{service_name="app"}"#, T0, T0 + 3 * DAY_MS),
            &mut |done, total| progress.push((done, total)),
        )
        .expect("query")
        .expect("profiles");
    assert_eq!(
        by_stack(&merged.profile),
        expected(&all.iter().collect::<Vec<_>>())
    );
    assert_eq!(merged.series, 2);
    assert_eq!(progress, [(1, 3), (2, 3), (3, 3)]);
    let calls = server.fake.calls_to(SELECT_MERGE_STACKTRACES);
    let ranges: Vec<(i64, i64)> = calls.iter().map(|c| (c.start, c.end)).collect();
    assert_eq!(
        ranges,
        [
            (T0, T0 + DAY_MS - 1),
            (T0 + DAY_MS, T0 + 2 * DAY_MS - 1),
            (T0 + 2 * DAY_MS, T0 + 3 * DAY_MS - 1),
        ]
    );
    assert!(calls.iter().all(|c| c.status == 200));
    assert_eq!(server.fake.calls_to(SERIES).len(), 3);

    // A chunk with nothing in it is skipped, not an error; nothing at all is `None`.
    let sparse = remote
        .select_merge(
            &query(r#"{pod="a"}"#, T0 + HOUR_MS, T0 + 2 * DAY_MS + HOUR_MS),
            &mut no_progress(),
        )
        .expect("query")
        .expect("profiles");
    let want: Vec<&Profile> = [3usize, 6].iter().map(|&i| &all[i]).collect();
    assert_eq!(by_stack(&sparse.profile), expected(&want));
    let nothing = remote
        .select_merge(
            &query(r#"{service_name="app"}"#, T0 + 4 * DAY_MS, T0 + 6 * DAY_MS),
            &mut no_progress(),
        )
        .expect("query");
    assert!(nothing.is_none());
}

#[test]
fn old_servers_fall_back_to_select_merge_profile() {
    let (data, [a1, a2, b, _]) = fixture();
    let (early, late) = (data[5].profile.clone(), data[6].profile.clone());
    let server = serve(
        Config {
            omit_pprof: true,
            ..Config::default()
        },
        data,
    );
    let remote = source(&server.fake.url(), RemoteOptions::default());
    // Two chunks: the fallback is found on the first and used straight away for the second.
    let merged = remote
        .select_merge(
            &query(
                r#"{service_name="app"}"#,
                T0 - 2 * HOUR_MS,
                T0 + 23 * HOUR_MS,
            ),
            &mut no_progress(),
        )
        .expect("query")
        .expect("profiles");
    assert_eq!(
        by_stack(&merged.profile),
        expected(&[&early, &a1, &a2, &b, &late])
    );
    assert_eq!(server.fake.calls_to(SELECT_MERGE_STACKTRACES).len(), 1);
    let fallback = server.fake.calls_to(SELECT_MERGE_PROFILE);
    assert_eq!(fallback.len(), 2);
    assert_eq!(fallback[0].label_selector, r#"{service_name="app"}"#);
    assert_eq!(
        fallback[0].profile_type_id,
        "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    );
}

#[test]
fn gzipped_profiles_in_responses_are_read() {
    let (data, [a1, a2, b, _]) = fixture();
    let server = serve(
        Config {
            gzip_pprof: true,
            ..Config::default()
        },
        data,
    );
    let remote = source(&server.fake.url(), RemoteOptions::default());
    let merged = remote
        .select_merge(
            &query(r#"{service_name="app"}"#, T0, T0 + 4 * HOUR_MS),
            &mut no_progress(),
        )
        .expect("query")
        .expect("profiles");
    assert_eq!(by_stack(&merged.profile), expected(&[&a1, &a2, &b]));
}

#[test]
fn series_failures_cost_only_the_count() {
    let (data, [a1, a2, b, _]) = fixture();
    let server = serve(
        Config {
            fail_series: true,
            ..Config::default()
        },
        data,
    );
    let merged = source(&server.fake.url(), RemoteOptions::default())
        .select_merge(
            &query(r#"{service_name="app"}"#, T0, T0 + 4 * HOUR_MS),
            &mut no_progress(),
        )
        .expect("query")
        .expect("profiles");
    assert_eq!(by_stack(&merged.profile), expected(&[&a1, &a2, &b]));
    assert_eq!(merged.series, 0, "unknown");
    assert_eq!(server.fake.calls_to(SERIES)[0].status, 501);
}

#[test]
fn the_profile_type_picks_the_sample_type() {
    let (data, [a1, a2, b, _]) = fixture();
    let server = serve(Config::default(), data);
    let remote = source(&server.fake.url(), RemoteOptions::default());
    let mut q = query(r#"{service_name="app"}"#, T0, T0 + 4 * HOUR_MS);
    q.profile_type = ProfileType::parse("process_cpu:samples:count:cpu:nanoseconds").expect("type");
    let merged = remote
        .select_merge(&q, &mut no_progress())
        .expect("query")
        .expect("profiles");
    let mut want: BTreeMap<StackKey, Vec<i64>> = BTreeMap::new();
    for p in [&a1, &a2, &b] {
        for (key, values) in by_stack(p) {
            want.entry(key).or_insert_with(|| vec![0])[0] += values[0];
        }
    }
    assert_eq!(by_stack(&merged.profile), want);
    let s = |i: i64| merged.profile.string_table[i as usize].as_str();
    let t = merged.profile.sample_type[0];
    assert_eq!((s(t.r#type), s(t.unit)), ("samples", "count"));
    assert_eq!(
        server.fake.calls_to(SELECT_MERGE_STACKTRACES)[0].profile_type_id,
        "process_cpu:samples:count:cpu:nanoseconds"
    );

    // A memory query sees only the memory profile.
    q.profile_type = ProfileType::parse("memory:samples:count:space:bytes").expect("type");
    let memory = remote
        .select_merge(&q, &mut no_progress())
        .expect("query")
        .expect("profiles");
    assert_eq!(memory.profile.sample.len(), 1);
    assert_eq!(memory.profile.sample[0].value, [13]);
    assert_eq!(memory.series, 1);
}

#[test]
fn tenant_and_auth_are_sent() {
    let (data, [a1, a2, b, _]) = fixture();
    let server = serve(
        Config {
            tenant: Some("team-a".into()),
            basic_auth: Some(("stack".into(), "secret".into())),
            ..Config::default()
        },
        data,
    );
    let q = query(r#"{service_name="app"}"#, T0, T0 + 4 * HOUR_MS);
    let good = RemoteOptions {
        tenant: Some("team-a".into()),
        basic_auth: Some(("stack".into(), "secret".into())),
        headers: vec![("X-Extra".into(), "yes".into())],
        ..RemoteOptions::default()
    };
    let merged = source(&server.fake.url(), good.clone())
        .select_merge(&q, &mut no_progress())
        .expect("query")
        .expect("profiles");
    assert_eq!(by_stack(&merged.profile), expected(&[&a1, &a2, &b]));
    let call = &server.fake.calls()[0];
    assert_eq!(call.header("x-scope-orgid"), Some("team-a"));
    assert_eq!(call.header("x-extra"), Some("yes"));

    let cases: Vec<(&str, RemoteOptions, &[&str])> = vec![
        (
            "wrong password",
            RemoteOptions {
                basic_auth: Some(("stack".into(), "wrong".into())),
                ..good.clone()
            },
            &["unauthenticated", "401", "Unauthorized"],
        ),
        (
            "no tenant",
            RemoteOptions {
                tenant: None,
                ..good.clone()
            },
            &["unauthenticated", "401", "no org id"],
        ),
        (
            "other tenant",
            RemoteOptions {
                tenant: Some("team-b".into()),
                ..good.clone()
            },
            &["permission_denied", "403", "unknown tenant"],
        ),
    ];
    for (name, options, want) in cases {
        let err = source(&server.fake.url(), options)
            .select_merge(&q, &mut no_progress())
            .expect_err(name);
        let text = err.to_string();
        let (url, message) = remote_error(err);
        assert!(url.ends_with(SELECT_MERGE_STACKTRACES), "{name}: {url}");
        for w in want {
            assert!(message.contains(w), "{name}: {text}");
        }
    }

    let bearer = serve(
        Config {
            bearer_token: Some("tok".into()),
            ..Config::default()
        },
        fixture().0,
    );
    let ok = RemoteOptions {
        bearer_token: Some("tok".into()),
        ..RemoteOptions::default()
    };
    assert!(
        source(&bearer.fake.url(), ok)
            .select_merge(&q, &mut no_progress())
            .expect("bearer")
            .is_some()
    );
}

#[test]
fn backend_errors_and_unreachable_servers_are_clear() {
    // A backend whose max_query_length is 1 h rejects our day chunks with its message.
    let server = serve(
        Config {
            max_query_length_ms: HOUR_MS,
            ..Config::default()
        },
        fixture().0,
    );
    let remote = source(&server.fake.url(), RemoteOptions::default());
    let err = remote
        .select_merge(
            &query(r#"{service_name="app"}"#, T0, T0 + 4 * HOUR_MS),
            &mut no_progress(),
        )
        .expect_err("too long");
    let text = err.to_string();
    let (_, message) = remote_error(err);
    assert!(
        message.starts_with(
            "invalid_argument (HTTP 400): the query time range exceeds the limit (max_query_length"
        ),
        "{text}"
    );

    // A selector the backend cannot parse.
    let mut bad = query("{}", T0, T0 + HOUR_MS);
    bad.selector.matchers.push(
        scraper::query::selector::Matcher::new("a-b", scraper::query::selector::MatchOp::Eq, "x")
            .expect("matcher"),
    );
    let (_, message) = remote_error(
        remote
            .select_merge(&bad, &mut no_progress())
            .expect_err("bad selector"),
    );
    assert!(message.contains("invalid_argument (HTTP 400)"), "{message}");

    // Wrong base URL: the RPC is not there.
    let wrong = source(
        &format!("{}/prefix", server.fake.url()),
        RemoteOptions::default(),
    );
    let (url, message) = remote_error(
        wrong
            .select_merge(&query("{}", T0, T0 + HOUR_MS), &mut no_progress())
            .expect_err("404"),
    );
    assert!(url.contains("/prefix/querier.v1"), "{url}");
    assert!(message.starts_with("unimplemented (HTTP 404)"), "{message}");

    // Nobody listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let refused = source(
        &format!("http://127.0.0.1:{port}"),
        RemoteOptions::default(),
    );
    let err = refused
        .select_merge(&query("{}", T0, T0 + HOUR_MS), &mut no_progress())
        .expect_err("refused");
    let text = err.to_string();
    let (url, message) = remote_error(err);
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/")),
        "{url}"
    );
    assert!(message.starts_with("unavailable"), "{text}");
    assert!(message.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_from_inside_a_runtime() {
    let (data, [a1, a2, b, _]) = fixture();
    let fake = FakeQuerier::start(Config::default(), data).await;
    let remote = source(&fake.url(), RemoteOptions::default());
    let merged = remote
        .select_merge(
            &query(r#"{service_name="app"}"#, T0, T0 + 4 * HOUR_MS),
            &mut no_progress(),
        )
        .expect("query")
        .expect("profiles");
    assert_eq!(by_stack(&merged.profile), expected(&[&a1, &a2, &b]));
    // Dropping the source here must not panic either.
    drop(remote);
}

#[test]
fn series_lists_label_sets_and_feed_did_you_mean() {
    use scraper::query::catalog::{explain_no_match, format_labels, group_series};
    let (data, _) = fixture();
    let server = serve(Config::default(), data);
    let remote = source(&server.fake.url(), RemoteOptions::default());
    let (from, to) = (at(T0), at(T0 + 4 * HOUR_MS));

    let app = remote
        .series(
            &Selector::parse(r#"{service_name="app"}"#).expect("selector"),
            from,
            to,
        )
        .expect("series");
    let grouped = group_series(&app);
    let keys: Vec<String> = grouped.keys().map(|l| format_labels(l)).collect();
    assert_eq!(
        keys,
        [
            r#"{pod="a", service_name="app"}"#,
            r#"{pod="b", service_name="app"}"#
        ]
    );
    let pod_a = grouped.values().next().expect("pod a");
    assert!(
        pod_a.contains("process_cpu:cpu:nanoseconds:cpu:nanoseconds"),
        "{pod_a:?}"
    );
    assert!(pod_a.iter().any(|t| t.starts_with("memory:")), "{pod_a:?}");

    // `{}` goes out as no matcher at all: every series.
    let all = remote
        .series(&Selector::default(), from, to)
        .expect("series");
    assert!(
        server
            .fake
            .calls_to(SERIES)
            .iter()
            .any(|c| c.matchers.is_empty())
    );
    let misspelt = Selector::parse(r#"{service_name="ap"}"#).expect("selector");
    let cpu = ProfileType::parse("process_cpu").expect("type");
    assert_eq!(
        explain_no_match(&misspelt, &cpu, &all),
        [r#"did you mean service_name="app"?"#]
    );
}

/// `scraper window --at` judges the windows around a time on a Pyroscope backend, which keeps
/// no marks: here both windows are long over, so nothing is waited for. `spin` went from 1 to
/// 9 samples a profile while `work` stayed: `flat=~^spin$` held (exit 3), the total's 80 %
/// did not reach 100 %. Its stdout closed early is no panic; `diff --url --around-mark` says
/// why a backend cannot answer it.
#[test]
fn window_at_judges_a_backend_without_marks() {
    use std::process::{Command, Stdio};
    const BIN: &str = env!("CARGO_BIN_EXE_scraper");
    let app = [("service_name", "app")];
    let before = cpu(&[(&["spin", "main"], 1), (&["work", "main"], 9)]);
    let after = cpu(&[(&["spin", "main"], 9), (&["work", "main"], 9)]);
    let minute = 60_000;
    let data = vec![
        stored(&app, T0 + 10 * minute, before.clone()),
        stored(&app, T0 + 40 * minute, before),
        stored(&app, T0 + HOUR_MS + 10 * minute, after.clone()),
        stored(&app, T0 + HOUR_MS + 40 * minute, after),
    ];
    let server = serve(Config::default(), data);
    let url = server.fake.url();
    let at = ((T0 + HOUR_MS) / 1000).to_string();
    let window = |extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["window", r#"{service_name="app"}"#, "--at", &at])
            .args(["--width", "1h", "--settle", "0s", "--url", &url])
            .args(["--missing-statistics", "estimates"])
            .args(["--fail-on", "flat=~^spin$>100%", "--fail-on", "total>100%"])
            .args(extra);
        c
    };
    let show = |out: &std::process::Output| {
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };

    let out = window(&["--format", "json"]).output().expect("run window");
    let shown = show(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect(&shown);
    if doc["statistics"].is_null() {
        assert_eq!(out.status.code(), Some(3), "{shown}");
        let conditions = &doc["fail_on"]["conditions"];
        assert_eq!(conditions[0]["held"], true, "{shown}");
        assert_eq!(conditions[0]["triggers"][0]["function"], "spin", "{shown}");
        assert_eq!(conditions[1]["held"], false, "{shown}");
        assert_eq!(doc["exit_code"], 3);
    }
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("waiting"),
        "{shown}"
    );
    let spin = doc["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["function"] == "spin"))
        .expect(&shown);
    assert_eq!(spin["flat"]["change_pct"], 800.0, "{shown}");
    assert_eq!(doc["total"]["change_pct"], 80.0, "{shown}");
    // Both windows were asked of the backend (ends inclusive, the millisecond before).
    let asked: Vec<(i64, i64)> = server
        .fake
        .calls_to(SELECT_MERGE_STACKTRACES)
        .iter()
        .map(|c| (c.start, c.end))
        .collect();
    assert!(asked.contains(&(T0, T0 + HOUR_MS - 1)), "{asked:?}");
    assert!(
        asked.contains(&(T0 + HOUR_MS, T0 + 2 * HOUR_MS - 1)),
        "{asked:?}"
    );

    // A reader that goes away (`| head`) must not turn the verdict into a panic (101).
    let mut child = window(&["--top", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start window");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("window");
    let code = out.status.code();
    assert!(code == Some(3) || code == Some(0), "{}", show(&out));

    // A report file that cannot be written fails the step (1) before stdout prints a
    // document that would claim another exit code.
    let out = window(&["--format", "json", "--json", "/nonexistent/report.json"])
        .output()
        .expect("run window");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(out.stdout.is_empty(), "{}", show(&out));

    // A backend has no marks: say so, instead of "no mark named".
    let out = Command::new(BIN)
        .args(["diff", r#"{service_name="app"}"#, "--url", &url])
        .args(["--around-mark", "deploy"])
        .output()
        .expect("run diff");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("marks are not available from a Pyroscope backend"),
        "{}",
        show(&out)
    );
}
