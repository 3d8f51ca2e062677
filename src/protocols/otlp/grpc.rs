//! The gRPC wire pieces of OTLP/gRPC's one unary method,
//! `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`, over our own
//! HTTP/2 stack (hyper through axum on the server side, reqwest on the client side).
//!
//! Why by hand rather than tonic: the service has a single unary method whose messages prost
//! already generates (`super::proto`); what gRPC adds to HTTP/2 for it is a 5-byte
//! length-prefix per message, `grpc-encoding` (gzip), and the status carried in `grpc-status` /
//! `grpc-message` (trailers, or headers for a trailers-only answer). tonic would bring a
//! second HTTP server and client stack (its transport, tower layers, its own TLS features) beside
//! the hyper/h2/reqwest/rustls one every other endpoint uses, while here the receiver shares
//! axum's server (limits, memory budget, graceful stop) and the exporter shares `crate::push`
//! (queue, retries, TLS files, proxies, metrics). The framing is small and tested below against
//! the gRPC specification (PROTOCOL-HTTP2.md).

use bytes::{BufMut, Bytes, BytesMut};

/// The method's path.
pub const EXPORT_PATH: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
/// `Content-Type` of gRPC requests and answers (with protobuf messages).
pub const CONTENT_TYPE: &str = "application/grpc";

/// gRPC status codes (the ones we send or interpret by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Status {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The status for a numeric code (unknown numbers are `Unknown`, as gRPC says).
    pub fn from_code(code: u32) -> Status {
        match code {
            0 => Status::Ok,
            1 => Status::Cancelled,
            3 => Status::InvalidArgument,
            4 => Status::DeadlineExceeded,
            5 => Status::NotFound,
            7 => Status::PermissionDenied,
            8 => Status::ResourceExhausted,
            10 => Status::Aborted,
            11 => Status::OutOfRange,
            12 => Status::Unimplemented,
            13 => Status::Internal,
            14 => Status::Unavailable,
            15 => Status::DataLoss,
            16 => Status::Unauthenticated,
            _ => Status::Unknown,
        }
    }

    /// Whether an OTLP exporter retries a failure with this status whatever its details
    /// (OTLP specification, "Failures": the retryable codes). RESOURCE_EXHAUSTED is not among
    /// them: it is retried only when the status carries a `RetryInfo` ("OTLP/gRPC
    /// Throttling"; the Collector's `shouldRetry`), see [`retry_delay`].
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Status::Cancelled
                | Status::DeadlineExceeded
                | Status::Aborted
                | Status::OutOfRange
                | Status::Unavailable
                | Status::DataLoss
        )
    }
}

/// One length-prefixed message: the compressed flag, then the length (big endian u32).
pub fn frame(message: &[u8], compressed: bool) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(u8::from(compressed));
    out.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.freeze()
}

/// Why a request body is not one well-formed message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("gRPC message is truncated: {got} bytes where the frame needs {need}")]
    Truncated { got: usize, need: usize },
    #[error("gRPC body holds more than one message (unary method)")]
    Trailing,
    #[error("gRPC message of {size} bytes exceeds the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("gRPC compressed-flag {0} is invalid")]
    Flag(u8),
}

/// The one message of a unary request body: (compressed, message). Refuses a declared length
/// over `limit` before anything else is looked at.
pub fn unframe(body: &Bytes, limit: u64) -> Result<(bool, Bytes), FrameError> {
    if body.len() < 5 {
        return Err(FrameError::Truncated {
            got: body.len(),
            need: 5,
        });
    }
    let compressed = match body[0] {
        0 => false,
        1 => true,
        other => return Err(FrameError::Flag(other)),
    };
    let size = u32::from_be_bytes([body[1], body[2], body[3], body[4]]);
    if u64::from(size) > limit {
        return Err(FrameError::TooLarge {
            size: u64::from(size),
            limit,
        });
    }
    let end = 5 + size as usize;
    if body.len() < end {
        return Err(FrameError::Truncated {
            got: body.len(),
            need: end,
        });
    }
    if body.len() > end {
        return Err(FrameError::Trailing);
    }
    Ok((compressed, body.slice(5..end)))
}

/// `google.rpc.Status`: the body of an OTLP/HTTP error and, base64-encoded, gRPC's
/// `grpc-status-details-bin` trailer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<ProtoAny>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtoAny {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    pub retry_delay: Option<ProtoDuration>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct ProtoDuration {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// The `type_url` of a `RetryInfo` detail.
pub const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";
/// The trailer carrying a binary `google.rpc.Status`.
pub const STATUS_DETAILS_HEADER: &str = "grpc-status-details-bin";

