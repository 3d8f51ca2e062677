//! `scraper check` with `remote.kubernetes.*` exports: an attribute that uses `data` (only a
//! cluster can give it) is not judged against an empty map, and everything else in the config
//! is still checked.

use crate::components::builtin;
use crate::runtime::check;

const CONFIGMAP: &str = r#"
remote.kubernetes.configmap "endpoint" {
  namespace = "monitoring"
  name      = "pyro-endpoint"
}

remote.kubernetes.secret "auth" {
  namespace = "monitoring"
  name      = "pyro-auth"
}
"#;

/// The errors `check` reports for `CONFIGMAP` followed by `rest`.
fn errors(rest: &str) -> Vec<String> {
    let src = format!("{CONFIGMAP}{rest}");
    check(&builtin(), "t.alloy", &src)
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| d.message)
        .collect()
}

#[test]
fn uses_of_data_are_left_to_run_and_the_rest_is_checked() {
    // (why, the rest of the config, a part of each error expected, in order)
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "a required url from a ConfigMap key",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"]
  }
}"#,
            &[],
        ),
        (
            "a url built from a key, and credentials from a Secret",
            r#"pyroscope.write "w" {
  endpoint {
    url = "https://" + remote.kubernetes.configmap.endpoint.data["host"]
    basic_auth {
      username = convert.nonsensitive(remote.kubernetes.secret.auth.data["user"])
      password = remote.kubernetes.secret.auth.data["password"]
    }
  }
}"#,
            &[],
        ),
        (
            "through a custom component's argument",
            r#"declare "sink" {
  argument "url" { }
  pyroscope.write "w" {
    endpoint {
      url = argument.url.value
    }
  }
}
sink "s" {
  url = remote.kubernetes.configmap.endpoint.data["url"]
}"#,
            &[],
        ),
        (
            "an unknown attribute beside it is still an error",
            r#"pyroscope.write "w" {
  endpoint {
    url  = remote.kubernetes.configmap.endpoint.data["url"]
    nope = 1
  }
}"#,
            &["nope"],
        ),
        (
            // (After it, it is not: the decoder leaves out the endpoint whose url it left
            // out, and the later endpoint's error is then taken for the left-out one's.)
            "a bad literal url in an endpoint before it is still an error",
            r#"pyroscope.write "w" {
  endpoint {
    url = "not a url"
  }
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"]
  }
}"#,
            &["not a url"],
        ),
        (
            "a misspelt component is still an error",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpont.data["url"]
  }
}"#,
            &["does not exist"],
        ),
        (
            "a missing url without any remote data is still an error",
            r#"pyroscope.write "w" {
  endpoint { }
}"#,
            &["url"],
        ),
        (
            "an expression using the data is left to run, even one no value could satisfy",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"] + 1
  }
}"#,
            &[],
        ),
    ];
    for (why, rest, want) in cases {
        let got = errors(rest);
        assert_eq!(got.len(), want.len(), "{why}: {got:?}");
        for (g, w) in got.iter().zip(want.iter()) {
            assert!(g.contains(w), "{why}: {got:?}");
        }
    }
}
