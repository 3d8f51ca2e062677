//! `POST /push.v1.PusherService/Push`: Pyroscope's push API as a Connect unary endpoint
//! (pyroscope-protocol.md §1.3), decoded with the writer's generated `push.v1` types.
//!
//! * `Content-Type: application/proto` (binary protobuf) or `application/json` (protojson:
//!   `rawProfile` or `raw_profile` in base64, standard or URL-safe, padded or not; unknown
//!   fields ignored, as connect-go does); parameters such as `; charset=utf-8` are ignored.
//!   Anything else is 415. gRPC and gRPC-Web are not served (HTTP/1.1 only).
//! * `Content-Encoding: gzip` (or `identity`) on the request; other encodings are Connect
//!   `unimplemented`. The size limit applies to the decompressed message too.
//! * Every sample of every series becomes one profile with the series' labels, its
//!   `raw_profile` forwarded untouched (as in Alloy: not validated here; the sample `ID` is
//!   not kept). Labels are applied in order through Prometheus' label-builder semantics, as
//!   Alloy does: a later duplicate wins, an empty value removes the label.
//! * Success is an empty `PushResponse`: no body for proto, `{}` for JSON. Errors are Connect
//!   JSON errors `{"code","message"}`.
//!
//! Alloy differs in one way we do not copy: its `ensureServiceName` copies `__name__` (the
//! profile type on this path, e.g. `process_cpu`) into `service_name` when that is missing and
//! into `app_name` when it is present. Here labels arrive as sent; the backend names a series
//! without `service_name` `unknown_service`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use bytes::Bytes;
use prost::Message as _;
use serde::Deserialize;

use super::convert::Converted;
use crate::protocols::pyroscope::proto::push::v1::PushRequest;

/// The wire format of a Connect request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Proto,
    Json,
}

impl Codec {
    /// The codec a `Content-Type` names, if we speak it.
    pub fn from_content_type(content_type: &str) -> Option<Codec> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/proto" => Some(Codec::Proto),
            "application/json" => Some(Codec::Json),
            _ => None,
        }
    }

    /// `Content-Type` of a successful response.
    pub fn content_type(self) -> &'static str {
        match self {
            Codec::Proto => "application/proto",
            Codec::Json => "application/json",
        }
    }

    /// Body of a successful response (an empty `PushResponse`).
    pub fn empty_response(self) -> &'static [u8] {
        match self {
            Codec::Proto => b"",
            Codec::Json => b"{}",
        }
    }
}

/// A request body that is not a `PushRequest`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    #[error("unmarshal into push.v1.PushRequest: {0}")]
    Proto(String),
    #[error("unmarshal into push.v1.PushRequest: {0}")]
    Json(String),
}

#[derive(Deserialize)]
struct JsonRequest {
    #[serde(default)]
    series: Option<Vec<JsonSeries>>,
}

#[derive(Deserialize)]
struct JsonSeries {
    #[serde(default)]
    labels: Option<Vec<JsonLabel>>,
    #[serde(default)]
    samples: Option<Vec<JsonSample>>,
}

