//! `POST /ingest`, Pyroscope's legacy ingestion API (pyroscope-protocol.md §2), turned into
//! [`Converted`] profiles the way Pyroscope's ingest handler and adapter do
//! (`pkg/ingester/pyroscope/ingest_handler.go`, `ingest_adapter.go`).
//!
//! Query parameters: `name` (required, `app{k=v,...}`), `from` and `until` (default now),
//! `format`, `sampleRate` (default 100; invalid values fall back to it), `spyName` (default
//! `unknown`); `units` and `aggregationType` are accepted and unused, as in Pyroscope's pprof
//! path.
//!
//! Which format the body is, in Pyroscope's order: `format=trie` or `Content-Type:
//! binary/octet-stream+trie`, then `tree` (likewise), `lines`, `jfr`, `pprof`, `speedscope`;
//! otherwise a `multipart/form-data` body is a pprof form (pyroscope-go); anything else is
//! `groups` (folded stacks). Supported: `pprof` (raw, gzipped or not), the multipart form
//! (`profile`, `sample_type_config`; a non-empty `prev_profile` is refused as in Pyroscope),
//! `groups` and `lines`. `jfr`, `speedscope`, `trie` and `tree` are answered 415.
//!
//! Status codes, as Pyroscope's: 400 for a bad `name` or an unknown profile type in the app
//! name of a text format, 413 for a body over the limit, 422 when the body cannot be
//! converted (bad pprof, bad form, bad folded line), 200 otherwise, including for an empty
//! profile (nothing is forwarded). Error bodies are JSON `{"code","message"}`.
//!
//! Unlike Pyroscope, a `Content-Encoding: gzip` body is decompressed first (Pyroscope ignores
//! the header, which only works for pprof, itself gzip), and a `profile` part is accepted
//! whether or not it is sent as a file.

use std::collections::HashMap;

use bytes::Bytes;
use serde::Deserialize;

use super::convert::{self, ConvertError, Converted, DisplayNames, PprofMeta};
use super::folded::{self, FoldedError};
use super::labelset::{self, LabelSet, LabelSetError};
use super::multipart::{self, MultipartError};
use crate::gocompat::url;
use crate::pprof::Limits;

/// Pyroscope's default `sampleRate`.
pub const DEFAULT_SAMPLE_RATE: u32 = 100;

/// The request, as the HTTP layer hands it over.
#[derive(Debug, Clone)]
pub struct IngestRequest<'a> {
    /// The raw query string (without `?`).
    pub query: &'a str,
    /// The first `Content-Type` header.
    pub content_type: &'a str,
    /// The body, already decompressed if it had `Content-Encoding: gzip`.
    pub body: Bytes,
    /// Now, in nanoseconds since the epoch (the default `from`/`until`).
    pub now_nanos: i64,
}

/// The body formats `/ingest` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Groups,
    Lines,
    Pprof,
    Multipart,
    Trie,
    Tree,
    Jfr,
    Speedscope,
}

impl Format {
    fn as_str(self) -> &'static str {
        match self {
            Format::Groups => "groups",
            Format::Lines => "lines",
            Format::Pprof => "pprof",
            Format::Multipart => "multipart pprof",
            Format::Trie => "trie",
            Format::Tree => "tree",
            Format::Jfr => "jfr",
            Format::Speedscope => "speedscope",
        }
    }
}

/// Pyroscope's format switch (`readInputRawDataFromRequest`).
pub fn detect_format(format: &str, content_type: &str) -> Format {
    if format == "trie" || content_type == "binary/octet-stream+trie" {
        Format::Trie
    } else if format == "tree" || content_type == "binary/octet-stream+tree" {
        Format::Tree
    } else if format == "lines" {
        Format::Lines
    } else if format == "jfr" {
        Format::Jfr
    } else if format == "pprof" {
        Format::Pprof
    } else if format == "speedscope" {
        Format::Speedscope
    } else if content_type.contains("multipart/form-data") {
        Format::Multipart
    } else {
        Format::Groups
    }
}

/// Why a request was refused; [`IngestError::status`] is the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    #[error("name: {0}")]
    Name(#[from] LabelSetError),
    #[error(
        "format {0:?} is not supported by this receiver (supported: pprof, multipart pprof, groups/folded, lines)"
    )]
    UnsupportedFormat(&'static str),
    #[error("{0}")]
    Convert(#[from] ConvertError),
    #[error("failed to parse pprof /ingest multipart form: {0}")]
    Multipart(#[from] MultipartError),
    #[error("failed to parse pprof /ingest multipart form: sample_type_config: {0}")]
    SampleTypeConfig(String),
    #[error(
        "unsupported client version. Please update github.com/grafana/pyroscope-go to the latest version"
    )]
    PrevProfile,
    #[error("{0}")]
    Folded(FoldedError),
}

