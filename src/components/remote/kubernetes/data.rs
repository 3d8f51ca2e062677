//! Reading one Secret or ConfigMap: the GET request, and the `data` of its JSON answer.
//!
//! A Secret's `data` holds base64 text (the API never returns `stringData`, which is write-only
//! and folded into `data` by the server); a ConfigMap's `data` holds plain strings (its
//! `binaryData` is ignored, as Alloy does). An object without `data` exports an empty map.
//! Values that are not UTF-8 once decoded are kept with U+FFFD in place of the bad bytes (Go
//! keeps the raw bytes in a string; our values are Rust strings).

use std::collections::BTreeMap;

use base64::Engine as _;

/// Which kind of object is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Secret,
    ConfigMap,
}

impl Kind {
    /// The resource's name in API paths.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Secret => "secrets",
            Kind::ConfigMap => "configmaps",
        }
    }

    /// The word used in messages (Alloy's `ResourceType`).
    pub fn word(self) -> &'static str {
        match self {
            Kind::Secret => "secret",
            Kind::ConfigMap => "configmap",
        }
    }
}

/// Why an answer could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DataError {
    #[error("decoding the {kind} as JSON: {reason}")]
    Json { kind: &'static str, reason: String },
    #[error("the answer is a {got:?}, not a {want}")]
    WrongKind { got: String, want: &'static str },
    #[error("data[{key:?}] is not a string")]
    NotString { key: String },
    #[error("data[{key:?}] is not valid base64: {reason}")]
    Base64 { key: String, reason: String },
}

/// The API path of `namespace`/`name`.
pub fn path(kind: Kind, namespace: &str, name: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/{}/{name}", kind.resource())
}

/// The `data` of an answer, decoded.
pub fn decode(kind: Kind, body: &str) -> Result<BTreeMap<String, String>, DataError> {
    let object: serde_json::Value = serde_json::from_str(body).map_err(|e| DataError::Json {
        kind: kind.word(),
        reason: e.to_string(),
    })?;
    let want = match kind {
        Kind::Secret => "Secret",
        Kind::ConfigMap => "ConfigMap",
    };
    // `kind` may be absent (some proxies strip it); a different kind is a wrong path.
    if let Some(got) = object.get("kind").and_then(|k| k.as_str())
        && got != want
    {
        return Err(DataError::WrongKind {
            got: got.to_string(),
            want,
        });
    }
    let mut out = BTreeMap::new();
    let Some(data) = object.get("data").and_then(|d| d.as_object()) else {
        return Ok(out);
    };
    for (key, value) in data {
        let text = value
            .as_str()
            .ok_or_else(|| DataError::NotString { key: key.clone() })?;
        let value = match kind {
            Kind::ConfigMap => text.to_string(),
            Kind::Secret => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|e| DataError::Base64 {
                        key: key.clone(),
                        reason: e.to_string(),
                    })?;
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        out.insert(key.clone(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data an answer decodes to, or a part of its error.
    type Want = Result<BTreeMap<String, String>, &'static str>;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn secrets() {
        let cases: &[(&str, Want)] = &[
            (
                r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"type":"Opaque","data":{"password":"aHVudGVyMg==","username":"dXNlcg=="}}"#,
                Ok(map(&[("password", "hunter2"), ("username", "user")])),
            ),
            // No `data` at all (an empty secret): an empty map.
            (r#"{"kind":"Secret","metadata":{"name":"s"}}"#, Ok(map(&[]))),
            (r#"{"kind":"Secret","data":null}"#, Ok(map(&[]))),
            // `stringData` never comes back from the API; if a proxy sent it, it is not data.
            (
                r#"{"kind":"Secret","stringData":{"a":"plain"},"data":{"b":"Yg=="}}"#,
                Ok(map(&[("b", "b")])),
            ),
            // An empty value is a key with an empty string, not a missing key.
            (
                r#"{"kind":"Secret","data":{"e":""}}"#,
                Ok(map(&[("e", "")])),
            ),
            // Bytes that are not UTF-8 survive as replacement characters.
            (
                r#"{"kind":"Secret","data":{"bin":"/w=="}}"#,
                Ok(map(&[("bin", "\u{FFFD}")])),
            ),
            (
                r#"{"kind":"Secret","data":{"p":"not base64!"}}"#,
                Err("not valid base64"),
            ),
            (
                r#"{"kind":"Secret","data":{"p":1}}"#,
                Err("is not a string"),
            ),
            (r#"{"kind":"ConfigMap","data":{}}"#, Err("not a Secret")),
            ("<html>", Err("decoding the secret as JSON")),
        ];
        for (body, want) in cases {
            let got = decode(Kind::Secret, body);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(&g, w, "{body}"),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{body}: {e}"),
                (g, w) => panic!("{body}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn configmaps() {
        let cases: &[(&str, Want)] = &[
            (
                r#"{"kind":"ConfigMap","data":{"url":"http://p:4040","n":"aGk="},"binaryData":{"b":"aGk="}}"#,
                Ok(map(&[("n", "aGk="), ("url", "http://p:4040")])),
            ),
            (r#"{"kind":"ConfigMap"}"#, Ok(map(&[]))),
            (r#"{"data":{"k":"v"}}"#, Ok(map(&[("k", "v")]))),
            (r#"{"kind":"Secret","data":{}}"#, Err("not a ConfigMap")),
        ];
        for (body, want) in cases {
            let got = decode(Kind::ConfigMap, body);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(&g, w, "{body}"),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{body}: {e}"),
                (g, w) => panic!("{body}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn paths() {
        assert_eq!(
            path(Kind::Secret, "monitoring", "creds"),
            "/api/v1/namespaces/monitoring/secrets/creds"
        );
        assert_eq!(
            path(Kind::ConfigMap, "default", "endpoint"),
            "/api/v1/namespaces/default/configmaps/endpoint"
        );
    }
}
