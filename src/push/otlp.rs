//! OTLP/HTTP's and OTLP/gRPC's response rules, in the terms the senders use for Connect
//! (`wire::PushError` and its codes), so one retry loop serves every protocol.

use crate::protocols::otlp::proto::collector::profiles::v1development::{
    ExportProfilesPartialSuccess, ExportProfilesServiceResponse,
};
use std::time::Duration;

use http_body_util::BodyExt as _;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::protocols::otlp::grpc::{self, Status};
use crate::protocols::pyroscope::wire::{Code, PushError};

/// Interprets an OTLP/HTTP export response (OTLP specification, "OTLP/HTTP Response"): a 2xx
/// is success, possibly partial (the body's `partial_success`, returned; a body that does not
/// decode is read as full success); 429, 502, 503 and 504 are retryable, as `unavailable`;
/// every other status is permanent, with a code that is never retried.
pub fn classify_otlp_response(
    status: u16,
    body: &[u8],
) -> Result<ExportProfilesPartialSuccess, PushError> {
    if (200..300).contains(&status) {
        let response =
            <ExportProfilesServiceResponse as prost::Message>::decode(body).unwrap_or_default();
        return Ok(response.partial_success.unwrap_or_default());
    }
    let code = match status {
        429 | 502 | 503 | 504 => Code::Unavailable,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        413 => Code::ResourceExhausted,
        _ => Code::InvalidArgument,
    };
    // Errors carry a google.rpc.Status; its message (field 2) is text in the protobuf, so a
    // lossy view of the first bytes is a readable summary without decoding it.
    let text = String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned();
    Err(PushError {
        code,
        message: text,
        status: Some(status),
        from_body: false,
        retry_after: None,
    })
}

/// The request headers of a gRPC call: content type, `te: trailers` (required by gRPC over
/// HTTP/2), the message encoding and the deadline.
pub fn grpc_headers(headers: &mut HeaderMap, gzip: bool, timeout: Duration) {
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(grpc::CONTENT_TYPE));
    headers.insert(
        HeaderName::from_static("te"),
        HeaderValue::from_static("trailers"),
    );
    if gzip {
        headers.insert(
            HeaderName::from_static("grpc-encoding"),
            HeaderValue::from_static("gzip"),
        );
    }
    // At most 8 digits (gRPC's limit): milliseconds up to ~27 hours.
    let ms = timeout.as_millis().clamp(1, 99_999_999);
    if let Ok(v) = HeaderValue::from_str(&format!("{ms}m")) {
        headers.insert(HeaderName::from_static("grpc-timeout"), v);
    }
}

/// A gRPC status as a push error, as the Collector's OTLP exporter decides (`shouldRetry`):
/// OTLP's retryable statuses, and RESOURCE_EXHAUSTED when the server sent a `RetryInfo`
/// (`retry_delay`, the floor of the wait), as `unavailable` (retried, the profile kept until
/// it is too old); every other one, RESOURCE_EXHAUSTED without `RetryInfo` included, as a
/// code the senders never retry.
pub fn grpc_error(status: Status, message: &str, retry_delay: Option<Duration>) -> PushError {
    let retry =
        status.retryable() || (status == Status::ResourceExhausted && retry_delay.is_some());
    let code = if retry {
        Code::Unavailable
    } else {
        match status {
            Status::InvalidArgument => Code::InvalidArgument,
            Status::NotFound => Code::NotFound,
            Status::PermissionDenied => Code::PermissionDenied,
            Status::Unauthenticated => Code::Unauthenticated,
            Status::Unimplemented => Code::Unimplemented,
            _ => Code::FailedPrecondition,
        }
    };
    PushError {
        code,
        message: format!("gRPC status {status:?}: {message}"),
        status: Some(200),
        from_body: true,
        retry_after: if retry { retry_delay } else { None },
    }
}

