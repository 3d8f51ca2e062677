//! `otelcol.exporter.otlphttp_profiles` against the recording receiver's OTLP/HTTP route
//! (Pyroscope's `/v1development/profiles`, decoded with our protos and converted back to
//! pprof): real Go profiles arrive with every value and their labels; 429/502/503/504 are
//! retried and other statuses dropped and counted; headers and compression are as configured.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;
use scraper::components::otelcol::exporter_otlphttp::OtlpHttpProfiles;
use scraper::pprof::proto::Profile as Pprof;
use scraper::profiles::{Profile, Receiver};
use scraper::runtime::{BoxError, Component as _, ComponentOptions, MetricsRegistry};
use scraper::syntax::value::Value;
use support::pyroscope_receiver::{Fault, PyroscopeReceiver, metric_value};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

struct Exporter {
    component: Arc<OtlpHttpProfiles>,
    receiver: Arc<Receiver>,
    metrics: MetricsRegistry,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), BoxError>>,
}

impl Exporter {
    /// Builds and runs `otelcol.exporter.otlphttp_profiles "test" { <body> }`.
    fn start(body: &str) -> Exporter {
        use scraper::syntax::eval::{Scope, eval_body};
        use scraper::syntax::parser::parse_file;
        let (file, diags) = parse_file(body);
        assert!(diags.is_empty(), "{diags:?}");
        let evaluated = eval_body(&file.body, &Scope::stdlib()).expect("eval");
        let args = scraper::syntax::decode::from_body::<
            <OtlpHttpProfiles as scraper::runtime::Component>::Arguments,
        >(&evaluated)
        .expect("valid arguments");
        let opts = ComponentOptions::standalone(
            "otelcol.exporter.otlphttp_profiles.test",
            "otelcol.exporter.otlphttp_profiles",
            OtlpHttpProfiles::initial_exports(),
        );
        let metrics = opts.metrics.clone();
        let exports = opts.exports.clone();
        let component = Arc::new(OtlpHttpProfiles::build(opts, args).expect("build"));
        let receiver = match exports.current() {
            Value::Object(o) => match o.get("receiver") {
                Some(Value::Capsule(c)) => c.downcast::<Receiver>().expect("receiver"),
                other => panic!("no receiver export: {other:?}"),
            },
            other => panic!("exports: {other:?}"),
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(component.clone().run(shutdown.clone()));
        Exporter {
            component,
            receiver,
            metrics,
            shutdown,
            task,
        }
    }

    fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric_value(&self.metrics.encode().expect("encode"), name, labels)
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.expect("join").expect("run");
    }
}

fn fixture(name: &str) -> (Vec<u8>, Pprof) {
    let path = format!("{}/tests/data/pprof/{name}", env!("CARGO_MANIFEST_DIR"));
    let raw = std::fs::read(&path).expect("fixture");
    let p = scraper::pprof::decode(&raw, &scraper::pprof::Limits::default()).expect("decode");
    (raw, p)
}

fn profile(raw: &[u8], service: &str, seq: usize) -> Profile {
    Profile::new(
        vec![
            ("__name__".into(), "memory".into()),
            ("service_name".into(), service.into()),
            ("namespace".into(), "otel".into()),
            ("seq".into(), seq.to_string()),
        ],
        raw.to_vec(),
    )
}

/// Total per sample type name.
fn totals(p: &Pprof) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for (k, vt) in p.sample_type.iter().enumerate() {
        let name = p.string_table[vt.r#type as usize].clone();
        *out.entry(name).or_insert(0) += p.sample.iter().map(|s| s.value[k]).sum::<i64>();
    }
    out
}

fn config(url: &str, extra: &str) -> String {
    format!(
        "client {{\n  endpoint = \"{url}\"\n  headers = {{ \"X-Scope-OrgID\" = \"team-a\" }}\n}}\nretry_on_failure {{\n  initial_interval = \"5ms\"\n  max_interval = \"100ms\"\n}}\n{extra}\n"
    )
}

async fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_profiles_arrive_with_their_values_and_labels() {
    let rx = PyroscopeReceiver::start().await;
    let exporter = Exporter::start(&config(&rx.url(), ""));
    let names = [
        "goapp-heap-1.pb.gz",
        "goapp-block-2.pb.gz",
        "prometheus-mutex-1.pb.gz",
    ];
    let mut want = BTreeMap::new();
    let mut types = 0;
    for (i, name) in names.iter().enumerate() {
        let (raw, p) = fixture(name);
        types += p.sample_type.len();
        for (t, v) in totals(&p) {
            want.insert((format!("svc-{i}"), t), v);
        }
        exporter
            .receiver
            .append(vec![profile(&raw, &format!("svc-{i}"), i)]);
    }
    assert!(
        rx.wait_for(types, WAIT).await,
        "{} of {types} arrived",
        rx.count()
    );
    let mut got = BTreeMap::new();
    for r in rx.received() {
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.header("x-scope-orgid"), Some("team-a"));
        assert_eq!(r.label("namespace"), Some("otel"));
        assert!(r.label("__name__").is_none(), "{:?}", r.labels);
        let service = r.label("service_name").expect("service_name").to_owned();
        let seq = r.label("seq").expect("seq");
        assert_eq!(service, format!("svc-{seq}"));
        let p = Pprof::decode(r.raw.as_ref()).expect("pprof");
        assert_eq!(p.sample_type.len(), 1);
        for (t, v) in totals(&p) {
            got.insert((service.clone(), t), v);
        }
    }
    assert_eq!(got, want);
    // Counted once the sender has read the answer, just after the receiver stored it.
    let sent = names.len() as f64;
    assert!(
        wait_until(|| exporter.metric("pyroscope_write_sent_profiles_total", &[]) == sent).await,
        "sent: {}",
        exporter.metric("pyroscope_write_sent_profiles_total", &[])
    );
    exporter.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_statuses_are_retried_and_others_dropped_and_counted() {
    let rx = PyroscopeReceiver::start().await;
    let exporter = Exporter::start(&config(&rx.url(), ""));
    let (raw, p) = fixture("goapp-mutex-1.pb.gz");
    let types = p.sample_type.len();

    // 429, 502, 503, 504: retried until accepted.
    for status in [429, 502, 503, 504] {
        rx.fail_next(1, Fault::Status(status));
    }
    exporter.receiver.append(vec![profile(&raw, "retried", 0)]);
    assert!(
        rx.wait_for(types, WAIT).await,
        "the retried profile never arrived"
    );
    assert_eq!(rx.request_count(), 5);

    // 400 and 413 are permanent: one request each, the profile dropped and counted.
    for (i, status) in [400, 413].into_iter().enumerate() {
        let before = rx.request_count();
        rx.fail_next(1, Fault::Status(status));
        exporter.receiver.append(vec![profile(&raw, "rejected", i)]);
        let dropped = (i + 1) as f64;
        assert!(
            wait_until(|| exporter.metric(
                "pyroscope_write_dropped_profiles_total",
                &[("reason", "rejected")]
            ) == dropped)
            .await,
            "HTTP {status} not counted as rejected"
        );
        assert_eq!(rx.request_count(), before + 1, "HTTP {status} was retried");
    }
    assert_eq!(rx.count(), types, "nothing rejected was stored");
    exporter.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncompressed_exports_and_a_custom_profiles_endpoint() {
    let rx = PyroscopeReceiver::start().await;
    let body = format!(
        "client {{\n  endpoint = \"http://127.0.0.1:1\"\n  compression = \"none\"\n}}\nprofiles_endpoint = \"{}/v1development/profiles\"\n",
        rx.url()
    );
    let exporter = Exporter::start(&body);
    let (raw, p) = fixture("goapp-heap-2.pb.gz");
    exporter.receiver.append(vec![profile(&raw, "plain", 0)]);
    assert!(rx.wait_for(p.sample_type.len(), WAIT).await);
    let r = &rx.received()[0];
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    exporter.stop().await;
}

#[test]
fn bad_arguments_are_clear_errors() {
    use scraper::syntax::eval::{Scope, eval_body};
    use scraper::syntax::parser::parse_file;
    let build = |body: &str| -> String {
        let (file, _) = parse_file(body);
        let evaluated = eval_body(&file.body, &Scope::stdlib()).expect("eval");
        let args = match scraper::syntax::decode::from_body::<
            <OtlpHttpProfiles as scraper::runtime::Component>::Arguments,
        >(&evaluated)
        {
            Ok(a) => a,
            Err(d) => return format!("{d:?}"),
        };
        let opts = ComponentOptions::standalone(
            "otelcol.exporter.otlphttp_profiles.bad",
            "otelcol.exporter.otlphttp_profiles",
            OtlpHttpProfiles::initial_exports(),
        );
        match OtlpHttpProfiles::build(opts, args) {
            Ok(_) => "built".into(),
            Err(e) => e.to_string(),
        }
    };
    assert!(
        build("client {\n endpoint = \"http://x\"\n compression = \"zstd\"\n}\n")
            .contains("compression \"zstd\" is not supported")
    );
    assert!(build("client {\n endpoint = \"not a url\"\n}\n").contains("is invalid"));
    assert!(build("").contains("client"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_retries_disabled_a_failed_export_is_dropped_at_once() {
    let rx = PyroscopeReceiver::start().await;
    let body = format!(
        "client {{\n  endpoint = \"{}\"\n}}\nretry_on_failure {{\n  enabled = false\n}}\n",
        rx.url()
    );
    let exporter = Exporter::start(&body);
    let (raw, _) = fixture("goapp-mutex-2.pb.gz");
    rx.fail_next(1, Fault::Status(503));
    exporter.receiver.append(vec![profile(&raw, "once", 0)]);
    assert!(
        wait_until(|| exporter.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "retries_exhausted")]
        ) == 1.0)
        .await,
        "the failed export was not dropped"
    );
    assert_eq!(rx.request_count(), 1);
    assert_eq!(rx.count(), 0);
    exporter.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_client_certificate_and_a_server_name_override() {
    let tls = support::pyroscope_receiver::MutualTls::start(&["otlp.internal"]).await;
    let (rx, ca_file, cert_file, key_file) = (&tls.rx, &tls.ca_file, &tls.cert_file, &tls.key_file);
    // The certificate names otlp.internal; the URL says localhost.
    let body = format!(
        "client {{\n  endpoint = \"{}\"\n  tls {{\n    ca_file = \"{ca_file}\"\n    cert_file = \"{cert_file}\"\n    key_file = \"{key_file}\"\n    server_name_override = \"otlp.internal\"\n  }}\n}}\n",
        rx.url()
    );
    let exporter = Exporter::start(&body);
    let (raw, p) = fixture("goapp-heap-1.pb.gz");
    exporter.receiver.append(vec![profile(&raw, "tls", 0)]);
    assert!(
        rx.wait_for(p.sample_type.len(), WAIT).await,
        "nothing arrived over TLS ({} requests)",
        rx.request_count()
    );
    exporter.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_rejection_is_logged_once_then_summed_up() {
    support::logs::capture();
    let rx = PyroscopeReceiver::start().await;
    // A backend without the profiles route: every export is a 404, profile after profile.
    let endpoint = format!("{}/no-such-route", rx.url());
    let body = format!(
        "client {{\n  endpoint = \"http://127.0.0.1:1\"\n}}\nprofiles_endpoint = \"{endpoint}\"\n"
    );
    let exporter = Exporter::start(&body);
    let (raw, _) = fixture("goapp-mutex-1.pb.gz");
    let n = 20;
    for i in 0..n {
        exporter.receiver.append(vec![profile(&raw, "rejected", i)]);
    }
    let rejected = || {
        exporter.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "rejected")],
        )
    };
    assert!(
        wait_until(|| rejected() == n as f64).await,
        "{}",
        rejected()
    );
    assert_eq!(rx.request_count(), n, "a 404 is not retried");
    let lines = || {
        support::logs::matching(
            "endpoint",
            &endpoint,
            Some("push rejected; dropped profiles"),
        )
    };
    let first = lines();
    assert_eq!(first.len(), 1, "{}", support::logs::dump());
    assert_eq!(support::logs::number(&first[0], "profiles"), 1);
    assert!(
        first[0]["err"]
            .as_str()
            .is_some_and(|e| e.contains("HTTP 404")),
        "{}",
        first[0]
    );
    let health = scraper::runtime::Component::health(exporter.component.as_ref())
        .expect("unhealthy while dropping");
    assert!(
        health.message.contains("rejected: not_found (HTTP 404)"),
        "{}",
        health.message
    );
    // The rest, summed up in one line at exit: together they are every rejection.
    exporter.stop().await;
    let counts: Vec<u64> = lines()
        .iter()
        .map(|l| support::logs::number(l, "profiles"))
        .collect();
    assert_eq!(counts, [1, n as u64 - 1]);
}
