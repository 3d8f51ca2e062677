//! One HTTP GET of a profile: auth headers from the shared client config, a hard deadline over
//! the whole exchange (headers and body), a streaming body read that stops at
//! `body_size_limit`, and Alloy's response checks (`validate`).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::{CONNECTION, CONTENT_TYPE, HeaderMap, HeaderValue};

use self::plain_http::{Head, Outcome};
use super::error::{Reason, ScrapeError};
use super::validate::{ERROR_BODY_PREVIEW, status_error, validate_body};
use crate::budget::{Priority, Reservation};
use crate::gocompat::time::format_go_duration;
use crate::httpclient::HttpClient;

mod plain_http;
#[cfg(test)]
mod tests;

/// What one fetch needs.
pub struct FetchRequest<'a> {
    /// Memory for the body: grown with the buffer, at `priority`, or the read stops with
    /// [`Reason::MemoryBudget`].
    pub memory: &'a mut Reservation,
    pub priority: Priority,
    pub client: &'a HttpClient,
    pub url: &'a reqwest::Url,
    pub timeout: Duration,
    /// 0 = no limit.
    pub body_size_limit: u64,
    /// Expected body size (the previous scrape's), to size the buffer once.
    pub size_hint: usize,
}

/// Whether a scrape keeps its connection open for the next one.
///
/// A target's loops run on their own phases, so with every connection pooled a target held
/// two: the CPU request (`seconds=14`) keeps one busy 14 s of every 15, and the short types,
/// which almost never find it idle, kept a second one idle for the rest of the interval (2.0
/// descriptors per target at steady state). Plain HTTP/1.1 cannot multiplex, so the CPU request
/// needs a connection of its own while it waits. Measured at 1,000 targets (docs/PERFORMANCE.md,
/// "Load: the single-instance ceiling"): closing only the short types' connections gave 1.00
/// descriptor and 114 KiB per target; closing every one gave 0.94 and 101 KiB (a kept
/// connection holds hyper's buffers between scrapes, its read buffer grown to the largest body
/// read), and the CPU per profile did not rise measurably either way (0.41-0.44 ms, within
/// run-to-run noise): a loopback connect every 15 s is cheap next to a scrape. So over plain
/// HTTP every scrape opens its connection and closes it (`Connection: close`, so that the
/// target, not us, holds the TIME_WAIT), and a target holds a descriptor only while a request is
/// in flight. Over TLS a handshake per scrape costs more than the descriptor saves, so requests
/// there keep their connections.
fn keeps_connection(url: &reqwest::Url) -> bool {
    url.scheme() != "http"
}

/// Fetches and checks one profile; the body is returned as received (gzip or plain protobuf).
pub async fn fetch(req: &mut FetchRequest<'_>) -> Result<Bytes, ScrapeError> {
    match tokio::time::timeout(req.timeout, fetch_inner(req)).await {
        Ok(result) => result,
        Err(_) => Err(ScrapeError::new(
            Reason::Timeout,
            format!(
                "scrape timed out after {} without a complete answer",
                format_go_duration(req.timeout)
            ),
        )),
    }
}

async fn fetch_inner(req: &mut FetchRequest<'_>) -> Result<Bytes, ScrapeError> {
    let mut headers = HeaderMap::new();
    req.client
        .apply(&mut headers)
        .await
        .map_err(|e| ScrapeError::new(Reason::Auth, e.to_string()))?;
    let keep_connection = keeps_connection(req.url);
    if !keep_connection {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
        if let Some(user_agent) = req.client.direct_user_agent()
            && let Some(addr) = plain_http::direct_address(req.url)
        {
            let follow = req.client.follows_redirects();
            match plain_http::send(addr, req.url, &headers, user_agent, follow).await {
                Outcome::Response(head, body) => {
                    return finish(req, head, Source::Plain(body)).await;
                }
                Outcome::Failed(e) => return Err(e),
                // A redirect, for reqwest to follow (it answers at once: no profile ran).
                Outcome::Fallback => {}
            }
        }
    }
    let client = if keep_connection {
        req.client.client()
    } else {
        req.client.one_shot()
    };
    let resp = client
        .get(req.url.clone())
        .headers(headers)
        .send()
        .await
        .map_err(|e| transport_error(&e, "request failed"))?;
    let answer = Head {
        status: resp.status().as_u16(),
        content_type: resp
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        content_length: resp.content_length(),
    };
    finish(req, answer, Source::Reqwest(resp)).await
}

/// Where a body is read from.
enum Source {
    Reqwest(reqwest::Response),
    Plain(plain_http::Body),
}

impl Source {
    async fn chunk(&mut self) -> Result<Option<Chunk<'_>>, ScrapeError> {
        match self {
            Source::Reqwest(resp) => match resp.chunk().await {
                Ok(c) => Ok(c.map(Chunk::Owned)),
                Err(e) => Err(transport_error(&e, "reading the response body failed")),
            },
            Source::Plain(body) => Ok(body.chunk().await?.map(Chunk::Borrowed)),
        }
    }
}

