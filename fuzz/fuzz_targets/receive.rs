//! `pyroscope.receive_http` fuzz target: every parser an SDK or agent's request reaches
//! (src/components/pyroscope/receive_http).
//!
//! Input layout: the first byte picks the parser (`(byte - b'0') % 5`, so seeds start with a
//! readable digit), the rest is split at the first two newlines where a parser takes several
//! fields:
//!
//! | digit | rest | parser |
//! | --- | --- | --- |
//! | 0 | `NAME` | `labelset::parse` (the `?name=` label set) and `labelset::parse_time` |
//! | 1 | `BOUNDARY\nBODY` (or `CONTENT-TYPE\nBODY` when it has a `;`) | `multipart::boundary`, `multipart::parse` |
//! | 2 | `APP-NAME\nBODY` | `folded::parse_groups`, `parse_lines`, `convert_metadata`, `to_pprof` |
//! | 3 | `QUERY\nCONTENT-TYPE\nBODY` | `ingest::ingest`, the whole `/ingest` handler below HTTP |
//! | 4 | `QUERY\nBODY` | `ingest::ingest` with `format=pprof`-style bodies and the multipart type set |
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

fuzz_target!(|data: &[u8]| {
    let Some((&op, rest)) = data.split_first() else {
        return;
    };
    match op.wrapping_sub(b'0') % 5 {
        0 => {
            let name = text(rest);
            if let Ok(set) = labelset::parse(&name) {
                let _ = set.app();
                let _ = set.ingestible().count();
            }
            for now in [NOW, 0, i64::MAX, i64::MIN] {
                let _ = labelset::parse_time(&name, now);
            }
        }
        1 => {
            let (head, body) = split2(rest);
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
        2 => {
            let (app, body) = split2(rest);
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
        3 => {
            let (query, rest) = split2(rest);
            let (content_type, body) = split2(rest);
            let (query, content_type) = (text(query), text(content_type));
            let req = ingest::IngestRequest {
                query: &query,
                content_type: &content_type,
                body: Bytes::copy_from_slice(body),
                now_nanos: NOW,
            };
            if let Ok(out) = ingest::ingest(&req, &limits()) {
                check_forwarded(&out);
            }
        }
        _ => {
            let (query, body) = split2(rest);
            let query = text(query);
            for content_type in [
                "application/octet-stream",
                "multipart/form-data; boundary=b",
            ] {
                let req = ingest::IngestRequest {
                    query: &query,
                    content_type,
                    body: Bytes::copy_from_slice(body),
                    now_nanos: NOW,
                };
                if let Ok(out) = ingest::ingest(&req, &limits()) {
                    check_forwarded(&out);
                }
            }
        }
    }
});