impl IngestError {
    pub fn status(&self) -> u16 {
        match self {
            IngestError::Name(_) => 400,
            IngestError::Folded(FoldedError::UnknownProfileType(_)) => 400,
            IngestError::UnsupportedFormat(_) => 415,
            _ => 422,
        }
    }
}

/// A `sample_type_config` entry; only the display name matters for pprof.
#[derive(Deserialize)]
struct SampleTypeConfig {
    #[serde(rename = "display-name", default)]
    display_name: Option<String>,
}

/// Everything from the query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub labelset: LabelSet,
    pub from_nanos: i64,
    pub until_nanos: i64,
    pub format: String,
    pub sample_rate: u32,
    pub spy: String,
}

/// Parses the query string (`parseInputMetadataFromRequest`).
pub fn parse_params(query: &str, now_nanos: i64) -> Result<Params, IngestError> {
    let get = |k: &str| url::query_get(query, k).unwrap_or_default();
    let labelset = labelset::parse(&get("name"))?;
    let time = |k: &str| match get(k) {
        s if s.is_empty() => now_nanos,
        s => labelset::parse_time(&s, now_nanos),
    };
    let sample_rate = match get("sampleRate") {
        s if s.is_empty() => DEFAULT_SAMPLE_RATE,
        s => match s.parse::<i64>().ok().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => {
                tracing::debug!(sample_rate = %s, "invalid sampleRate, using the default");
                DEFAULT_SAMPLE_RATE
            }
        },
    };
    let spy = match get("spyName") {
        s if s.is_empty() => "unknown".to_string(),
        s => s,
    };
    Ok(Params {
        labelset,
        from_nanos: time("from"),
        until_nanos: time("until"),
        format: get("format"),
        sample_rate,
        spy,
    })
}

/// Converts one `/ingest` request into the profiles to forward.
pub fn ingest(req: &IngestRequest<'_>, limits: &Limits) -> Result<Vec<Converted>, IngestError> {
    let params = parse_params(req.query, req.now_nanos)?;
    match detect_format(&params.format, req.content_type) {
        Format::Pprof => pprof(&req.body, &params, None, false, limits),
        Format::Multipart => multipart_pprof(req, &params, limits),
        Format::Groups => text(&params, folded::parse_groups(&req.body)),
        Format::Lines => text(&params, folded::parse_lines(&req.body)),
        f @ (Format::Trie | Format::Tree | Format::Jfr | Format::Speedscope) => {
            Err(IngestError::UnsupportedFormat(f.as_str()))
        }
    }
}

fn pprof(
    raw: &Bytes,
    params: &Params,
    display_names: Option<&DisplayNames>,
    config_has_inuse_dash_space: bool,
    limits: &Limits,
) -> Result<Vec<Converted>, IngestError> {
    let meta = PprofMeta {
        labelset: &params.labelset,
        spy: &params.spy,
        start_nanos: params.from_nanos,
        display_names,
        config_has_inuse_dash_space,
    };
    Ok(convert::convert(raw, &meta, limits)?)
}

fn multipart_pprof(
    req: &IngestRequest<'_>,
    params: &Params,
    limits: &Limits,
) -> Result<Vec<Converted>, IngestError> {
    let boundary = multipart::boundary(req.content_type)?;
    let parts = multipart::parse(&req.body, &boundary)?;
    let field = |name: &str| {
        parts
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
            .map(|p| p.body)
            .filter(|b| !b.is_empty())
    };
    if field("prev_profile").is_some() {
        return Err(IngestError::PrevProfile);
    }
    let mut display_names = None;
    let mut inuse_dash_space = false;
    if let Some(json) = field("sample_type_config") {
        let config: HashMap<String, Option<SampleTypeConfig>> = serde_json::from_slice(json)
            .map_err(|e| IngestError::SampleTypeConfig(e.to_string()))?;
        inuse_dash_space = matches!(config.get("inuse-space"), Some(Some(_)));
        let names: DisplayNames = config
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?.display_name?)))
            .collect();
        display_names = Some(names);
    }
    let profile = match field("profile") {
        Some(b) => req.body.slice_ref(b),
        None => return Ok(Vec::new()),
    };
    pprof(
        &profile,
        params,
        display_names.as_ref(),
        inuse_dash_space,
        limits,
    )
}