enum Chunk<'a> {
    Owned(Bytes),
    Borrowed(&'a [u8]),
}

impl std::ops::Deref for Chunk<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Chunk::Owned(b) => b,
            Chunk::Borrowed(s) => s,
        }
    }
}

/// Alloy's checks on the status, the declared length and the body.
async fn finish(
    req: &mut FetchRequest<'_>,
    answer: Head,
    source: Source,
) -> Result<Bytes, ScrapeError> {
    let status = answer.status;
    if !(200..300).contains(&status) {
        // Only the start of an error page is quoted; a broken body still reports the status.
        let body = read_body(source, ERROR_BODY_PREVIEW as u64, false, 0, None)
            .await
            .unwrap_or_default();
        let reason = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        return Err(status_error(status, reason, &body));
    }
    let limit = req.body_size_limit;
    if limit > 0
        && let Some(len) = answer.content_length
        && len > limit
    {
        return Err(ScrapeError::new(
            Reason::BodyTooLarge,
            format!(
                "response body of {len} bytes (Content-Length) exceeds body_size_limit ({limit} bytes); not read"
            ),
        ));
    }
    let hint = answer
        .content_length
        .map_or(req.size_hint, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let memory = Some((&mut *req.memory, req.priority));
    let body = read_body(source, limit, true, hint, memory).await?;
    validate_body(&body, answer.content_type.as_deref())?;
    Ok(body)
}

/// Reads the body chunk by chunk. With `strict`, more than `limit` bytes (0 = no limit) is an
/// error and reading stops there; without, the first `limit` bytes are returned.
///
/// With `memory`, the reservation follows the buffer's capacity: when the budget refuses to
/// grow it, reading stops with [`Reason::MemoryBudget`].
async fn read_body(
    mut source: Source,
    limit: u64,
    strict: bool,
    hint: usize,
    mut memory: Option<(&mut Reservation, Priority)>,
) -> Result<Bytes, ScrapeError> {
    let cap = if limit > 0 {
        hint.min(usize::try_from(limit).unwrap_or(usize::MAX))
    } else {
        hint
    };
    // A lying Content-Length cannot make us reserve more than 8 MiB up front.
    let mut buf = BytesMut::with_capacity(cap.min(8 << 20));
    reserve_for(&mut memory, &buf)?;
    loop {
        let Some(chunk) = source.chunk().await? else {
            return Ok(buf.freeze());
        };
        let len = buf.len() as u64 + chunk.len() as u64;
        if limit > 0 && len > limit {
            if !strict {
                let room = usize::try_from(limit).unwrap_or(usize::MAX) - buf.len();
                buf.extend_from_slice(&chunk[..room]);
                return Ok(buf.freeze());
            }
            return Err(ScrapeError::new(
                Reason::BodyTooLarge,
                format!(
                    "response body exceeds body_size_limit ({limit} bytes); stopped reading after {len} bytes"
                ),
            ));
        }
        // Reserve before growing: the buffer at most doubles.
        if buf.len() + chunk.len() > buf.capacity() {
            let want = (buf.len() + chunk.len()).max(buf.capacity() * 2);
            reserve_bytes(&mut memory, want)?;
        }
        buf.extend_from_slice(&chunk);
        reserve_for(&mut memory, &buf)?;
    }
}

fn reserve_for(
    memory: &mut Option<(&mut Reservation, Priority)>,
    buf: &BytesMut,
) -> Result<(), ScrapeError> {
    reserve_bytes(memory, buf.capacity())
}

fn reserve_bytes(
    memory: &mut Option<(&mut Reservation, Priority)>,
    bytes: usize,
) -> Result<(), ScrapeError> {
    let Some((reservation, priority)) = memory else {
        return Ok(());
    };
    let bytes = bytes as u64;
    if bytes <= reservation.bytes() || reservation.try_resize(*priority, bytes) {
        return Ok(());
    }
    Err(ScrapeError::new(
        Reason::MemoryBudget,
        format!(
            "the response body exceeds the memory budget: no room to read it into {bytes} bytes"
        ),
    ))
}

/// A transport failure, described by its cause chain ("connection refused", "connection reset
/// by peer", "connection closed before message completed"...), without reqwest's URL prefix.
fn transport_error(e: &reqwest::Error, context: &str) -> ScrapeError {
    let reason = if e.is_timeout() {
        Reason::Timeout
    } else {
        Reason::Connection
    };
    let mut parts: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p == &text) {
            parts.push(text);
        }
        source = s.source();
    }
    let detail = if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    };
    ScrapeError::new(reason, format!("{context}: {detail}"))
}
