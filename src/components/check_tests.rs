//! `scraper check` with `remote.kubernetes.*` exports: an attribute that uses `data` (only a
//! cluster can give it) is not judged against an empty map, it is named among the unchecked
//! ones, and everything else in the config is still checked. Here, at the registry, because it
//! takes two components: the remote one and a user of its data (`pyroscope.write`).

use super::builtin;
use crate::runtime::check_report;
use crate::syntax::diag::Source;

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

/// The errors `check` reports for `CONFIGMAP` followed by `rest` (`message @ source text at
/// its position`), and the text of each attribute it left unchecked.
fn check(rest: &str) -> (Vec<String>, Vec<String>) {
    let src = format!("{CONFIGMAP}{rest}");
    let checked = check_report(&builtin(), &Source::new("t.alloy", src.as_str()));
    let errors = checked
        .diags
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let at = d
                .span
                .map_or("", |s| &src[s.start as usize..s.end as usize]);
            format!("{} @ {at}", d.message)
        })
        .collect();
    let unchecked = checked
        .unchecked
        .iter()
        .map(|s| src[s.start as usize..s.end as usize].to_string())
        .collect();
    (errors, unchecked)
}

#[test]
fn uses_of_data_are_left_to_run_and_the_rest_is_checked() {
    // (why, the rest of the config, a part of each error expected, in order, the start of
    // each attribute expected unchecked, in order)
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        (
            "a required url from a ConfigMap key",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"]
  }
}"#,
            &[],
            &["url = remote"],
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
            &["url = \"https://\"", "username = ", "password = "],
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
            &["url = argument.url.value"],
        ),
        (
            "through a custom component's export (<instance>.<name>)",
            r#"declare "endpoint" {
  argument "name" { }
  remote.kubernetes.configmap "cm" {
    namespace = "monitoring"
    name      = argument.name.value
  }
  export "url" {
    value = remote.kubernetes.configmap.cm.data["url"]
  }
}
endpoint "e" {
  name = "pyro-endpoint"
}
pyroscope.write "w" {
  endpoint {
    url = endpoint.e.url
  }
}"#,
            &[],
            &["url = endpoint.e.url"],
        ),
        (
            "an export holding the data does not hide other errors of its user",
            r#"declare "endpoint" {
  remote.kubernetes.configmap "cm" {
    namespace = "monitoring"
    name      = "pyro-endpoint"
  }
  export "url" {
    value = remote.kubernetes.configmap.cm.data["url"]
  }
}
endpoint "e" { }
pyroscope.write "w" {
  endpoint {
    url = endpoint.e.url
  }
  endpoint { }
}"#,
            &["url"],
            &["url = endpoint.e.url"],
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
            &["url  = remote"],
        ),
        (
            "a bad literal url in an endpoint before it is still an error, at its url",
            r#"pyroscope.write "w" {
  endpoint {
    url = "not a url"
  }
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"]
  }
}"#,
            &["@ \"not a url\""],
            &["url = remote"],
        ),
        (
            // The decoder leaves out the endpoint whose url it left out: the value holds one
            // endpoint fewer, and the error found in its second is the third block's.
            "a bad literal url in an endpoint after it is still an error, at its url",
            r#"pyroscope.write "w" {
  endpoint {
    url = "https://ok.example"
  }
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"]
  }
  endpoint {
    url = "not a url either"
  }
}"#,
            &["@ \"not a url either\""],
            &["url = remote"],
        ),
        (
            "a reference to a component whose arguments use the data is still checked",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"]
  }
}
pyroscope.receive_http "in" {
  http {
    listen_port = 4040
  }
  forward_to = [pyroscope.write.w.receiver, 1]
}"#,
            &["expected capsule"],
            &["url = remote"],
        ),
        (
            "a misspelt component is still an error",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpont.data["url"]
  }
}"#,
            &["does not exist"],
            &[],
        ),
        (
            "a missing url without any remote data is still an error",
            r#"pyroscope.write "w" {
  endpoint { }
}"#,
            &["url"],
            &[],
        ),
        (
            "an expression using the data is left to run, even one no value could satisfy",
            r#"pyroscope.write "w" {
  endpoint {
    url = remote.kubernetes.configmap.endpoint.data["url"] + 1
  }
}"#,
            &[],
            &["url = remote"],
        ),
    ];
    for (why, rest, want_errors, want_unchecked) in cases {
        let (errors, unchecked) = check(rest);
        assert_eq!(errors.len(), want_errors.len(), "{why}: {errors:?}");
        for (g, w) in errors.iter().zip(want_errors.iter()) {
            assert!(g.contains(w), "{why}: {errors:?}");
        }
        assert_eq!(
            unchecked.len(),
            want_unchecked.len(),
            "{why}: {unchecked:?}"
        );
        for (g, w) in unchecked.iter().zip(want_unchecked.iter()) {
            assert!(g.starts_with(w), "{why}: {unchecked:?}");
        }
    }
}
