//! The Connect unary push on the wire: encoding `push.v1.PushRequest` by hand (one series, one
//! sample, labels encoded once per profile and shared by every endpoint), and turning responses
//! and transport failures into Connect codes the way connect-go's client does
//! (pyroscope-protocol.md §1.3, §1.6; alloy-components.md §3.2-§3.3).

use std::fmt;

use bytes::Bytes;

use crate::profiles::Label;

/// Path of the push RPC, appended to the endpoint URL.
pub const PUSH_PATH: &str = "/push.v1.PusherService/Push";
/// `Content-Type` of requests and successful responses.
pub const CONTENT_TYPE_PROTO: &str = "application/proto";
/// `Content-Type` of OTLP/HTTP protobuf requests.
pub const CONTENT_TYPE_OTLP: &str = "application/x-protobuf";

// Field keys: (field number << 3) | wire type 2 (length-delimited).
const KEY_1_LEN: u8 = (1 << 3) | 2;
const KEY_2_LEN: u8 = (2 << 3) | 2;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    // 1 byte per started 7 bits; 0 takes one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_len_field(out: &mut Vec<u8>, key: u8, payload: &[u8]) {
    out.push(key);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// The `labels` fields (1) of a `RawProfileSeries`: one `types.v1.LabelPair{name=1, value=2}`
/// per label, in the given order.
pub fn encode_labels(labels: &[Label]) -> Bytes {
    let mut out = Vec::with_capacity(labels.iter().map(|(n, v)| n.len() + v.len() + 8).sum());
    let mut pair = Vec::new();
    for (name, value) in labels {
        pair.clear();
        put_len_field(&mut pair, KEY_1_LEN, name.as_bytes());
        put_len_field(&mut pair, KEY_2_LEN, value.as_bytes());
        put_len_field(&mut out, KEY_1_LEN, &pair);
    }
    Bytes::from(out)
}

/// `PushRequest{ series: [RawProfileSeries{ labels, samples: [RawSample{ raw_profile }] }] }`
/// from labels encoded by [`encode_labels`]. No `ID`: Alloy's scrape sends none and the server
/// replaces it anyway.
pub fn encode_push_request(encoded_labels: &[u8], raw_profile: &[u8]) -> Bytes {
    let sample_len = 1 + varint_len(raw_profile.len() as u64) + raw_profile.len();
    let series_len = encoded_labels.len() + 1 + varint_len(sample_len as u64) + sample_len;
    let mut out = Vec::with_capacity(1 + varint_len(series_len as u64) + series_len);
    out.push(KEY_1_LEN);
    put_varint(&mut out, series_len as u64);
    out.extend_from_slice(encoded_labels);
    out.push(KEY_2_LEN);
    put_varint(&mut out, sample_len as u64);
    out.push(KEY_1_LEN);
    put_varint(&mut out, raw_profile.len() as u64);
    out.extend_from_slice(raw_profile);
    debug_assert_eq!(out.len(), out.capacity());
    Bytes::from(out)
}

