//! The `queue_config` and `limits` blocks (ours) that every sending component accepts, and
//! the checks of an endpoint's URL and headers that its `validate` makes.

use serde::Deserialize;

use super::limits;
use crate::syntax::types::Duration;

/// `queue_config { ... }` (ours).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawQueueConfig")]
pub struct QueueConfig {
    pub max_bytes: u64,
    pub senders: u64,
    pub max_age: Duration,
    pub flush_deadline: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            max_bytes: 64 << 20,
            senders: 4,
            max_age: Duration::from_secs(3600),
            flush_deadline: Duration::from_secs(5),
        }
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct RawQueueConfig {
    max_bytes: u64,
    senders: u64,
    max_age: Duration,
    flush_deadline: Duration,
}

impl Default for RawQueueConfig {
    fn default() -> Self {
        let d = QueueConfig::default();
        RawQueueConfig {
            max_bytes: d.max_bytes,
            senders: d.senders,
            max_age: d.max_age,
            flush_deadline: d.flush_deadline,
        }
    }
}

impl TryFrom<RawQueueConfig> for QueueConfig {
    type Error = String;
    fn try_from(r: RawQueueConfig) -> Result<Self, String> {
        if !(1..=256).contains(&r.senders) {
            return Err(format!(
                "queue_config senders must be between 1 and 256, got {}",
                r.senders
            ));
        }
        Ok(QueueConfig {
            max_bytes: r.max_bytes,
            senders: r.senders,
            max_age: r.max_age,
            flush_deadline: r.flush_deadline,
        })
    }
}

/// `limits { ... }` (ours): the backend's per-profile limits to fit profiles into.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct LimitsConfig {
    pub max_profile_size_bytes: u64,
    pub max_profile_samples: u64,
    pub max_burst_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let d = limits::Limits::default();
        LimitsConfig {
            max_profile_size_bytes: d.max_profile_bytes as u64,
            max_profile_samples: d.max_samples as u64,
            max_burst_bytes: d.max_burst_bytes as u64,
        }
    }
}

/// The URL pushes go to: `base` (as written in the config) with `path` appended. Refused
/// unless it is an absolute http or https URL with a host: anything else could never be sent
/// to, and is better reported where it was written than on every push.
pub fn push_url(base: &str, path: &str) -> Result<reqwest::Url, String> {
    if base.trim().is_empty() {
        return Err("endpoint url is empty".to_string());
    }
    // The base on its own first: with the path appended, "http://" would read as host "p".
    let url =
        reqwest::Url::parse(base).map_err(|e| format!("endpoint url {base:?} is invalid: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "endpoint url {base:?} must start with http:// or https://"
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("endpoint url {base:?} has no host"));
    }
    let full = format!("{}{path}", base.trim_end_matches('/'));
    reqwest::Url::parse(&full).map_err(|e| format!("endpoint url {base:?} is invalid: {e}"))
}

/// Each header of an endpoint's `headers` that cannot be sent, with why.
pub fn header_problems(
    headers: &std::collections::BTreeMap<String, String>,
) -> Vec<(&str, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let one = std::collections::BTreeMap::from([(name.clone(), value.clone())]);
            super::sensitive_headers(&one)
                .err()
                .map(|e| (name.as_str(), e))
        })
        .collect()
}

/// `retry_on_failure { ... }` of the `otelcol.exporter.*` components (the Collector's
/// exporterhelper block), shared by the OTLP/HTTP and OTLP/gRPC exporters.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct RetryArguments {
    pub enabled: bool,
    pub initial_interval: Duration,
    pub max_interval: Duration,
    pub max_elapsed_time: Duration,
    /// Accepted for compatibility: the backoff doubles, jittered, as pyroscope.write's does.
    pub multiplier: f64,
    /// Accepted for compatibility (see `multiplier`).
    pub randomization_factor: f64,
}

impl Default for RetryArguments {
    fn default() -> Self {
        RetryArguments {
            enabled: true,
            initial_interval: Duration::from_secs(5),
            max_interval: Duration::from_secs(30),
            max_elapsed_time: Duration::from_secs(300),
            multiplier: 1.5,
            randomization_factor: 0.5,
        }
    }
}

/// Whether an `otelcol.exporter.*` `client.compression` asks for gzip.
pub fn gzip_compression(compression: &str) -> Result<bool, String> {
    match compression {
        "gzip" => Ok(true),
        "none" | "" => Ok(false),
        other => Err(format!(
            "client compression {other:?} is not supported (\"gzip\" or \"none\")"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_urls() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("http://pyroscope:4040", Ok("http://pyroscope:4040/p")),
            ("https://x.example/base/", Ok("https://x.example/base/p")),
            ("", Err("endpoint url is empty")),
            ("  ", Err("endpoint url is empty")),
            (
                "<URL>",
                Err("endpoint url \"<URL>\" is invalid: relative URL without a base"),
            ),
            (
                "pyroscope:4040",
                Err("endpoint url \"pyroscope:4040\" must start with http:// or https://"),
            ),
            (
                "http://",
                Err("endpoint url \"http://\" is invalid: empty host"),
            ),
        ];
        for (base, want) in cases {
            let got = push_url(base, "/p").map(|u| u.to_string());
            assert_eq!(got.as_deref().map_err(String::as_str), *want, "{base:?}");
        }
    }
}
