//! The request `import.http` makes. Loading a config is synchronous (it runs on a blocking
//! thread in `run`, and in `scraper check`), so the request runs on a thread of its own with a
//! small runtime, whatever the caller's context.

use std::collections::BTreeMap;
use std::time::Duration;

/// `import.http`'s `url`, `method`, `headers`, `body` and `poll_timeout`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub url: String,
    pub method: String,
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub timeout: Duration,
}

/// The largest module accepted: a module is a config file, and a wrong URL (a video, a
/// never-ending stream) must not fill the memory.
pub(crate) const MAX_MODULE_BYTES: usize = 16 << 20;

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
    if let Some(body) = &request.body {
        builder = builder.body(body.clone());
    }
    let timeout = request.timeout;
    // reqwest's message for a timeout names the URL only; say what happened.
    let describe = move |e: reqwest::Error| {
        if e.is_timeout() {
            format!("timed out after {timeout:?} (poll_timeout)")
        } else {
            e.to_string()
        }
    };
    let mut response = builder.send().await.map_err(describe)?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("unexpected status code {status}"));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(describe)? {
        if bytes.len() + chunk.len() > MAX_MODULE_BYTES {
            return Err(format!(
                "the module is larger than {} MiB",
                MAX_MODULE_BYTES >> 20
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Alloy's `path.Split(url)` directory: everything up to and including the last `/`, the
/// `module_path` of a module read from `url`.
pub(crate) fn url_dir(url: &str) -> String {
    url.rfind('/')
        .map_or_else(String::new, |i| url[..=i].to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn url_dir_is_go_path_split() {
        let cases = [
            ("http://h/a/b/m.alloy", "http://h/a/b/"),
            ("http://h/m.alloy", "http://h/"),
            ("http://h/dir/", "http://h/dir/"),
            ("m.alloy", ""),
        ];
        for (url, want) in cases {
            assert_eq!(super::url_dir(url), want, "{url}");
        }
    }
}
