//! One `http_sd` request, as Prometheus' `discovery/http` makes and judges it: `GET` with
//! `Accept: application/json` and `X-Prometheus-Refresh-Interval-Seconds`, a timeout of the
//! refresh interval, status 200 only, `Content-Type: application/json` (optionally with
//! `charset=utf-8`) only, a JSON list of target groups, and `__meta_url` on every target.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

use crate::httpclient::HttpClient;
use crate::httpclient::body::read_limited;
use crate::labels::LabelSet;
use crate::targets::group;

/// The label naming the URL a target came from (Prometheus' `httpSDURLLabel`).
pub const URL_LABEL: &str = "__meta_url";

/// The largest answer read. Prometheus has no bound; a list of 64 MiB is ~500,000 targets,
/// far past any real SD endpoint, and a broken one must not make us buffer without end.
pub const BODY_LIMIT: usize = 64 << 20;

/// Go's `strconv.FormatFloat(seconds, 'f', -1, 64)`, the header's value.
fn interval_header(interval: Duration) -> String {
    let secs = interval.as_secs_f64();
    crate::gocompat::strconv::format_float(secs, 'f', None).unwrap_or_else(|| secs.to_string())
}

/// Prometheus' `^(?i:application\/json(;\s*charset=("utf-8"|utf-8))?)$`, after trimming.
pub fn json_content_type(value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    let Some(rest) = v.strip_prefix("application/json") else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(rest) = rest.strip_prefix(';') else {
        return false;
    };
    // RE2's \s: tab, newline, form feed, carriage return, space.
    let rest = rest.trim_start_matches(['\t', '\n', '\x0c', '\r', ' ']);
    matches!(rest, "charset=utf-8" | "charset=\"utf-8\"")
}

/// An error and its causes, `a: b: c`: reqwest's own message alone does not say whether the
/// connection was refused or timed out.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Asks `url` once; the targets, or why there are none this time.
pub async fn fetch(
    client: &HttpClient,
    url: &str,
    interval: Duration,
) -> Result<Vec<Arc<LabelSet>>, String> {
    let mut request = client
        .client()
        .get(url)
        .header(ACCEPT, "application/json")
        .header(
            "X-Prometheus-Refresh-Interval-Seconds",
            interval_header(interval),
        )
        .timeout(interval)
        .build()
        .map_err(|e| e.to_string())?;
    client
        .apply(request.headers_mut())
        .await
        .map_err(|e| e.to_string())?;
    let response = client
        .client()
        .execute(request)
        .await
        .map_err(|e| error_chain(&e))?;
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        return Err(format!(
            "server returned HTTP status {} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .trim_end()
        .to_string());
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(HeaderValue::as_bytes)
        .map(String::from_utf8_lossy)
        .unwrap_or_default()
        .into_owned();
    if !json_content_type(&content_type) {
        return Err(format!("unsupported content type {content_type:?}"));
    }
    let body = read_limited(response, BODY_LIMIT)
        .await
        .map_err(|e| e.to_string())?;
    let groups = group::from_json(&body).map_err(|e| e.to_string())?;
    Ok(group::to_targets(&groups, URL_LABEL, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_as_prometheus_accepts_them() {
        let cases = [
            ("application/json", true),
            (" Application/JSON ", true),
            ("application/json; charset=utf-8", true),
            ("application/json;charset=\"UTF-8\"", true),
            ("application/json;\tcharset=utf-8", true),
            ("application/json; charset=latin1", false),
            ("application/json; charset=utf-8; x=y", false),
            ("application/jsonx", false),
            ("text/plain", false),
            ("", false),
        ];
        for (v, ok) in cases {
            assert_eq!(json_content_type(v), ok, "{v:?}");
        }
    }

    #[test]
    fn interval_header_is_gos_shortest_decimal() {
        assert_eq!(interval_header(Duration::from_secs(60)), "60");
        assert_eq!(interval_header(Duration::from_millis(1500)), "1.5");
    }
}
