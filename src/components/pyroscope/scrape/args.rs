//! The arguments of a `pyroscope.scrape` block, with Alloy's defaults and validation messages
//! (spec §2.1), plus the per-target limits Alloy declares but never implemented.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::profiling::ProfilingConfig;
use super::target::DiscoveredTarget;
use crate::httpclient::WithHttpClient;
use crate::profiles::Receiver;
use crate::syntax::types::{CapsuleRef, Duration};

/// The whole block: our options plus the HTTP client arguments (`basic_auth`, `tls_config`...),
/// which Alloy squashes into the block's top level.
pub type Arguments = WithHttpClient<ScrapeOptions>;

/// Default `body_size_limit`: 64 MiB, as received (compressed).
pub const DEFAULT_BODY_SIZE_LIMIT: u64 = 64 << 20;

/// `clustering { enabled = ... }`: scrape only the targets this instance owns among the live
/// peers (`scraper run --cluster.enabled`; see the `clustering` module and docs/CLUSTERING.md).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Clustering {
    pub enabled: bool,
}

/// Everything in the block except the HTTP client arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawOptions")]
pub struct ScrapeOptions {
    /// Shared with the discovery components that exported them: decoding copies no label.
    pub targets: Vec<DiscoveredTarget>,
    pub forward_to: Vec<CapsuleRef<Receiver>>,
    pub job_name: String,
    pub params: BTreeMap<String, Vec<String>>,
    pub scrape_interval: Duration,
    pub scrape_timeout: Duration,
    pub delta_profiling_duration: Duration,
    pub scheme: String,
    pub profiling_config: ProfilingConfig,
    pub clustering: Option<Clustering>,
    /// Largest response body accepted, in bytes as received; 0 = no limit.
    pub body_size_limit: u64,
    /// Most labels a target may send (public ones, `__name__`, `__delta__`); 0 = no limit.
    pub label_limit: u64,
    pub label_name_length_limit: u64,
    pub label_value_length_limit: u64,
}

fn default_interval() -> Duration {
    Duration::from_secs(15)
}
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_delta_duration() -> Duration {
    Duration::from_secs(14)
}
fn default_scheme() -> String {
    "http".to_string()
}
fn default_body_size_limit() -> u64 {
    DEFAULT_BODY_SIZE_LIMIT
}

// The decoder reports unknown attributes from this field list, so its name is what users see
// only in our own (never Alloy's) messages.
#[derive(Deserialize)]
#[serde(rename = "pyroscope.scrape")]
struct RawOptions {
    targets: Vec<DiscoveredTarget>,
    forward_to: Vec<CapsuleRef<Receiver>>,
    #[serde(default)]
    job_name: String,
    #[serde(default)]
    params: BTreeMap<String, Vec<String>>,
    #[serde(default = "default_interval")]
    scrape_interval: Duration,
    #[serde(default = "default_timeout")]
    scrape_timeout: Duration,
    #[serde(default = "default_delta_duration")]
    delta_profiling_duration: Duration,
    #[serde(default = "default_scheme")]
    scheme: String,
    #[serde(default)]
    profiling_config: ProfilingConfig,
    #[serde(default)]
    clustering: Option<Clustering>,
    #[serde(default = "default_body_size_limit")]
    body_size_limit: u64,
    #[serde(default)]
    label_limit: u64,
    #[serde(default)]
    label_name_length_limit: u64,
    #[serde(default)]
    label_value_length_limit: u64,
}

impl TryFrom<RawOptions> for ScrapeOptions {
    type Error = String;