/// `groups` and `lines`: the adapter's `Put`.
fn text(
    params: &Params,
    stacks: Result<folded::Stacks, FoldedError>,
) -> Result<Vec<Converted>, IngestError> {
    let stacks = stacks.map_err(IngestError::Folded)?;
    let set = &params.labelset;
    // The profile_id exemplar labels of the old server: accepted and dropped.
    if set.get("profile_id").is_some_and(|v| !v.is_empty()) {
        return Ok(Vec::new());
    }
    let meta = folded::convert_metadata(set.app()).map_err(IngestError::Folded)?;
    let profile = folded::to_pprof(&stacks, &meta, params.from_nanos, params.sample_rate);
    if profile.sample.is_empty() {
        return Ok(Vec::new());
    }
    let mut labels: std::collections::BTreeMap<String, String> = Default::default();
    labels.insert("__name__".into(), meta.metric.into());
    labels.insert("__delta__".into(), "false".into());
    labels.insert("pyroscope_spy".into(), params.spy.clone());
    for (k, v) in set.ingestible() {
        labels.insert(k.to_string(), v.to_string());
    }
    if set.get("service_name").is_none() {
        labels.insert("service_name".into(), meta.app.clone());
    } else {
        labels.entry("app_name".into()).or_insert(meta.app.clone());
    }
    labels.retain(|_, v| !v.is_empty());
    Ok(vec![Converted {
        labels: labels.into_iter().collect(),
        raw: Bytes::from(crate::pprof::encode(&profile, crate::pprof::DELTA_LEVEL)),
    }])
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::pprof::proto::Profile as Pprof;

    const NOW: i64 = 1_700_000_000_000_000_000;

    fn req<'a>(query: &'a str, content_type: &'a str, body: &[u8]) -> IngestRequest<'a> {
        IngestRequest {
            query,
            content_type,
            body: Bytes::copy_from_slice(body),
            now_nanos: NOW,
        }
    }

    fn labels(c: &Converted) -> Vec<(&str, &str)> {
        c.labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    fn sorted(mut v: Vec<(&'static str, &'static str)>) -> Vec<(&'static str, &'static str)> {
        v.sort();
        v
    }

    #[test]
    fn params() {
        let p = parse_params(
            "name=app.cpu%7Benv%3Dprod%2Cregion%3Deu%7D&from=1700000000&until=1700000010&format=pprof&sampleRate=97&spyName=gospy&units=samples&aggregationType=sum",
            NOW,
        )
        .expect("parses");
        assert_eq!(p.labelset.app(), "app.cpu");
        assert_eq!(p.labelset.get("env"), Some("prod"));
        assert_eq!(p.labelset.get("region"), Some("eu"));
        assert_eq!(p.from_nanos, 1_700_000_000_000_000_000);
        assert_eq!(p.until_nanos, 1_700_000_010_000_000_000);
        assert_eq!(
            (p.format.as_str(), p.sample_rate, p.spy.as_str()),
            ("pprof", 97, "gospy")
        );

        let p = parse_params("name=app", NOW).expect("defaults");
        assert_eq!((p.from_nanos, p.until_nanos), (NOW, NOW));
        assert_eq!(
            (p.format.as_str(), p.sample_rate, p.spy.as_str()),
            ("", 100, "unknown")
        );
        for bad in ["-1", "x", "99999999999"] {
            let p = parse_params(&format!("name=app&sampleRate={bad}"), NOW).expect("ok");
            assert_eq!(p.sample_rate, 100, "{bad}");
        }
        assert_eq!(
            parse_params("name=app&sampleRate=0", NOW)
                .expect("ok")
                .sample_rate,
            0
        );

        let errs = [
            ("", "name: service name is required"),
            ("from=1", "name: service name is required"),
            (
                "name=a%20b",
                "name: invalid service name: a b: character is not allowed: ' '",
            ),
            (
                "name=app{a-b=1}",
                "name: invalid label name: a-b: character is not allowed: '-'",
            ),
        ];
        for (q, want) in errs {
            let e = parse_params(q, NOW).unwrap_err();
            assert_eq!(e.to_string(), want, "{q}");
            assert_eq!(e.status(), 400);
        }
    }

    #[test]
    fn formats_are_detected_in_pyroscope_order() {
        let mp = "multipart/form-data; boundary=x";
        let cases = [
            ("", "", Format::Groups),
            ("folded", "", Format::Groups),
            ("", "binary/octet-stream", Format::Groups),
            ("pprof", "", Format::Pprof),
            ("pprof", mp, Format::Pprof),
            ("", mp, Format::Multipart),
            ("folded", mp, Format::Multipart),
            ("lines", "", Format::Lines),
            ("lines", "binary/octet-stream+trie", Format::Trie),
            ("", "binary/octet-stream+tree", Format::Tree),
            ("trie", "", Format::Trie),
            ("jfr", mp, Format::Jfr),
            ("speedscope", "", Format::Speedscope),
        ];
        for (format, ct, want) in cases {
            assert_eq!(detect_format(format, ct), want, "{format:?} {ct:?}");
        }
    }

    #[test]
    fn unsupported_formats_are_415() {
        for q in [
            "name=app&format=jfr",
            "name=app&format=speedscope",
            "name=app&format=trie",
            "name=app&format=tree",
        ] {
            let e = ingest(&req(q, "", b"x"), &Limits::default()).unwrap_err();
            assert_eq!(e.status(), 415, "{q}");
            assert!(e.to_string().contains("is not supported"), "{e}");
        }
    }

    fn cpu_pprof(labels: &[(&str, &str)]) -> Vec<u8> {
        let p = crate::components::pyroscope::receive_http::convert::tests::profile(
            &[("cpu", "nanoseconds")],
            &[(0, 10, labels)],
            NOW,
        );
        crate::pprof::encode(&p, 1)
    }

    #[test]
    fn raw_pprof() {
        let body = cpu_pprof(&[("env", "test")]);
        let out = ingest(
            &req(
                "name=sdk.app{region=eu}&format=pprof&spyName=pyspy",
                "binary/octet-stream",
                &body,
            ),
            &Limits::default(),
        )
        .expect("ok");
        assert_eq!(out.len(), 1);
        assert_eq!(
            labels(&out[0]),
            sorted(vec![
                ("__name__", "process_cpu"),
                ("__delta__", "false"),
                ("pyroscope_spy", "pyspy"),
                ("service_name", "sdk.app"),
                ("region", "eu"),
                ("env", "test"),
            ])
        );
        // Empty body: accepted, nothing forwarded.
        assert_eq!(
            ingest(&req("name=a&format=pprof", "", b""), &Limits::default()),
            Ok(vec![])
        );
        let e = ingest(&req("name=a&format=pprof", "", b"junk"), &Limits::default()).unwrap_err();
        assert_eq!(e.status(), 422);
        assert!(e.to_string().starts_with("invalid pprof"), "{e}");
    }

    fn form(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (name, file, body) in parts {
            b.extend_from_slice(b"--BOUNDARY\r\n");
            let file = file
                .map(|f| format!("; filename=\"{f}\""))
                .unwrap_or_default();
            b.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"{file}\r\nContent-Type: application/octet-stream\r\n\r\n")
                    .as_bytes(),
            );
            b.extend_from_slice(body);
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(b"--BOUNDARY--\r\n");
        b
    }

    #[test]
    fn multipart_forms() {
        let mp = "multipart/form-data; boundary=BOUNDARY";
        let lim = Limits::default();
        let block = crate::pprof::encode(
            &crate::components::pyroscope::receive_http::convert::tests::profile(
                &[("contentions", "count"), ("delay", "nanoseconds")],
                &[(0, 10, &[])],
                NOW,
            ),
            1,
        );
        let q = "name=app{env=prod}&spyName=gospy&sampleRate=100";
        // Default display names: Go's block profile lands under "mutex", as on the server.
        let out = ingest(
            &req(q, mp, &form(&[("profile", Some("profile.pprof"), &block)])),
            &lim,
        )
        .expect("ok");
        assert!(labels(&out[0]).contains(&("__name__", "mutex")));
        assert!(labels(&out[0]).contains(&("env", "prod")));
        assert!(labels(&out[0]).contains(&("service_name", "app")));
        // sample_type_config replaces the mapping.
        let config = br#"{"contentions":{"display-name":"block_count","units":"lock_samples","cumulative":true},"delay":{"display-name":"block_duration"},"x":null}"#;
        let body = form(&[
            ("profile", Some("profile.pprof"), &block),
            ("sample_type_config", Some("config.json"), config),
        ]);
        let out = ingest(&req(q, mp, &body), &lim).expect("ok");
        assert!(labels(&out[0]).contains(&("__name__", "block")));
        // Not sent as a file: accepted too (Pyroscope would ignore it).
        let out = ingest(&req(q, mp, &form(&[("profile", None, &block)])), &lim).expect("ok");
        assert_eq!(out.len(), 1);
        // Forwarded bytes are the part's bytes, untouched.
        assert_eq!(out[0].raw.as_ref(), block.as_slice());

        // prev_profile: refused, as Pyroscope does.
        let body = form(&[
            ("profile", Some("p"), &block),
            ("prev_profile", Some("p"), &block),
        ]);
        let e = ingest(&req(q, mp, &body), &lim).unwrap_err();
        assert_eq!((e.status(), e), (422, IngestError::PrevProfile));
        // An empty prev_profile is fine.
        let body = form(&[
            ("profile", Some("p"), &block),
            ("prev_profile", Some("p"), b""),
        ]);
        assert!(ingest(&req(q, mp, &body), &lim).is_ok());
        // No profile part: nothing to store.
        assert_eq!(
            ingest(&req(q, mp, &form(&[("other", None, b"x")])), &lim),
            Ok(vec![])
        );

        let bad: &[(&str, Vec<u8>)] = &[
            ("multipart/form-data", form(&[("profile", None, &block)])),
            (mp, b"no boundary at all".to_vec()),
            (
                mp,
                form(&[
                    ("profile", None, &block),
                    ("sample_type_config", None, b"{not json"),
                ]),
            ),
            (mp, form(&[("profile", None, b"garbage")])),
        ];
        for (ct, body) in bad {
            let e = ingest(&req(q, ct, body), &lim).unwrap_err();
            assert_eq!(e.status(), 422, "{e}");
        }
    }

    fn decode(c: &Converted) -> Pprof {
        let raw = crate::pprof::gunzip(&c.raw, &Limits::default()).expect("gunzip");
        Pprof::decode(raw.as_slice()).expect("decode")
    }

    #[test]
    fn folded_and_lines() {
        let lim = Limits::default();
        let out = ingest(
            &req(
                "name=app.cpu{env=prod,region=eu}&from=1700000000&sampleRate=100&spyName=rbspy",
                "binary/octet-stream",
                b"main;work 3\nmain;idle 1\n",
            ),
            &lim,
        )
        .expect("ok");
        assert_eq!(
            labels(&out[0]),
            sorted(vec![
                ("__name__", "process_cpu"),
                ("__delta__", "false"),
                ("pyroscope_spy", "rbspy"),
                ("service_name", "app"),
                ("env", "prod"),
                ("region", "eu"),
            ])
        );
        let p = decode(&out[0]);
        assert_eq!(p.time_nanos, 1_700_000_000_000_000_000);
        assert_eq!(p.sample.iter().map(|s| s.value[0]).sum::<i64>(), 40_000_000);

        // format=folded is the default groups format; an explicit service_name keeps the app
        // in app_name.
        let out = ingest(
            &req(
                "name=app.alloc_space{service_name=svc}&format=folded",
                "",
                b"a;b 5",
            ),
            &lim,
        )
        .expect("ok");
        assert_eq!(
            labels(&out[0]),
            sorted(vec![
                ("__name__", "memory"),
                ("__delta__", "false"),
                ("pyroscope_spy", "unknown"),
                ("service_name", "svc"),
                ("app_name", "app"),
            ])
        );
        let out = ingest(
            &req(
                "name=app.cpu&format=lines&sampleRate=0",
                "",
                b"a;b\na;b\nc\n",
            ),
            &lim,
        )
        .expect("ok");
        assert_eq!(
            decode(&out[0])
                .sample
                .iter()
                .map(|s| s.value[0])
                .sum::<i64>(),
            3
        );

        // Nothing sampled, or a profile_id: accepted, nothing forwarded.
        assert_eq!(ingest(&req("name=app.cpu", "", b""), &lim), Ok(vec![]));
        assert_eq!(
            ingest(&req("name=app.cpu{profile_id=x}", "", b"a 1"), &lim),
            Ok(vec![])
        );

        let e = ingest(&req("name=my.app", "", b"a 1"), &lim).unwrap_err();
        assert_eq!(
            (e.status(), e.to_string().as_str()),
            (400, "unknown profile type: app")
        );
        let e = ingest(&req("name=app.cpu", "", b"a;b x"), &lim).unwrap_err();
        assert_eq!(
            (e.status(), e.to_string().as_str()),
            (422, "line 1: invalid sample count \"x\"")
        );
        let e = ingest(&req("name=app.cpu", "", b"a;b -1"), &lim).unwrap_err();
        assert_eq!(e.status(), 422);
    }
}
