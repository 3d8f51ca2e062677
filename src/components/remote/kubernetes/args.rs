//! The arguments of `remote.kubernetes.secret` and `remote.kubernetes.configmap` (one shape for
//! both, as in Alloy): `namespace`, `name`, `poll_frequency` (`"1m"`), `poll_timeout`
//! (`"15s"`) and an optional `client` block, Alloy's Kubernetes client arguments (`api_server`
//! or `kubeconfig_file`, plus the HTTP client arguments used with `api_server`).

use serde::Deserialize;

use crate::httpclient::{HttpClientConfig, WithHttpClient};
use crate::syntax::decode::Invalid;
use crate::syntax::types::Duration;

/// The block.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename = "remote.kubernetes")]
pub struct Arguments {
    pub namespace: String,
    pub name: String,
    #[serde(default = "default_poll_frequency")]
    pub poll_frequency: Duration,
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout: Duration,
    #[serde(default)]
    pub client: Option<Client>,
}

/// `client { ... }`: where the API server is, squashed with the HTTP client arguments.
pub type Client = WithHttpClient<ClientOptions>;

/// The `client` block's own attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "client")]
pub struct ClientOptions {
    #[serde(default)]
    pub api_server: String,
    #[serde(default)]
    pub kubeconfig_file: String,
}

fn default_poll_frequency() -> Duration {
    Duration::from_secs(60)
}

fn default_poll_timeout() -> Duration {
    Duration::from_secs(15)
}

/// A name the API could hold (RFC 1123 subdomain characters): it becomes part of a URL path,
/// so anything else would address another resource or none.
fn is_object_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// The block's problems, at the attribute or block at fault (Alloy's `Validate` of the
/// arguments and of the client arguments).
pub fn invalid(args: &Arguments) -> Vec<Invalid> {
    let mut out = Vec::new();
    for (attr, value) in [("namespace", &args.namespace), ("name", &args.name)] {
        if !is_object_name(value) {
            out.push(
                Invalid::new(format!(
                    "{attr} {value:?} is not a Kubernetes name (lower case letters, digits, '-' and '.')"
                ))
                .attr(attr),
            );
        }
    }
    if args.poll_frequency.is_zero() {
        out.push(Invalid::new("poll_frequency must be greater than 0").attr("poll_frequency"));
    }
    if args.poll_timeout.is_zero() {
        out.push(Invalid::new("poll_timeout must be greater than 0").attr("poll_timeout"));
    }
    if let Some(client) = &args.client {
        if !client.api_server.is_empty() && !client.kubeconfig_file.is_empty() {
            out.push(
                Invalid::new("only one of api_server and kubeconfig_file can be set")
                    .block("client", 0)
                    .attr("kubeconfig_file"),
            );
        } else if !client.kubeconfig_file.is_empty() && client.http != HttpClientConfig::default() {
            // A kubeconfig carries its own credentials and TLS; settings beside it would be
            // silently ignored.
            out.push(
                Invalid::new(
                    "custom HTTP client configuration is not allowed when kubeconfig_file is set",
                )
                .block("client", 0),
            );
        }
        if let (false, Err(e)) = (
            client.api_server.is_empty(),
            reqwest::Url::parse(&client.api_server),
        ) {
            out.push(
                Invalid::new(format!("invalid api_server {:?}: {e}", client.api_server))
                    .block("client", 0)
                    .attr("api_server"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src)
    }

    #[test]
    fn defaults_and_the_client_block() {
        let a = decode_args("namespace = \"default\"\nname = \"creds\"").expect("valid");
        assert_eq!(
            (a.namespace.as_str(), a.name.as_str()),
            ("default", "creds")
        );
        assert_eq!(a.poll_frequency, Duration::from_secs(60));
        assert_eq!(a.poll_timeout, Duration::from_secs(15));
        assert!(a.client.is_none());
        assert!(invalid(&a).is_empty());

        let a = decode_args(
            "namespace = \"ns\"\nname = \"n\"\npoll_frequency = \"5s\"\nclient {\n  api_server = \"https://k8s:6443\"\n  bearer_token = \"t\"\n  tls_config {\n    insecure_skip_verify = true\n  }\n}",
        )
        .expect("valid");
        let client = a.client.as_ref().expect("client");
        assert_eq!(client.api_server, "https://k8s:6443");
        assert!(client.http.tls_config.insecure_skip_verify);
        assert_eq!(a.poll_frequency, Duration::from_secs(5));
        assert!(invalid(&a).is_empty());
    }

    #[test]
    fn refusals() {
        let cases = [
            ("name = \"n\"", "missing namespace"),
            ("namespace = \"ns\"", "missing name"),
            (
                "namespace = \"ns\"\nname = \"n\"\nnope = 1",
                "unknown attribute",
            ),
            (
                "namespace = \"ns\"\nname = \"n\"\nclient {\n  bearer_token = \"a\"\n  bearer_token_file = \"b\"\n}",
                "two auth methods",
            ),
            (
                "namespace = \"ns\"\nname = \"n\"\nclient {\n  nope = 1\n}",
                "unknown in client",
            ),
        ];
        for (src, why) in cases {
            assert!(decode_args(src).is_err(), "{why}");
        }
        let invalid_cases = [
            (
                "poll_frequency = \"0s\"",
                "poll_frequency must be greater than 0",
            ),
            (
                "poll_timeout = \"0s\"",
                "poll_timeout must be greater than 0",
            ),
            (
                "client {\n  api_server = \"https://a\"\n  kubeconfig_file = \"/k\"\n}",
                "only one of api_server and kubeconfig_file",
            ),
            (
                "client {\n  kubeconfig_file = \"/k\"\n  bearer_token = \"t\"\n}",
                "not allowed when kubeconfig_file is set",
            ),
            ("client {\n  api_server = \"::\"\n}", "invalid api_server"),
            ("name = \"../x\"", "is not a Kubernetes name"),
        ];
        for (extra, want) in invalid_cases {
            let src = if extra.starts_with("name =") {
                format!("namespace = \"ns\"\n{extra}")
            } else {
                format!("namespace = \"ns\"\nname = \"n\"\n{extra}")
            };
            let a = decode_args(&src).expect("decodes");
            let got: Vec<String> = invalid(&a).into_iter().map(|i| i.message).collect();
            assert!(got.iter().any(|m| m.contains(want)), "{extra}: {got:?}");
        }
    }
}