    /// Alloy's `Arguments.Validate`, in its order and words (the HTTP client's own validation
    /// runs afterwards, in `WithHttpClient`).
    fn try_from(r: RawOptions) -> Result<Self, String> {
        if r.scrape_timeout.is_zero() {
            return Err("scrape_timeout must be greater than 0".into());
        }
        let types = r.profiling_config.all_types().map_err(|e| e.to_string())?;
        let interval = r.scrape_interval.get().as_secs_f64();
        let delta = r.delta_profiling_duration.get().as_secs_f64();
        for t in types.values().filter(|t| t.enabled && t.delta) {
            if interval < 2.0 {
                return Err(
                    "scrape_interval must be at least 2 seconds when using delta profiling".into(),
                );
            }
            if delta <= 1.0 {
                return Err("delta_profiling_duration must be larger than 1 second when using delta profiling".into());
            }
            if delta > interval - 1.0 {
                return Err(format!(
                    "delta_profiling_duration must be at least 1 second smaller than scrape_interval when using delta profiling (profile {:?}: delta_profiling_duration = {}, scrape_interval = {})",
                    t.name, r.delta_profiling_duration, r.scrape_interval
                ));
            }
        }
        Ok(ScrapeOptions {
            targets: r.targets,
            forward_to: r.forward_to,
            job_name: r.job_name,
            params: r.params,
            scrape_interval: r.scrape_interval,
            scrape_timeout: r.scrape_timeout,
            delta_profiling_duration: r.delta_profiling_duration,
            scheme: r.scheme,
            profiling_config: r.profiling_config,
            clustering: r.clustering,
            body_size_limit: r.body_size_limit,
            label_limit: r.label_limit,
            label_name_length_limit: r.label_name_length_limit,
            label_value_length_limit: r.label_value_length_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode::from_body;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    fn decode(src: &str) -> Result<Arguments, Vec<String>> {
        let src = format!("targets = []\nforward_to = []\n{src}");
        let (file, diags) = parse_file(&src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
        from_body::<Arguments>(&body).map_err(|ds| ds.into_iter().map(|d| d.message).collect())
    }

    #[test]
    fn defaults_are_alloys() {
        let a = decode("").expect("valid");
        assert_eq!(a.scrape_interval, Duration::from_secs(15));
        assert_eq!(a.scrape_timeout, Duration::from_secs(10));
        assert_eq!(a.delta_profiling_duration, Duration::from_secs(14));
        assert_eq!(a.scheme, "http");
        assert_eq!(a.job_name, "");
        assert_eq!(a.body_size_limit, 64 << 20);
        assert_eq!(a.label_limit, 0);
        assert!(a.http.follow_redirects && a.http.enable_http2);
        assert!(a.clustering.is_none());
    }

    #[test]
    fn validation_messages_are_alloys() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "scrape_timeout = \"0s\"",
                Some("scrape_timeout must be greater than 0"),
            ),
            (
                "scrape_interval = \"1s\"",
                Some("scrape_interval must be at least 2 seconds when using delta profiling"),
            ),
            (
                "scrape_interval = \"10s\"",
                Some(
                    "delta_profiling_duration must be at least 1 second smaller than scrape_interval",
                ),
            ),
            (
                "scrape_interval = \"10s\"\ndelta_profiling_duration = \"1s\"",
                Some(
                    "delta_profiling_duration must be larger than 1 second when using delta profiling",
                ),
            ),
            (
                "scrape_interval = \"10s\"\ndelta_profiling_duration = \"9s\"",
                None,
            ),
            // Without a delta type enabled, the interval is free.
            (
                "scrape_interval = \"1s\"\nprofiling_config {\n  profile.process_cpu {\n    enabled = false\n  }\n}",
                None,
            ),
            (
                "bearer_token = \"a\"\nbasic_auth {\n  username = \"u\"\n}",
                Some(
                    "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured",
                ),
            ),
            ("clustering {\n  enabled = true\n}", None),
            ("clustering {\n}", Some("enabled")),
            ("bogus = 1", Some("bogus")),
        ];
        for (src, want) in cases {
            match (decode(src), want) {
                (Ok(_), None) => {}
                (Err(msgs), Some(w)) => assert!(
                    msgs.iter().any(|m| m.contains(w)),
                    "{src}: {msgs:?} should mention {w:?}"
                ),
                (got, want) => panic!("{src}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn http_client_and_limits_are_accepted() {
        let a = decode(
            "job_name = \"j\"\nparams = { \"debug\" = [\"1\"] }\nscheme = \"https\"\nbody_size_limit = 1024\nlabel_limit = 20\nenable_http2 = false\nfollow_redirects = false\ntls_config {\n  insecure_skip_verify = true\n}\nauthorization {\n  credentials = \"c\"\n}\nproxy_url = \"http://proxy:3128\"\n",
        )
        .expect("valid");
        assert_eq!(a.job_name, "j");
        assert_eq!(a.params["debug"], ["1"]);
        assert_eq!(a.body_size_limit, 1024);
        assert_eq!(a.label_limit, 20);
        assert!(!a.http.enable_http2 && !a.http.follow_redirects);
        assert!(a.http.tls_config.insecure_skip_verify);
        assert_eq!(a.http.proxy.proxy_url, "http://proxy:3128");
    }
}
