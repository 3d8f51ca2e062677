//! The `discovery.docker` block, as Alloy: `host` (required), `port` (80),
//! `host_networking_host` (`"localhost"`), `match_first_network` (true), `refresh_interval`
//! (`"60s"`), `filter { name, values }` blocks, and the HTTP client arguments (used for
//! `http(s)://` hosts).

use serde::Deserialize;

use super::api;
use crate::httpclient::WithHttpClient;
use crate::syntax::decode::Invalid;
use crate::syntax::types::Duration;

/// The whole block: our options plus the HTTP client arguments, squashed as in Alloy.
pub type Arguments = WithHttpClient<Options>;

/// One `filter` block: a Docker list filter (`name = "label"`, `values = ["a=b"]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Filter {
    pub name: String,
    pub values: Vec<String>,
}

/// Everything in the block except the HTTP client arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawOptions")]
pub struct Options {
    pub host: String,
    pub port: u16,
    pub host_networking_host: String,
    pub match_first_network: bool,
    pub refresh_interval: Duration,
    pub filter: Vec<Filter>,
}

fn default_port() -> u16 {
    80
}
fn default_host_networking_host() -> String {
    "localhost".into()
}
fn default_true() -> bool {
    true
}
fn default_refresh_interval() -> Duration {
    Duration::from_secs(60)
}

// The name is what the decoder shows for unknown attributes.
#[derive(Deserialize)]
#[serde(rename = "discovery.docker")]
struct RawOptions {
    host: String,
    #[serde(default = "default_port")]
    port: u16,
    #[serde(default = "default_host_networking_host")]
    host_networking_host: String,
    #[serde(default = "default_true")]
    match_first_network: bool,
    #[serde(default = "default_refresh_interval")]
    refresh_interval: Duration,
    #[serde(default)]
    filter: Vec<Filter>,
}

impl TryFrom<RawOptions> for Options {
    type Error = String;

    fn try_from(r: RawOptions) -> Result<Self, String> {
        if r.refresh_interval.is_zero() {
            return Err("refresh_interval must be greater than 0".into());
        }
        Ok(Options {
            host: r.host,
            port: r.port,
            host_networking_host: r.host_networking_host,
            match_first_network: r.match_first_network,
            refresh_interval: r.refresh_interval,
            filter: r.filter,
        })
    }
}

/// The block's problems, at the attribute at fault.
pub fn invalid(args: &Arguments) -> Vec<Invalid> {
    if args.host.is_empty() {
        return vec![Invalid::new("host attribute must not be empty").attr("host")];
    }
    match api::endpoint(&args.host) {
        Ok(_) => Vec::new(),
        Err(e) => vec![Invalid::new(e).attr("host")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src)
    }

    #[test]
    fn defaults_filters_and_validation() {
        let a = decode_args("host = \"unix:///var/run/docker.sock\"").expect("valid");
        assert_eq!(a.port, 80);
        assert_eq!(a.host_networking_host, "localhost");
        assert!(a.match_first_network);
        assert_eq!(a.refresh_interval, Duration::from_secs(60));
        assert!(invalid(&a).is_empty());
        let a = decode_args(
            "host = \"tcp://10.0.0.1:2375\"\nport = 6060\nmatch_first_network = false\nfilter {\n  name = \"label\"\n  values = [\"profile=true\"]\n}\n",
        )
        .expect("valid");
        assert_eq!(a.port, 6060);
        assert!(!a.match_first_network);
        assert_eq!(
            a.filter,
            [Filter {
                name: "label".into(),
                values: vec!["profile=true".into()]
            }]
        );
        assert!(decode_args("").is_err(), "host is required");
        assert!(decode_args("host = \"unix:///x\"\nrefresh_interval = \"0s\"").is_err());
        assert!(decode_args("host = \"unix:///x\"\nport = 70000").is_err());
        let bad = decode_args("host = \"/var/run/docker.sock\"").expect("decodes");
        assert!(
            invalid(&bad)[0].message.contains("expected unix://"),
            "{:?}",
            invalid(&bad)
        );
    }
}