/// `grpc-status-details-bin` for `status` with a `RetryInfo` asking the client to wait
/// `delay`: without it the Collector's (and Alloy's) OTLP exporter does not retry
/// RESOURCE_EXHAUSTED (`shouldRetry` in exporterhelper's gRPC error handling).
pub fn retry_details(status: Status, message: &str, delay: std::time::Duration) -> String {
    use base64::Engine as _;
    use prost::Message as _;
    let info = RetryInfo {
        retry_delay: Some(ProtoDuration {
            seconds: i64::try_from(delay.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(delay.subsec_nanos()).unwrap_or(0),
        }),
    };
    let status = RpcStatus {
        code: i32::from(status.code()),
        message: message.to_owned(),
        details: vec![ProtoAny {
            type_url: RETRY_INFO_TYPE.to_owned(),
            value: info.encode_to_vec(),
        }],
    };
    // Binary headers are base64; gRPC sends them unpadded and accepts either.
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(status.encode_to_vec())
}

/// The `RetryInfo` delay in a `grpc-status-details-bin` value, if it carries one (padded or
/// unpadded base64; anything malformed is `None`). A negative delay counts as zero.
pub fn retry_delay(details: &str) -> Option<std::time::Duration> {
    use base64::Engine as _;
    use prost::Message as _;
    let text = details.trim().trim_end_matches('=');
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(text)
        .ok()?;
    let status = RpcStatus::decode(bytes.as_slice()).ok()?;
    let detail = status
        .details
        .iter()
        .find(|d| d.type_url == RETRY_INFO_TYPE)?;
    let info = RetryInfo::decode(detail.value.as_slice()).ok()?;
    let d = info.retry_delay.unwrap_or_default();
    let secs = u64::try_from(d.seconds).unwrap_or(0);
    let nanos = u32::try_from(d.nanos).unwrap_or(0).min(999_999_999);
    Some(std::time::Duration::new(secs, nanos))
}

/// `grpc-message` encoding: percent-encoding of bytes outside printable ASCII and of `%`.
pub fn encode_message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The reverse of [`encode_message`] (malformed escapes are kept as they are).
pub fn decode_message(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|c| hex(*c)),
                bytes.get(i + 2).and_then(|c| hex(*c)),
            )
        {
            out.push(hi << 4 | lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_frames_are_refused() {
        let f = frame(b"hello", false);
        assert_eq!(f.as_ref(), b"\x00\x00\x00\x00\x05hello");
        assert_eq!(unframe(&f, 100), Ok((false, Bytes::from_static(b"hello"))));
        let g = frame(b"", true);
        assert_eq!(unframe(&g, 0), Ok((true, Bytes::new())));
        let cases: [(&[u8], FrameError); 5] = [
            (b"\x00\x00", FrameError::Truncated { got: 2, need: 5 }),
            (
                b"\x00\x00\x00\x00\x05hell",
                FrameError::Truncated { got: 9, need: 10 },
            ),
            (b"\x00\x00\x00\x00\x01ab", FrameError::Trailing),
            (
                b"\x00\x00\x00\x01\x00",
                FrameError::TooLarge {
                    size: 256,
                    limit: 100,
                },
            ),
            (b"\x02\x00\x00\x00\x00", FrameError::Flag(2)),
        ];
        for (body, want) in cases {
            assert_eq!(
                unframe(&Bytes::copy_from_slice(body), 100),
                Err(want.clone()),
                "{body:?}"
            );
        }
    }

    #[test]
    fn status_messages_are_percent_encoded() {
        for (text, wire) in [
            ("plain text", "plain text"),
            ("100% done", "100%25 done"),
            ("naïve\n", "na%C3%AFve%0A"),
        ] {
            assert_eq!(encode_message(text), wire);
            assert_eq!(decode_message(wire), text);
        }
        assert_eq!(decode_message("bad %zz %4"), "bad %zz %4");
    }

    #[test]
    fn retry_info_round_trips_and_bad_details_are_ignored() {
        use std::time::Duration;
        for delay in [
            Duration::ZERO,
            Duration::from_millis(1500),
            Duration::from_secs(30),
        ] {
            let v = retry_details(Status::ResourceExhausted, "full", delay);
            assert_eq!(retry_delay(&v), Some(delay));
            assert_eq!(retry_delay(&format!("{v}==")), Some(delay), "padded");
        }
        use base64::Engine as _;
        use prost::Message as _;
        let b64 =
            |s: RpcStatus| base64::engine::general_purpose::STANDARD.encode(s.encode_to_vec());
        let no_detail = RpcStatus {
            code: 8,
            message: "x".into(),
            details: vec![],
        };
        let other_detail = RpcStatus {
            details: vec![ProtoAny {
                type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                value: vec![],
            }],
            ..no_detail.clone()
        };
        let negative = RpcStatus {
            details: vec![ProtoAny {
                type_url: RETRY_INFO_TYPE.into(),
                value: RetryInfo {
                    retry_delay: Some(ProtoDuration {
                        seconds: -5,
                        nanos: -1,
                    }),
                }
                .encode_to_vec(),
            }],
            ..no_detail.clone()
        };
        for (details, want) in [
            (b64(no_detail), None),
            (b64(other_detail), None),
            (b64(negative), Some(Duration::ZERO)),
            ("!!not base64".to_owned(), None),
            ("AAAA".to_owned(), None),
        ] {
            assert_eq!(retry_delay(&details), want, "{details}");
        }
    }

    #[test]
    fn status_codes() {
        for code in 0..20u32 {
            let s = Status::from_code(code);
            if s != Status::Unknown {
                assert_eq!(u32::from(s.code()), code);
            }
        }
        assert!(Status::Unavailable.retryable());
        assert!(
            !Status::ResourceExhausted.retryable(),
            "only with RetryInfo"
        );
        assert!(!Status::InvalidArgument.retryable());
        assert!(!Status::Unauthenticated.retryable());
    }
}
