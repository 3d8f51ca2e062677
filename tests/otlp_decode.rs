//! Our OTLP profiles export, read by a decoder we did not write: OpenTelemetry's generated
//! Python messages (PyPI opentelemetry-proto 1.45.2, installed pinned by
//! `tests/otlp/install.sh`). Real Go profiles are converted with `scraper::protocols::otlp::convert`, the
//! request is decoded by `tests/otlp/decode.py`, and every sample value must be found under the
//! same stack, labels and sample type as in the source pprof.
//!
//! Without the decoder the test prints why and passes, unless
//! `SCRAPER_REQUIRE_OTLP_DECODER=1` (set by .ci/run) makes that a failure.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use prost::Message as _;
use scraper::pprof::proto::Profile;
use scraper::protocols::otlp::convert::RequestBuilder;
use serde_json::Value;

fn decoder_python() -> Option<PathBuf> {
    support::tools::venv_python(
        "otlp-decoder",
        "opentelemetry.proto.profiles.v1development",
        "SCRAPER_REQUIRE_OTLP_DECODER",
        "tests/otlp/install.sh",
    )
}

/// A sample as the decoder prints it: the stack (per location, its lines as [function, file,
/// line]) and the sorted [key, value, unit] attributes, as JSON text.
type Key = (String, String);

/// What the source pprof says, per sample type: value per (stack, labels), zeros left out.
fn expected(p: &Profile, k: usize) -> BTreeMap<Key, i64> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for sample in &p.sample {
        let v = sample.value[k];
        if v == 0 {
            continue;
        }
        let stack: Vec<Value> = sample
            .location_id
            .iter()
            .map(|id| {
                let l = p.location.iter().find(|l| l.id == *id).expect("location");
                Value::Array(
                    l.line
                        .iter()
                        .map(|ln| {
                            let f = p
                                .function
                                .iter()
                                .find(|f| f.id == ln.function_id)
                                .expect("function");
                            serde_json::json!([s(f.name), s(f.filename), ln.line])
                        })
                        .collect(),
                )
            })
            .collect();
        let mut attrs: Vec<Value> = sample
            .label
            .iter()
            .map(|l| {
                let value = if l.str != 0 {
                    s(l.str)
                } else {
                    l.num.to_string()
                };
                serde_json::json!([s(l.key), value, s(l.num_unit)])
            })
            .collect();
        attrs.sort_by_key(|a| a.to_string());
        let key = (
            Value::Array(stack).to_string(),
            Value::Array(attrs).to_string(),
        );
        *out.entry(key).or_insert(0) += v;
    }
    out
}

fn decoded(samples: &Value) -> BTreeMap<Key, i64> {
    let mut out = BTreeMap::new();
    for s in samples.as_array().expect("samples") {
        let key = (s[0].to_string(), s[1].to_string());
        *out.entry(key).or_insert(0) += s[2].as_i64().expect("value");
    }
    out
}

#[test]
fn opentelemetry_proto_decodes_our_export() {
    let Some(python) = decoder_python() else {
        return;
    };
    let names = [
        "goapp-heap-1.pb.gz",
        "goapp-mutex-2.pb.gz",
        "prometheus-allocs-1.pb.gz",
    ];
    let inputs: Vec<(Vec<(String, String)>, Profile)> = names
        .iter()
        .map(|name| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/pprof")
                .join(name);
            let bytes = std::fs::read(&path).expect("fixture");
            let p = scraper::pprof::decode(&bytes, &scraper::pprof::Limits::default())
                .expect("fixture decodes");
            let labels = vec![
                ("__name__".to_owned(), "memory".to_owned()),
                ("service_name".to_owned(), format!("otel/{name}")),
                ("namespace".to_owned(), "otel".to_owned()),
            ];
            (labels, p)
        })
        .collect();
    let mut builder = RequestBuilder::new();
    for (labels, p) in &inputs {
        builder.add(labels, p).expect("convert");
    }
    let request = builder.build().encode_to_vec();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("request.pb");
    std::fs::write(&file, &request).expect("write request");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/decode.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&file)
        .output()
        .expect("run decode.py");
    assert!(
        out.status.success(),
        "decode.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let profiles: Value = serde_json::from_slice(&out.stdout).expect("decoder JSON");
    let profiles = profiles.as_array().expect("profiles");
    let mut got = profiles.iter();
    let mut checked = 0;
    for (labels, p) in &inputs {
        let s = |i: i64| p.string_table[i as usize].clone();
        for (k, vt) in p.sample_type.iter().enumerate() {
            let prof = got.next().expect("one OTLP profile per pprof sample type");
            assert_eq!(prof["type"], serde_json::json!([s(vt.r#type), s(vt.unit)]));
            assert_eq!(prof["scope"], "scraper");
            assert_eq!(prof["period"], p.period);
            assert_eq!(prof["time_unix_nano"].as_i64(), Some(p.time_nanos));
            assert_eq!(prof["resource"]["service.name"], labels[1].1.as_str());
            assert_eq!(prof["resource"]["namespace"], "otel");
            assert!(prof["resource"].get("__name__").is_none());
            assert_eq!(prof["profile_id"].as_str().map(str::len), Some(32));
            let want = expected(p, k);
            assert_eq!(decoded(&prof["samples"]), want, "{} type {k}", labels[1].1);
            checked += want.len();
        }
    }
    assert!(got.next().is_none(), "more profiles than sample types");
    assert!(checked > 100, "only {checked} samples compared");
    eprintln!("opentelemetry-proto decoded {checked} (stack, labels) values, all equal");
}
