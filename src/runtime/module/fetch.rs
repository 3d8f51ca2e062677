//! The request `import.http` makes. Loading a config is synchronous (it runs on a blocking
//! thread in `run`, and in `scraper check`), so the request runs on a thread of its own with a
//! small runtime, whatever the caller's context.

use std::collections::BTreeMap;
use std::time::Duration;

/// `import.http`'s `url`, `method`, `headers` and `poll_timeout`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub url: String,
    pub method: String,
    pub headers: BTreeMap<String, String>,
    pub timeout: Duration,
}

/// Fetches the module; a status other than 2xx is an error, as in Alloy's `remote.http`.
pub(crate) fn get_blocking(request: &Request) -> Result<String, String> {
    let request = request.clone();
    let url = request.url.clone();
    let thread = std::thread::Builder::new()
        .name("import.http".to_string())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(get(&request))
        })
        .map_err(|e| format!("failed to fetch {url}: {e}"))?;
    thread
        .join()
        .unwrap_or_else(|_| Err("the request panicked".to_string()))
        .map_err(|e| format!("failed to fetch {url}: {e}"))
}

async fn get(request: &Request) -> Result<String, String> {
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| format!("invalid method {:?}", request.method))?;
    let client = reqwest::Client::builder()
        .timeout(request.timeout)
        .build()
        .map_err(|e| e.to_string())?;
    let mut builder = client.request(method, &request.url);
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    let response = builder.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("unexpected status code {status}"));
    }
    response.text().await.map_err(|e| e.to_string())
}