#[derive(Deserialize)]
struct JsonLabel {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct JsonSample {
    #[serde(default, rename = "rawProfile", alias = "raw_profile")]
    raw_profile: Option<String>,
}

/// protojson's `bytes`: standard or URL-safe base64, with or without padding.
fn base64_bytes(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let alphabet = if s.contains(['-', '_']) {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    GeneralPurpose::new(alphabet, config).decode(s)
}

/// Prometheus' label builder over `pairs` in order, sorted by name.
fn build_labels(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut m = BTreeMap::new();
    for (k, v) in pairs {
        if v.is_empty() {
            m.remove(&k);
        } else {
            m.insert(k, v);
        }
    }
    m.into_iter().collect()
}

/// Decodes a push request into one [`Converted`] per sample.
pub fn decode(body: Bytes, codec: Codec) -> Result<Vec<Converted>, PushError> {
    let mut out = Vec::new();
    match codec {
        Codec::Proto => {
            let req = PushRequest::decode(body).map_err(|e| PushError::Proto(e.to_string()))?;
            for series in req.series {
                let labels = build_labels(series.labels.into_iter().map(|l| (l.name, l.value)));
                for s in series.samples {
                    out.push(Converted {
                        labels: labels.clone(),
                        raw: s.raw_profile,
                    });
                }
            }
        }
        Codec::Json => {
            let req: JsonRequest =
                serde_json::from_slice(&body).map_err(|e| PushError::Json(e.to_string()))?;
            for series in req.series.unwrap_or_default() {
                let labels = build_labels(
                    series
                        .labels
                        .unwrap_or_default()
                        .into_iter()
                        .map(|l| (l.name.unwrap_or_default(), l.value.unwrap_or_default())),
                );
                for s in series.samples.unwrap_or_default() {
                    let raw = base64_bytes(s.raw_profile.as_deref().unwrap_or(""))
                        .map_err(|e| PushError::Json(format!("rawProfile: {e}")))?;
                    out.push(Converted {
                        labels: labels.clone(),
                        raw: Bytes::from(raw),
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::pyroscope::proto::push::v1::{RawProfileSeries, RawSample};
    use crate::protocols::pyroscope::proto::types::v1::LabelPair;

    fn pair(n: &str, v: &str) -> LabelPair {
        LabelPair {
            name: n.into(),
            value: v.into(),
        }
    }

    fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn content_types() {
        let cases = [
            ("application/proto", Some(Codec::Proto)),
            ("Application/Proto", Some(Codec::Proto)),
            ("application/json", Some(Codec::Json)),
            ("application/json; charset=utf-8", Some(Codec::Json)),
            ("application/grpc", None),
            ("application/grpc-web+proto", None),
            ("application/x-protobuf", None),
            ("text/plain", None),
            ("", None),
        ];
        for (ct, want) in cases {
            assert_eq!(Codec::from_content_type(ct), want, "{ct}");
        }
    }

    #[test]
    fn proto_requests() {
        let req = PushRequest {
            series: vec![
                RawProfileSeries {
                    labels: vec![
                        pair("service_name", "a"),
                        pair("__name__", "process_cpu"),
                        pair("x", "1"),
                        pair("x", "2"),
                        pair("gone", "v"),
                        pair("gone", ""),
                    ],
                    samples: vec![
                        RawSample {
                            raw_profile: Bytes::from_static(b"one"),
                            id: "id-1".into(),
                        },
                        RawSample {
                            raw_profile: Bytes::from_static(b"two"),
                            id: String::new(),
                        },
                    ],
                    annotations: vec![],
                },
                RawProfileSeries {
                    labels: vec![pair("app", "b")],
                    samples: vec![],
                    annotations: vec![],
                },
            ],
        };
        let body = Bytes::from(req.encode_to_vec());
        let out = decode(body.clone(), Codec::Proto).expect("decodes");
        assert_eq!(out.len(), 2);
        let want = l(&[
            ("__name__", "process_cpu"),
            ("service_name", "a"),
            ("x", "2"),
        ]);
        assert_eq!(out[0].labels, want);
        assert_eq!(out[0].raw.as_ref(), b"one");
        assert_eq!(out[1].raw.as_ref(), b"two");
        // Zero-copy: the profile bytes point into the request body.
        let range = body.as_ptr() as usize..body.as_ptr() as usize + body.len();
        assert!(range.contains(&(out[0].raw.as_ptr() as usize)));

        assert_eq!(decode(Bytes::new(), Codec::Proto), Ok(vec![]));
        let err = decode(Bytes::from_static(b"\x0a\xff\xff"), Codec::Proto).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unmarshal into push.v1.PushRequest"),
            "{err}"
        );
    }

    #[test]
    fn json_requests() {
        let body = br#"{"series":[{"labels":[{"name":"service_name","value":"a"},{"name":"env","value":"prod"}],
            "samples":[{"rawProfile":"AQID","ID":"x"},{"raw_profile":"AQI"},{"rawProfile":"-_8"},{}],
            "annotations":[{"key":"k","value":"v"}],"unknownField":1},
            {"labels":null,"samples":null}], "extra": true}"#;
        let out = decode(Bytes::from_static(body), Codec::Json).expect("decodes");
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].labels, l(&[("env", "prod"), ("service_name", "a")]));
        assert_eq!(out[0].raw.as_ref(), [1, 2, 3]);
        assert_eq!(out[1].raw.as_ref(), [1, 2]);
        assert_eq!(out[2].raw.as_ref(), [0xfb, 0xff]);
        assert_eq!(out[3].raw.as_ref(), b"");
        assert_eq!(decode(Bytes::from_static(b"{}"), Codec::Json), Ok(vec![]));

        for bad in [
            &b"not json"[..],
            br#"{"series":[{"samples":[{"rawProfile":"***"}]}]}"#,
            br#"{"series":"x"}"#,
            b"",
        ] {
            let err = decode(Bytes::copy_from_slice(bad), Codec::Json).unwrap_err();
            assert!(matches!(err, PushError::Json(_)), "{err}");
        }
    }
}
