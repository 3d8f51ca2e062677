//! `scraper mark NAME`: records an event ("upgrade to 0.101.0 started") in the running
//! scraper's stores, through `POST /api/v0/marks`.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

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
    let url = if args.server.contains("://") {
        format!("{}/api/v0/marks", args.server.trim_end_matches('/'))
    } else {
        format!("http://{}/api/v0/marks", args.server)
    };
    let mut body = serde_json::json!({ "name": args.name });
    if let Some(at) = &args.at {
        body["at"] = serde_json::Value::String(at.clone());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the HTTP client")?;
    let (status, text) = runtime.block_on(async {
        let resp = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .with_context(|| format!("POST {url} (is `scraper run` listening there?)"))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        anyhow::Ok((status, text))
    })?;
    let reply: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    if !status.is_success() {
        let message = reply["error"].as_str().unwrap_or(text.trim());
        anyhow::bail!("{url}: {status}: {message}");
    }
    println!(
        "mark {:?} recorded at {} in {} store(s)",
        args.name,
        reply["at"].as_str().unwrap_or("?"),
        reply["stores"]
    );
    Ok(ExitCode::SUCCESS)
}
