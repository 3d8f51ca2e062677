//! `pyroscope.receive_http` fuzz target: every parser an SDK or agent's request reaches
//! (src/components/pyroscope/receive_http).
//!
//! Every input goes through every parser, each reading it in its own layout (split at the
//! first one or two newlines), so each parser's execution count is the target's:
//!
//! | parser | reads the input as |
//! | --- | --- |
//! | `labelset::parse` (the `?name=` label set), `labelset::parse_time` | `NAME` (the whole input) |
//! | `multipart::boundary`, `multipart::parse` | `BOUNDARY\nBODY`, or `CONTENT-TYPE\nBODY` when the first line has a `;` |
//! | `folded::parse_groups`, `parse_lines`, `convert_metadata`, `to_pprof` | `APP-NAME\nBODY` |
//! | `ingest::ingest`, the whole `/ingest` handler below HTTP | `QUERY\nCONTENT-TYPE\nBODY` |
//! | `ingest::ingest` with a pprof and a multipart content type | `QUERY\nBODY` |
//!
//! Checks: nothing panics (overflow included, with `-a`); multipart parts are slices of the
//! body; every profile the receiver would forward decodes and validates as pprof, and its
//! labels are sorted, unique and non-empty-valued, as the write path expects.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use scraper::components::pyroscope::receive_http::{folded, ingest, labelset, multipart};
use scraper::pprof::Limits;

/// `now` for default times: fixed, so a crash reproduces.
const NOW: i64 = 1_800_000_000_000_000_000;

fn split2(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn limits() -> Limits {
    // Small, so that huge declared sizes are refused rather than allocated.
    Limits {
        max_decompressed_bytes: 1 << 20,
    }
}

/// What the receiver forwards must be a valid profile with well-formed labels.
fn check_forwarded(out: &[scraper::components::pyroscope::receive_http::convert::Converted]) {
    for c in out {
        let names: Vec<&str> = c.labels.iter().map(|l| l.0.as_str()).collect();
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "labels not sorted and unique: {names:?}"
        );
        assert!(c.labels.iter().all(|l| !l.1.is_empty()), "{:?}", c.labels);
        if !c.raw.is_empty() {
            scraper::pprof::decode(&c.raw, &Limits::default())
                .unwrap_or_else(|e| panic!("forwarded an invalid profile: {e}"));
        }
    }
}

fn labelset_parser(input: &[u8]) {
    let name = text(input);
    if let Ok(set) = labelset::parse(&name) {
        let _ = set.app();
        let _ = set.ingestible().count();
    }
    for now in [NOW, 0, i64::MAX, i64::MIN] {
        let _ = labelset::parse_time(&name, now);
    }
}

fn multipart_parser(input: &[u8]) {
    let (head, body) = split2(input);
    let head = text(head);
    let boundary = if head.contains(';') {
        match multipart::boundary(&head) {
            Ok(b) => b,
            Err(_) => return,
        }
    } else {
        head
    };
    if let Ok(parts) = multipart::parse(body, &boundary) {
        let range = body.as_ptr_range();
        for p in parts {
            let r = p.body.as_ptr_range();
            assert!(
                p.body.is_empty() || (range.start <= r.start && r.end <= range.end),
                "a part's body is not a slice of the request body"
            );
        }
    }
}

fn folded_parser(input: &[u8]) {
    let (app, body) = split2(input);
    let app = text(app);
    for stacks in [folded::parse_groups(body), folded::parse_lines(body)] {
        let Ok(stacks) = stacks else { continue };
        let Ok(meta) = folded::convert_metadata(&app) else {
            continue;
        };
        for rate in [0, 1, 100, u32::MAX] {
            let p = folded::to_pprof(&stacks, &meta, NOW, rate);
            scraper::pprof::validate(&p)
                .unwrap_or_else(|e| panic!("to_pprof made an invalid profile: {e}"));
        }
    }
}

fn ingest_parser(query: &str, content_type: &str, body: &[u8]) {
    let req = ingest::IngestRequest {
        query,
        content_type,
        body: Bytes::copy_from_slice(body),
        now_nanos: NOW,
    };
    if let Ok(out) = ingest::ingest(&req, &limits()) {
        check_forwarded(&out);
    }
}

fuzz_target!(|data: &[u8]| {
    labelset_parser(data);
    multipart_parser(data);
    folded_parser(data);
    let (query, rest) = split2(data);
    let query = text(query);
    let (content_type, body) = split2(rest);
    ingest_parser(&query, &text(content_type), body);
    for content_type in [
        "application/octet-stream",
        "multipart/form-data; boundary=b",
    ] {
        ingest_parser(&query, content_type, rest);
    }
});