/// Connect error codes (connect-go `code.go`), with their wire names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Canceled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Canceled => "canceled",
            Code::Unknown => "unknown",
            Code::InvalidArgument => "invalid_argument",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::PermissionDenied => "permission_denied",
            Code::ResourceExhausted => "resource_exhausted",
            Code::FailedPrecondition => "failed_precondition",
            Code::Aborted => "aborted",
            Code::OutOfRange => "out_of_range",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::DataLoss => "data_loss",
            Code::Unauthenticated => "unauthenticated",
        }
    }

    pub fn from_name(s: &str) -> Option<Code> {
        Some(match s {
            "canceled" => Code::Canceled,
            "unknown" => Code::Unknown,
            "invalid_argument" => Code::InvalidArgument,
            "deadline_exceeded" => Code::DeadlineExceeded,
            "not_found" => Code::NotFound,
            "already_exists" => Code::AlreadyExists,
            "permission_denied" => Code::PermissionDenied,
            "resource_exhausted" => Code::ResourceExhausted,
            "failed_precondition" => Code::FailedPrecondition,
            "aborted" => Code::Aborted,
            "out_of_range" => Code::OutOfRange,
            "unimplemented" => Code::Unimplemented,
            "internal" => Code::Internal,
            "unavailable" => Code::Unavailable,
            "data_loss" => Code::DataLoss,
            "unauthenticated" => Code::Unauthenticated,
            _ => return None,
        })
    }

    /// The HTTP status a Connect server answers an error of this code with (the Connect
    /// protocol's table).
    pub fn http_status(self) -> u16 {
        match self {
            Code::Canceled => 499,
            Code::Unknown | Code::Internal | Code::DataLoss => 500,
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
            Code::DeadlineExceeded => 504,
            Code::NotFound => 404,
            Code::AlreadyExists | Code::Aborted => 409,
            Code::PermissionDenied => 403,
            Code::ResourceExhausted => 429,
            Code::Unimplemented => 501,
            Code::Unavailable => 503,
            Code::Unauthenticated => 401,
        }
    }

    /// connect-go's `httpToCode`, for error responses that are not Connect errors (a proxy's
    /// 502, a plain 429...). Note 400 -> internal and 429 -> unavailable.
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed push attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushError {
    pub code: Code,
    pub message: String,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Whether the code came from a Connect error body (versus the HTTP status or transport).
    pub from_body: bool,
    /// How long the server asked us to wait before retrying (gRPC `RetryInfo`), if it did:
    /// the retry loop waits at least this long.
    pub retry_after: Option<std::time::Duration>,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(s) => write!(f, "{} (HTTP {s}): {}", self.code, self.message),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

impl std::error::Error for PushError {}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Retrying cannot succeed: drop the profile.
    Drop,
    /// Retry with backoff, counting the attempt against `max_backoff_retries`.
    Retry,
    /// The endpoint is unreachable or overloaded (`unavailable`: connection failures, 502/503/
    /// 504, a plain 429). Retry with backoff without using up the profile's retries: the
    /// profile is not at fault. Its age still bounds how long it is kept.
    RetryUnavailable,
}

impl PushError {
    /// Alloy's `shouldRetry` (retryable: deadline_exceeded, unknown, internal, unavailable,
    /// data_loss, aborted; resource_exhausted only with `retry_on_http_429`), with unavailable
    /// singled out.
    pub fn disposition(&self, retry_on_http_429: bool) -> Disposition {
        match self.code {
            Code::Unavailable => Disposition::RetryUnavailable,
            Code::DeadlineExceeded
            | Code::Unknown
            | Code::Internal
            | Code::DataLoss
            | Code::Aborted => Disposition::Retry,
            Code::ResourceExhausted if retry_on_http_429 => Disposition::Retry,
            _ => Disposition::Drop,
        }
    }
}

