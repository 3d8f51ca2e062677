//! What a scrape response must look like before it is treated as a profile (spec §2.5): Alloy's
//! checks and words (status, content type, HTML/JSON bodies, the gzip/protobuf sniff), plus the
//! recognition of Go's "cpu profiling already in use" answer.
//!
//! The sniff only rejects what is obviously not pprof; every body is then fully decoded (by the
//! delta engine, or by `pprof::validate_raw` for profiles forwarded as received), so truncated
//! gzip or garbage that passes the sniff is still caught before anything is forwarded.

use super::error::{Reason, ScrapeError};

/// How much of an error body is quoted in the error message.
pub const ERROR_BODY_PREVIEW: usize = 512;

/// Go's runtime error when a second CPU profile is requested from a process (another profiler,
/// e.g. a second scraper, is collecting one).
const CPU_PROFILING_IN_USE: &str = "cpu profiling already in use";

/// A non-2xx answer, with the start of its body.
pub fn status_error(status: u16, reason_phrase: &str, body: &[u8]) -> ScrapeError {
    let text = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_PREVIEW)]);
    let text = text.trim();
    if text.contains(CPU_PROFILING_IN_USE) {
        return ScrapeError::new(
            Reason::ProfilingInUse,
            format!(
                "the target's CPU profiler is already in use by another profiler (a second scraper or an in-process agent): server returned HTTP status ({status}) {text}"
            ),
        );
    }
    let shown = if text.is_empty() { reason_phrase } else { text };
    ScrapeError::new(
        Reason::HttpStatus,
        format!("server returned HTTP status ({status}) {shown}"),
    )
}

