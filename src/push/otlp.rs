//! OTLP/HTTP's response rules, in the terms the senders use for Connect (`wire::PushError`
//! and its codes), so one retry loop serves both protocols.

use crate::protocols::otlp::proto::collector::profiles::v1development::{
    ExportProfilesPartialSuccess, ExportProfilesServiceResponse,
};
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
    })
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
}