/// Interprets a gRPC answer: the HTTP status first (gRPC's mapping of HTTP errors), then
/// `grpc-status` from the trailers or, for a trailers-only answer, the headers. On success the
/// response message's `partial_success` is returned (a message that does not decode is read as
/// full success). At most `limit` body bytes are kept.
pub async fn classify_grpc_response(
    resp: reqwest::Response,
    limit: usize,
) -> Result<ExportProfilesPartialSuccess, PushError> {
    let http_status = resp.status().as_u16();
    if http_status != 200 {
        let code = match http_status {
            429 | 502 | 503 | 504 => Code::Unavailable,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            _ => Code::FailedPrecondition,
        };
        return Err(PushError {
            code,
            message: format!("HTTP {http_status} instead of a gRPC answer"),
            status: Some(http_status),
            from_body: false,
            retry_after: None,
        });
    }
    // gRPC over HTTP/2: an answer of another content type is not a gRPC server's (a proxy's
    // page, say): UNKNOWN in gRPC's terms, and not retried.
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !content_type.starts_with(grpc::CONTENT_TYPE) {
        return Err(PushError {
            code: Code::FailedPrecondition,
            message: format!("answer of content-type {content_type:?} is not gRPC"),
            status: Some(http_status),
            from_body: false,
            retry_after: None,
        });
    }
    let resp: http::Response<reqwest::Body> = resp.into();
    let (parts, mut body) = resp.into_parts();
    let mut data = Vec::new();
    let mut trailers = HeaderMap::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| crate::protocols::pyroscope::wire::transport_error(&e))?;
        match frame.into_data() {
            Ok(chunk) => {
                let room = limit.saturating_sub(data.len());
                data.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers.extend(t);
                }
            }
        }
    }
    let field = |name: &str| {
        trailers
            .get(name)
            .or(parts.headers.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    // A stream cut short fails above as a transport error; one that ends cleanly without a
    // status breaks the protocol (INTERNAL in gRPC's terms), which a retry would not mend.
    let Some(code) = field("grpc-status") else {
        return Err(PushError {
            code: Code::FailedPrecondition,
            message: "the gRPC answer ended without a grpc-status".into(),
            status: Some(200),
            from_body: false,
            retry_after: None,
        });
    };
    let status = Status::from_code(code.trim().parse().unwrap_or(2));
    if status != Status::Ok {
        let message = grpc::decode_message(&field("grpc-message").unwrap_or_default());
        let delay = field(grpc::STATUS_DETAILS_HEADER).and_then(|d| grpc::retry_delay(&d));
        return Err(grpc_error(status, &message, delay));
    }
    let message = grpc::unframe(&bytes::Bytes::from(data), limit as u64)
        .ok()
        .filter(|(compressed, _)| !compressed)
        .map(|(_, m)| m)
        .unwrap_or_default();
    let response =
        <ExportProfilesServiceResponse as prost::Message>::decode(message).unwrap_or_default();
    Ok(response.partial_success.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::protocols::pyroscope::wire::Disposition;

    #[test]
    fn otlp_responses_follow_the_otlp_http_rules() {
        let partial = ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: 2,
                error_message: "too old".into(),
            }),
        }
        .encode_to_vec();
        let ok = classify_otlp_response(200, &partial).expect("2xx is success");
        assert_eq!(
            (ok.rejected_profiles, ok.error_message.as_str()),
            (2, "too old")
        );
        assert_eq!(
            classify_otlp_response(202, b"not protobuf \xff").map(|p| p.rejected_profiles),
            Ok(0)
        );
        for (status, disposition) in [
            (429, Disposition::RetryUnavailable),
            (502, Disposition::RetryUnavailable),
            (503, Disposition::RetryUnavailable),
            (504, Disposition::RetryUnavailable),
            (400, Disposition::Drop),
            (401, Disposition::Drop),
            (403, Disposition::Drop),
            (404, Disposition::Drop),
            (413, Disposition::Drop),
            (500, Disposition::Drop),
            (501, Disposition::Drop),
        ] {
            let err = classify_otlp_response(status, b"injected").expect_err("an error status");
            assert_eq!(err.status, Some(status));
            assert_eq!(err.disposition(false), disposition, "HTTP {status}");
        }
    }

    #[test]
    fn grpc_statuses_follow_the_otlp_grpc_rules() {
        for code in 0..=16u32 {
            let status = Status::from_code(code);
            if status == Status::Ok {
                continue;
            }
            let want = if status.retryable() {
                Disposition::RetryUnavailable
            } else {
                Disposition::Drop
            };
            assert_eq!(
                grpc_error(status, "x", None).disposition(false),
                want,
                "{status:?}"
            );
        }
        // RESOURCE_EXHAUSTED is retried only with a RetryInfo, and waits at least its delay.
        let delay = Some(Duration::from_secs(7));
        for (status, retry_delay, want, after) in [
            (Status::ResourceExhausted, None, Disposition::Drop, None),
            (
                Status::ResourceExhausted,
                delay,
                Disposition::RetryUnavailable,
                delay,
            ),
            (
                Status::Unavailable,
                delay,
                Disposition::RetryUnavailable,
                delay,
            ),
            (Status::InvalidArgument, delay, Disposition::Drop, None),
        ] {
            let e = grpc_error(status, "x", retry_delay);
            assert_eq!(
                (e.disposition(false), e.retry_after),
                (want, after),
                "{status:?}"
            );
        }
        let mut h = HeaderMap::new();
        grpc_headers(&mut h, true, Duration::from_secs(30));
        assert_eq!(h["content-type"], "application/grpc");
        assert_eq!(h["te"], "trailers");
        assert_eq!(h["grpc-encoding"], "gzip");
        assert_eq!(h["grpc-timeout"], "30000m");
    }
}