/// Alloy's `validateProfileData`: a non-empty body, an `application/octet-stream` content type,
/// not an HTML or JSON page, and gzip or plausible protobuf.
pub fn validate_body(data: &[u8], content_type: Option<&str>) -> Result<(), ScrapeError> {
    if data.is_empty() {
        return Err(ScrapeError::new(
            Reason::EmptyBody,
            "empty response from profiling endpoint",
        ));
    }
    match content_type {
        None | Some("") => {
            return Err(ScrapeError::new(
                Reason::ContentType,
                "missing Content-Type header",
            ));
        }
        Some(ct) if !ct.starts_with("application/octet-stream") => {
            return Err(ScrapeError::new(
                Reason::ContentType,
                format!(
                    "unexpected Content-Type {ct}, expected application/octet-stream for pprof data"
                ),
            ));
        }
        Some(_) => {}
    }
    if is_text_content(data) {
        let preview = String::from_utf8_lossy(&data[..data.len().min(50)]);
        return Err(ScrapeError::new(
            Reason::NotPprof,
            format!(
                "text response instead of pprof: {preview:?} (server should return HTTP error, not 200)"
            ),
        ));
    }
    if data.len() <= 2 {
        return Err(ScrapeError::new(
            Reason::InvalidProfile,
            "data too short for pprof format",
        ));
    }
    if data.starts_with(&[0x1f, 0x8b]) {
        return Ok(());
    }
    let wire_type = data[0] & 0x07;
    if wire_type >= 6 {
        let hex: String = data.iter().take(16).map(|b| format!("{b:02x}")).collect();
        return Err(ScrapeError::new(
            Reason::InvalidProfile,
            format!(
                "invalid protobuf data: illegal wireType {wire_type} (expected 0-5), first bytes: {hex}"
            ),
        ));
    }
    Ok(())
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Alloy's `isTextContent`: an HTML page, or JSON (`{`/`[` first among the first 64 bytes,
/// body over 20 bytes). Bodies under 10 bytes are never text.
fn is_text_content(data: &[u8]) -> bool {
    if data.len() < 10 {
        return false;
    }
    if has_html_prefix(data) {
        return true;
    }
    let first = data
        .iter()
        .take(64)
        .copied()
        .find(|b| !is_whitespace(*b))
        .unwrap_or(0);
    (first == b'{' || first == b'[') && data.len() > 20
}

fn has_html_prefix(data: &[u8]) -> bool {
    let start = data
        .iter()
        .position(|b| !is_whitespace(*b))
        .unwrap_or(data.len());
    let data = &data[start..];
    if data.len() < 2 || data[0] != b'<' {
        return false;
    }
    if data.len() >= 9 && data[1] == b'!' && (data[2] == b'D' || data[2] == b'd') {
        return true;
    }
    data.len() >= 5 && matches!(data[1].to_ascii_lowercase(), b'h' | b'b' | b't')
}

#[cfg(test)]
mod tests {
    use super::*;

    const OCTET: Option<&str> = Some("application/octet-stream");

    #[test]
    fn bodies() {
        // (body, content type, expected failure)
        type Case = (
            &'static [u8],
            Option<&'static str>,
            Option<(Reason, &'static str)>,
        );
        let cases: &[Case] = &[
            (b"\x1f\x8b\x08\x00rest", OCTET, None),
            // Field 1 (sample_type), wire type 2.
            (b"\x0a\x04abcd", OCTET, None),
            (b"", OCTET, Some((Reason::EmptyBody, "empty response"))),
            (
                b"\x1f\x8b\x08",
                None,
                Some((Reason::ContentType, "missing Content-Type header")),
            ),
            (
                b"\x1f\x8b\x08",
                Some("text/html; charset=utf-8"),
                Some((
                    Reason::ContentType,
                    "unexpected Content-Type text/html; charset=utf-8",
                )),
            ),
            (b"\x1f\x8b\x08", Some("application/octet-stream; x=y"), None),
            (
                b"\n  <!DOCTYPE html><html>",
                OCTET,
                Some((
                    Reason::NotPprof,
                    "text response instead of pprof: \"\\n  <!DOCTYPE html>",
                )),
            ),
            (
                b"<html><body>oops</body></html>",
                OCTET,
                Some((Reason::NotPprof, "text response")),
            ),
            (
                b"<TITLE>x</TITLE>",
                OCTET,
                Some((Reason::NotPprof, "text response")),
            ),
            (
                b"  {\"error\": \"not found\", \"code\": 404}",
                OCTET,
                Some((Reason::NotPprof, "text response")),
            ),
            (
                b"[1, 2, 3, 4, 5, 6, 7, 8, 9]",
                OCTET,
                Some((Reason::NotPprof, "text response")),
            ),
            // Short JSON is left to the decoder, as in Alloy.
            (b"{\"a\":1, \"b\":2}", OCTET, None),
            (
                b"\x0a",
                OCTET,
                Some((Reason::InvalidProfile, "data too short")),
            ),
            (
                b"\xff\xfe\xfd\xfc garbage",
                OCTET,
                Some((
                    Reason::InvalidProfile,
                    "illegal wireType 7 (expected 0-5), first bytes: fffefdfc",
                )),
            ),
        ];
        for (body, ct, want) in cases {
            let got = validate_body(body, *ct);
            match (got, want) {
                (Ok(()), None) => {}
                (Err(e), Some((reason, text))) => {
                    assert_eq!(e.reason, *reason, "{body:?}: {e}");
                    assert!(
                        e.message.contains(text),
                        "{body:?}: {e} should contain {text:?}"
                    );
                }
                (got, want) => panic!("{body:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn status_errors() {
        let e = status_error(500, "Internal Server Error", b"  boom\n");
        assert_eq!(e.reason, Reason::HttpStatus);
        assert_eq!(e.message, "server returned HTTP status (500) boom");
        let e = status_error(404, "Not Found", b"");
        assert_eq!(e.message, "server returned HTTP status (404) Not Found");
        let e = status_error(
            500,
            "Internal Server Error",
            b"Could not enable CPU profiling: cpu profiling already in use\n",
        );
        assert_eq!(e.reason, Reason::ProfilingInUse);
        assert!(
            e.message.contains("already in use by another profiler"),
            "{e}"
        );
        let long = vec![b'x'; 10_000];
        assert!(status_error(502, "", &long).message.len() < ERROR_BODY_PREVIEW + 64);
    }
}