/// Interprets a response as connect-go's unary client does (`validateResponse`):
/// * 200 with an `application/proto` content type is success; another `application/*` codec
///   is `internal`; anything else `unknown`;
/// * another status with `application/json` (optionally `; charset=utf-8`) is parsed as a
///   Connect error `{"code": "...", "message": "..."}`; a body that does not parse, or names
///   no known code, falls back to the status mapping ([`Code::from_http_status`]);
/// * another status without a JSON content type uses the status mapping.
pub fn classify_response(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(), PushError> {
    let ct = content_type.unwrap_or("");
    if status == 200 {
        if ct == CONTENT_TYPE_PROTO {
            return Ok(());
        }
        let code = if ct.starts_with("application/") {
            Code::Internal
        } else {
            Code::Unknown
        };
        return Err(PushError {
            code,
            message: format!("invalid content-type: {ct:?}; expecting {CONTENT_TYPE_PROTO:?}"),
            status: Some(status),
            from_body: false,
            retry_after: None,
        });
    }
    let text = || String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned();
    let fallback = |message: String| PushError {
        code: Code::from_http_status(status),
        message,
        status: Some(status),
        from_body: false,
        retry_after: None,
    };
    if ct != "application/json" && ct != "application/json; charset=utf-8" {
        return Err(fallback(text()));
    }
    #[derive(serde::Deserialize)]
    struct WireError {
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: String,
    }
    let Ok(parsed) = serde_json::from_slice::<WireError>(body) else {
        return Err(fallback(text()));
    };
    match parsed.code.as_deref() {
        None | Some("") => Err(fallback(parsed.message)),
        Some(name) => match Code::from_name(name) {
            Some(code) => Err(PushError {
                code,
                message: parsed.message,
                status: Some(status),
                from_body: true,
                retry_after: None,
            }),
            // connect-go fails to unmarshal an unknown code name and falls back.
            None => Err(fallback(text())),
        },
    }
}

/// A request that got no (complete) response: timeouts are `deadline_exceeded`, everything
/// else (refused, reset, closed mid-body, TLS failure) `unavailable`.
pub fn transport_error(err: &reqwest::Error) -> PushError {
    let code = if err.is_timeout() {
        Code::DeadlineExceeded
    } else {
        Code::Unavailable
    };
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    PushError {
        code,
        message,
        status: None,
        from_body: false,
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::protocols::pyroscope::proto::push::v1::PushRequest;

    #[test]
    fn varint_lengths() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
    }

    #[test]
    fn encoding_matches_the_generated_types() {
        let labels: Vec<Label> = vec![
            ("__name__".into(), "process_cpu".into()),
            ("service_name".into(), "a/b".into()),
            ("é".into(), "".into()),
        ];
        for size in [0usize, 5, 200, 70_000] {
            let raw: Vec<u8> = (0..size).map(|i| i as u8).collect();
            let bytes = encode_push_request(&encode_labels(&labels), &raw);
            let req = PushRequest::decode(bytes).expect("decode");
            assert_eq!(req.series.len(), 1);
            let s = &req.series[0];
            let got: Vec<Label> = s
                .labels
                .iter()
                .map(|l| (l.name.clone(), l.value.clone()))
                .collect();
            assert_eq!(got, labels);
            assert_eq!(s.samples.len(), 1);
            assert_eq!(s.samples[0].raw_profile.as_ref(), raw.as_slice());
            assert_eq!(s.samples[0].id, "");
        }
    }

    #[test]
    fn responses_map_like_connect_go() {
        let json = Some("application/json");
        let err =
            |status, ct, body: &str| classify_response(status, ct, body.as_bytes()).unwrap_err();
        assert_eq!(
            classify_response(200, Some("application/proto"), b""),
            Ok(())
        );
        assert_eq!(err(200, Some("text/html"), "<html>").code, Code::Unknown);
        assert_eq!(
            err(200, Some("application/json"), "{}").code,
            Code::Internal
        );
        let e = err(
            429,
            json,
            r#"{"code":"resource_exhausted","message":"push rate limit"}"#,
        );
        assert_eq!((e.code, e.from_body), (Code::ResourceExhausted, true));
        assert_eq!(e.message, "push rate limit");
        // Plain 429 from a proxy: unavailable.
        assert_eq!(
            err(429, Some("text/plain"), "slow down").code,
            Code::Unavailable
        );
        assert_eq!(err(429, None, "").code, Code::Unavailable);
        // JSON without a code, or not JSON at all: status mapping.
        assert_eq!(err(400, json, r#"{"message":"x"}"#).code, Code::Internal);
        assert_eq!(err(503, json, "not json").code, Code::Unavailable);
        assert_eq!(err(400, json, r#"{"code":"bogus"}"#).code, Code::Internal);
        assert_eq!(
            err(
                400,
                Some("application/json; charset=utf-8"),
                r#"{"code":"invalid_argument"}"#
            )
            .code,
            Code::InvalidArgument
        );
        assert_eq!(err(404, Some("text/plain"), "").code, Code::Unimplemented);
        assert_eq!(err(413, None, "").code, Code::Unknown);
    }

    #[test]
    fn dispositions_follow_alloy() {
        let e = |code| PushError {
            code,
            message: String::new(),
            status: None,
            from_body: true,
            retry_after: None,
        };
        use Disposition::*;
        for (code, with, without) in [
            (Code::ResourceExhausted, Retry, Drop),
            (Code::Unavailable, RetryUnavailable, RetryUnavailable),
            (Code::Internal, Retry, Retry),
            (Code::Unknown, Retry, Retry),
            (Code::DeadlineExceeded, Retry, Retry),
            (Code::DataLoss, Retry, Retry),
            (Code::Aborted, Retry, Retry),
            (Code::InvalidArgument, Drop, Drop),
            (Code::Unauthenticated, Drop, Drop),
            (Code::PermissionDenied, Drop, Drop),
            (Code::Unimplemented, Drop, Drop),
            (Code::FailedPrecondition, Drop, Drop),
            (Code::Canceled, Drop, Drop),
        ] {
            assert_eq!(e(code).disposition(true), with, "{code}");
            assert_eq!(e(code).disposition(false), without, "{code}");
        }
    }
}
