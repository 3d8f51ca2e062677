//! The `discovery.http` block: `url` (required), `refresh_interval` (`"60s"`) and the HTTP
//! client arguments every HTTP component takes (`crate::httpclient`), as Alloy.

use serde::Deserialize;

use crate::httpclient::WithHttpClient;
use crate::syntax::decode::Invalid;
use crate::syntax::types::Duration;

/// The whole block: our options plus the HTTP client arguments, squashed as in Alloy.
pub type Arguments = WithHttpClient<Options>;

/// Everything in the block except the HTTP client arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawOptions")]
pub struct Options {
    pub url: String,
    /// How often the URL is asked again; also each request's timeout (Prometheus' rule).
    pub refresh_interval: Duration,
}

fn default_refresh_interval() -> Duration {
    Duration::from_secs(60)
}

// The name is what the decoder shows for unknown attributes.
#[derive(Deserialize)]
#[serde(rename = "discovery.http")]
struct RawOptions {
    url: String,
    #[serde(default = "default_refresh_interval")]
    refresh_interval: Duration,
}

impl TryFrom<RawOptions> for Options {
    type Error = String;

    fn try_from(r: RawOptions) -> Result<Self, String> {
        // Alloy hands the interval to a ticker, which panics on zero.
        if r.refresh_interval.is_zero() {
            return Err("refresh_interval must be greater than 0".into());
        }
        Ok(Options {
            url: r.url,
            refresh_interval: r.refresh_interval,
        })
    }
}

/// Prometheus' checks of an `http_sd_config` URL, in its words. Alloy does not run them (its
/// arguments go straight to the discoverer), so there a bad URL only fails each request.
pub fn url_problem(url: &str) -> Option<String> {
    if url.is_empty() {
        return Some("URL is missing".into());
    }
    let parsed = match reqwest::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return Some(format!("invalid URL {url:?}: {e}")),
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Some("URL scheme must be 'http' or 'https'".into());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Some("host is missing in URL".into());
    }
    None
}

/// The block's problems, at the attribute at fault.
pub fn invalid(args: &Arguments) -> Vec<Invalid> {
    url_problem(&args.url)
        .map(|m| Invalid::new(m).attr("url"))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src)
    }

    #[test]
    fn defaults_and_the_http_client_arguments() {
        let a = decode_args(
            "url = \"https://sd.example/targets\"\nbearer_token = \"t\"\ntls_config {\n  insecure_skip_verify = true\n}",
        )
        .expect("valid");
        assert_eq!(a.url, "https://sd.example/targets");
        assert_eq!(a.refresh_interval, Duration::from_secs(60));
        assert!(a.http.tls_config.insecure_skip_verify);
        assert!(invalid(&a).is_empty());
        assert!(decode_args("").is_err(), "url is required");
        assert!(decode_args("url = \"http://x\"\nrefresh_interval = \"0s\"").is_err());
        assert!(decode_args("url = \"http://x\"\nnope = 1").is_err());
        // The HTTP client's own validation applies.
        assert!(
            decode_args("url = \"http://x\"\nbearer_token = \"a\"\nbearer_token_file = \"b\"")
                .is_err()
        );
    }

    #[test]
    fn urls_are_checked_as_prometheus_does() {
        let cases = [
            ("http://sd:8080/targets", None),
            ("https://example.com/scrape_targets", None),
            ("", Some("URL is missing")),
            (
                "ftp://sd/targets",
                Some("URL scheme must be 'http' or 'https'"),
            ),
            (
                "sd:8080/targets",
                Some("URL scheme must be 'http' or 'https'"),
            ),
            ("not a url", Some("invalid URL")),
        ];
        for (url, want) in cases {
            match (url_problem(url), want) {
                (None, None) => {}
                (Some(got), Some(w)) => assert!(got.contains(w), "{url}: {got}"),
                (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
            }
        }
    }
}
