//! Backend-response fuzz target: what a Pyroscope backend (or a proxy in front of it) answers.
//!
//! Input layout, text-friendly so that seeds read like HTTP responses:
//!
//! ```text
//! STATUS[ CONTENT-TYPE]\n
//! BODY
//! ```
//!
//! STATUS is decimal (anything else: 0); without a space there is no Content-Type header; a
//! Content-Type that is not UTF-8 counts as absent, as `HeaderValue::to_str` failing does.
//!
//! * `pyroscope.write` (src/protocols/pyroscope/wire.rs): `classify_response` must never panic and must map
//!   like connect-go's unary client: success exactly for 200 with `application/proto`; a code
//!   from the body only for a JSON content type, else the HTTP status mapping; every error
//!   carries the status; `disposition` and `Display` are total.
//! * The querier client (src/query/remote.rs): BODY decoded as each response the remote
//!   source reads, merged and reduced to a sample type as `select_merge` does; whatever it
//!   returns must be a valid profile.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scraper::protocols::pyroscope::wire::{CONTENT_TYPE_PROTO, Code, classify_response};

/// Sample types `select_merge` reduces to (the first two are in the Go mutex seed).
const SAMPLE_TYPES: [(&str, &str); 5] = [
    ("contentions", "count"),
    ("delay", "nanoseconds"),
    ("cpu", "nanoseconds"),
    ("alloc_space", "bytes"),
    ("samples", "count"),
];

fn is_json(ct: Option<&str>) -> bool {
    matches!(
        ct,
        Some("application/json" | "application/json; charset=utf-8")
    )
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let (status, content_type) = match head.iter().position(|&b| b == b' ') {
        Some(i) => (&head[..i], std::str::from_utf8(&head[i + 1..]).ok()),
        None => (head, None),
    };
    let status: u16 = std::str::from_utf8(status)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);

    match classify_response(status, content_type, body) {
        Ok(()) => assert!(
            status == 200 && content_type == Some(CONTENT_TYPE_PROTO),
            "success for {status} {content_type:?}"
        ),
        Err(e) => {
            assert!(
                !(status == 200 && content_type == Some(CONTENT_TYPE_PROTO)),
                "200 with {CONTENT_TYPE_PROTO} is not an error: {e}"
            );
            assert_eq!(e.status, Some(status));
            assert_eq!(Code::from_name(e.code.as_str()), Some(e.code));
            if status == 200 {
                assert!(!e.from_body);
                assert!(matches!(e.code, Code::Internal | Code::Unknown), "{e}");
            } else if e.from_body {
                assert!(is_json(content_type), "code from a non-JSON body: {e}");
            } else {
                assert_eq!(e.code, Code::from_http_status(status), "{e}");
            }
            let _ = e.to_string();
            let _ = (e.disposition(true), e.disposition(false));
        }
    }

    let sample_type = SAMPLE_TYPES[usize::from(status) % SAMPLE_TYPES.len()];
    if let Ok(Some(p)) = scraper::query::remote::fuzz_decode_responses(body, sample_type) {
        scraper::pprof::validate(&p).expect("a decoded, merged and reduced profile is valid");
    }
});
