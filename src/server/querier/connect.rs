//! The Connect protocol's unary calls, server side, as much as the querier needs: binary
//! protobuf bodies (`application/proto`), gzip in both directions, and errors as Connect JSON
//! (`{"code":"invalid_argument","message":"..."}`) with the HTTP status the protocol assigns
//! each code. The JSON codec (`application/json`) is not served: such requests get 415 with a
//! message saying so, and an `Accept-Post` header naming what is.

use axum::http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::protocols::pyroscope::wire::Code;

/// Largest decompressed request: queries are a few hundred bytes.
const MAX_REQUEST: usize = 4 << 20;
/// Responses smaller than this are not worth compressing.
const MIN_GZIP: usize = 1024;

/// A failed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectError {
    pub code: Code,
    pub message: String,
    /// The HTTP status when it is not the code's own (unknown method, unsupported codec).
    pub status: Option<u16>,
}

impl ConnectError {
    pub fn new(code: Code, message: impl Into<String>) -> ConnectError {
        ConnectError {
            code,
            message: message.into(),
            status: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> ConnectError {
        ConnectError::new(Code::InvalidArgument, message)
    }

    pub fn unimplemented(message: impl Into<String>) -> ConnectError {
        ConnectError::new(Code::Unimplemented, message)
    }
}

impl IntoResponse for ConnectError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status.unwrap_or(self.code.http_status()))
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::json!({ "code": self.code.as_str(), "message": self.message });
        let mut response = (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            body.to_string(),
        )
            .into_response();
        if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            response.headers_mut().insert(
                axum::http::HeaderName::from_static("accept-post"),
                HeaderValue::from_static("application/proto"),
            );
        }
        response
    }
}

/// The request message's bytes, after checking the codec and undoing `Content-Encoding`.
pub fn request_body(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, ConnectError> {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/proto" | "application/protobuf" | "application/x-protobuf" => {}
        "application/json" => {
            return Err(ConnectError {
                status: Some(415),
                ..ConnectError::unimplemented(
                    "this querier speaks Connect with binary protobuf only: send Content-Type application/proto (the JSON codec is not served)",
                )
            });
        }
        other => {
            return Err(ConnectError {
                status: Some(415),
                ..ConnectError::unimplemented(format!(
                    "unsupported Content-Type {other:?}: send application/proto"
                ))
            });
        }
    }
    let encoding = headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    match encoding.as_str() {
        "" | "identity" => Ok(body.to_vec()),
        "gzip" if !crate::pprof::codec::is_gzip(body) => Err(ConnectError::invalid(
            "Content-Encoding is gzip but the body is not gzip data",
        )),
        "gzip" => {
            let limits = crate::pprof::Limits {
                max_decompressed_bytes: MAX_REQUEST,
            };
            crate::pprof::gunzip(body, &limits)
                .map_err(|e| ConnectError::invalid(format!("decompressing the gzip request: {e}")))
        }
        other => Err(ConnectError::unimplemented(format!(
            "unsupported Content-Encoding {other:?}: gzip and identity are supported"
        ))),
    }
}

/// A successful answer: `message` encoded, gzipped when the client accepts it and it is big
/// enough to gain.
pub fn response(headers: &HeaderMap, message: Vec<u8>) -> Response {
    let gzip = message.len() >= MIN_GZIP
        && headers
            .get_all(ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|e| {
                e.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("gzip")
            });
    if gzip {
        let body = crate::pprof::gzip(&message, 1);
        return (
            StatusCode::OK,
            [
                (CONTENT_TYPE, HeaderValue::from_static("application/proto")),
                (CONTENT_ENCODING, HeaderValue::from_static("gzip")),
            ],
            body,
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [(CONTENT_TYPE, HeaderValue::from_static("application/proto"))],
        message,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn requests_by_codec_and_encoding() {
        let plain = b"\x0a\x01x".to_vec();
        let zipped = crate::pprof::gzip(&plain, 1);
        type Case = (
            &'static str,
            Vec<(&'static str, &'static str)>,
            Vec<u8>,
            Result<(), u16>,
        );
        let cases: Vec<Case> = vec![
            (
                "proto",
                vec![("content-type", "application/proto")],
                plain.clone(),
                Ok(()),
            ),
            (
                "proto with gzip",
                vec![
                    ("content-type", "application/proto"),
                    ("content-encoding", "gzip"),
                ],
                zipped,
                Ok(()),
            ),
            (
                "json",
                vec![("content-type", "application/json")],
                plain.clone(),
                Err(415),
            ),
            ("none", vec![], plain.clone(), Err(415)),
            (
                "brotli",
                vec![
                    ("content-type", "application/proto"),
                    ("content-encoding", "br"),
                ],
                plain.clone(),
                Err(501),
            ),
            (
                "bad gzip",
                vec![
                    ("content-type", "application/proto"),
                    ("content-encoding", "gzip"),
                ],
                b"not gzip".to_vec(),
                Err(400),
            ),
        ];
        for (name, h, body, want) in cases {
            let got = request_body(&headers(&h), &body);
            match want {
                Ok(()) => assert_eq!(got.expect(name), plain, "{name}"),
                Err(status) => {
                    let e = got.expect_err(name);
                    assert_eq!(e.status.unwrap_or(e.code.http_status()), status, "{name}");
                }
            }
        }
    }

    #[test]
    fn responses_are_gzipped_only_when_accepted_and_worth_it() {
        let big = vec![7u8; 4096];
        let r = response(
            &headers(&[("accept-encoding", "deflate, gzip")]),
            big.clone(),
        );
        assert_eq!(
            r.headers().get(CONTENT_ENCODING).map(|v| v.as_bytes()),
            Some(&b"gzip"[..])
        );
        let r = response(&headers(&[]), big);
        assert!(r.headers().get(CONTENT_ENCODING).is_none());
        let r = response(&headers(&[("accept-encoding", "gzip")]), vec![1, 2, 3]);
        assert!(r.headers().get(CONTENT_ENCODING).is_none());
    }
}
