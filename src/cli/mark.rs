//! `scraper mark NAME`: records an event ("upgrade to 0.101.0 started") in the running
//! scraper's stores, through `POST /api/v0/marks`; `record` and `list` are shared with
//! `scraper window`.

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Args;

use crate::query::source::Mark;
use crate::server::DEFAULT_LISTEN_ADDR;

#[derive(Debug, Args)]
pub(crate) struct MarkCmd {
    /// What happened, e.g. "upgrade to 0.101.0 started".
    #[arg(value_name = "NAME")]
    name: String,
    /// The running scraper's HTTP address (its --server.http.listen-addr).
    #[arg(long, default_value = DEFAULT_LISTEN_ADDR)]
    server: String,
    /// When it happened (RFC 3339); default now.
    #[arg(long)]
    at: Option<String>,
}

pub(crate) fn mark(args: MarkCmd) -> anyhow::Result<ExitCode> {
    let (at, stores) = record(&args.server, &args.name, args.at.as_deref())?;
    println!(
        "mark {:?} recorded at {} in {stores} store(s)",
        args.name,
        crate::gocompat::time::rfc3339_millis(at),
    );
    Ok(ExitCode::SUCCESS)
}

/// `server` (an address, or a URL) as a URL without a trailing slash.
pub(crate) fn base_url(server: &str) -> String {
    if server.contains("://") {
        server.trim_end_matches('/').to_string()
    } else {
        format!("http://{server}")
    }
}

/// Records the mark `name` at `at` (RFC 3339; None = now) in the stores of the scraper at
/// `server`; returns when it was recorded and in how many stores. `scraper window` shares it.
pub(crate) fn record(
    server: &str,
    name: &str,
    at: Option<&str>,
) -> anyhow::Result<(SystemTime, u64)> {
    let url = format!("{}/api/v0/marks", base_url(server));
    let mut body = serde_json::json!({ "name": name });
    if let Some(at) = at {
        body["at"] = serde_json::Value::String(at.to_string());
    }
    let reply = request(&url, Some(body.to_string()))?;
    let at = reply["at"]
        .as_str()
        .and_then(crate::gocompat::time::parse_rfc3339)
        .with_context(|| format!("{url}: the reply has no time: {reply}"))?;
    Ok((at, reply["stores"].as_u64().unwrap_or(0)))
}

/// The marks the stores of the scraper at `server` hold between `from` and `to`, oldest first.
pub(crate) fn list(server: &str, from: SystemTime, to: SystemTime) -> anyhow::Result<Vec<Mark>> {
    let millis = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    let url = format!(
        "{}/api/v0/marks?from={}&to={}",
        base_url(server),
        millis(from),
        millis(to)
    );
    let reply = request(&url, None)?;
    let marks = reply["marks"]
        .as_array()
        .with_context(|| format!("{url}: the reply has no marks: {reply}"))?;
    Ok(marks
        .iter()
        .filter_map(|m| {
            Some(Mark {
                name: m["name"].as_str()?.to_string(),
                at: UNIX_EPOCH + Duration::from_millis(m["at"].as_u64()?),
            })
        })
        .collect())
}

/// POSTs `body` as JSON (GETs without one) and returns the JSON reply of a 2xx answer; an error
/// answer's message otherwise.
fn request(url: &str, body: Option<String>) -> anyhow::Result<serde_json::Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the HTTP client")?;
    let (status, text) = runtime.block_on(async {
        let client = reqwest::Client::new();
        let req = match body {
            Some(body) => client
                .post(url)
                .header("content-type", "application/json")
                .body(body),
            None => client.get(url),
        };
        let resp = req
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .with_context(|| format!("{url} (is `scraper run` listening there?)"))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        anyhow::Ok((status, text))
    })?;
    let reply: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    if !status.is_success() {
        let message = reply["error"].as_str().unwrap_or(text.trim());
        anyhow::bail!("{url}: {status}: {message}");
    }
    Ok(reply)
}
