//! Query-string parameters of the explorer's endpoints: times in milliseconds since the Unix
//! epoch, a profile type, a label selector, a step. Every problem is a 400 naming the
//! parameter.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::Query as QueryString;
use axum::extract::rejection::QueryRejection;

use super::error::ApiError;
use crate::query::selector::Selector;
use crate::query::source::{ProfileType, Query};

/// A request's parameters by name.
pub(super) struct Params(HashMap<String, String>);

impl Params {
    /// The extracted query string, or a 400 when it does not decode.
    pub fn from_request(
        query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
    ) -> Result<Params, ApiError> {
        match query {
            Ok(QueryString(map)) => Ok(Params(map)),
            Err(e) => Err(ApiError::bad_request(format!("invalid query string: {e}"))),
        }
    }

    #[cfg(test)]
    pub fn of(pairs: &[(&str, &str)]) -> Params {
        Params(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A required time in milliseconds since the Unix epoch.
    pub fn time(&self, name: &str) -> Result<SystemTime, ApiError> {
        let Some(raw) = self.get(name) else {
            return Err(ApiError::bad_request(format!(
                "missing parameter {name}: milliseconds since the Unix epoch"
            )));
        };
        raw.parse::<u64>()
            .ok()
            .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms)))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid {name} {raw:?}: expected milliseconds since the Unix epoch"
                ))
            })
    }

    /// `[from, to)` from the parameters `from` and `to` (or `before_from`/`before_to`...
    /// with a prefix); the end must be after the start.
    pub fn range(&self, prefix: &str) -> Result<(SystemTime, SystemTime), ApiError> {
        let (from_name, to_name) = (format!("{prefix}from"), format!("{prefix}to"));
        let (from, to) = (self.time(&from_name)?, self.time(&to_name)?);
        if to <= from {
            return Err(ApiError::bad_request(format!(
                "{to_name} must be after {from_name}"
            )));
        }
        Ok((from, to))
    }

    /// `type`: a profile type ID or a bare `__name__`; `default` when absent.
    pub fn profile_type(&self, default: Option<&str>) -> Result<ProfileType, ApiError> {
        let raw = match (self.get("type"), default) {
            (Some(raw), _) | (None, Some(raw)) => raw,
            (None, None) => {
                return Err(ApiError::bad_request(
                    "missing parameter type: a profile type such as \
                     process_cpu:cpu:nanoseconds:cpu:nanoseconds",
                ));
            }
        };
        ProfileType::parse(raw).map_err(ApiError::bad_request)
    }

    /// `query`: a label selector; all series when absent.
    pub fn selector(&self) -> Result<Selector, ApiError> {
        let raw = self.get("query").unwrap_or("{}");
        Selector::parse(raw)
            .map_err(|e| ApiError::bad_request(format!("invalid query {raw:?}: {e}")))
    }

    /// A whole number of seconds, at least 1; `default` when absent.
    pub fn seconds(&self, name: &str, default: u64) -> Result<u64, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => raw.parse::<u64>().ok().filter(|&s| s > 0).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid {name} {raw:?}: expected a whole number of seconds, at least 1"
                ))
            }),
        }
    }

    /// A whole number, `None` when absent.
    pub fn integer(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.get(name)
            .map(|raw| {
                raw.trim().parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid {name} {raw:?}: expected a number"))
                })
            })
            .transpose()
    }

    /// The query of `type`, `query` and the range with `prefix`.
    pub fn query(&self, prefix: &str, default_type: Option<&str>) -> Result<Query, ApiError> {
        let (from, to) = self.range(prefix)?;
        Ok(Query {
            selector: self.selector()?,
            profile_type: self.profile_type(default_type)?,
            from,
            to,
            exclude_straddling: false,
        })
    }
}

/// Milliseconds since the Unix epoch, as the contract's JSON carries times.
pub(super) fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_or_name_the_bad_parameter() {
        let ok = Params::of(&[("from", "1750000000000"), ("to", "1750000060000")]);
        let (from, to) = ok.range("").expect("range");
        assert_eq!(
            (millis(from), millis(to)),
            (1_750_000_000_000, 1_750_000_060_000)
        );
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("to", "5")], "missing parameter from"),
            (
                &[("from", "now-1h"), ("to", "5")],
                "invalid from \"now-1h\"",
            ),
            (&[("from", "-5"), ("to", "5")], "invalid from \"-5\""),
            (&[("from", "5"), ("to", "5")], "to must be after from"),
            (&[("from", "9"), ("to", "5")], "to must be after from"),
            (
                &[("from", "1"), ("to", "99999999999999999999999")],
                "invalid to",
            ),
        ];
        for (pairs, want) in cases {
            let err = Params::of(pairs).range("").expect_err("bad range");
            assert_eq!(err.status.as_u16(), 400);
            assert!(err.message.contains(want), "{pairs:?}: {}", err.message);
        }
        let err = Params::of(&[("before_from", "1")])
            .range("before_")
            .expect_err("missing");
        assert!(
            err.message.contains("missing parameter before_to"),
            "{}",
            err.message
        );
    }

    #[test]
    fn types_selectors_and_steps() {
        let p = Params::of(&[
            ("type", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"),
            ("query", r#"{service_name="app"}"#),
            ("step", "30"),
        ]);
        assert_eq!(p.profile_type(None).expect("type").name, "process_cpu");
        assert_eq!(
            p.selector().expect("selector").to_string(),
            r#"{service_name="app"}"#
        );
        assert_eq!(p.seconds("step", 15), Ok(30));
        assert_eq!(p.integer("step"), Ok(Some(30)));
        assert_eq!(p.integer("max_nodes"), Ok(None));
        assert!(
            Params::of(&[("max_nodes", "x")])
                .integer("max_nodes")
                .expect_err("not a number")
                .message
                .contains("invalid max_nodes \"x\"")
        );
        let empty = Params::of(&[]);
        assert_eq!(empty.selector().expect("all").to_string(), "{}");
        assert_eq!(empty.seconds("step", 15), Ok(15));
        assert_eq!(
            empty
                .profile_type(Some("process_cpu"))
                .expect("default")
                .name,
            "process_cpu"
        );
        let bad: &[(&[(&str, &str)], &str)] = &[
            (&[("type", "a:b")], "invalid profile type"),
            (&[("query", "{service_name=}")], "invalid query"),
            (&[("step", "0")], "invalid step \"0\""),
            (&[("step", "1.5")], "invalid step"),
        ];
        for (pairs, want) in bad {
            let p = Params::of(pairs);
            let err = [
                p.profile_type(Some("process_cpu")).err(),
                p.selector().err(),
                p.seconds("step", 15).err(),
            ]
            .into_iter()
            .flatten()
            .next()
            .expect("an error");
            assert!(err.message.contains(want), "{pairs:?}: {}", err.message);
        }
        assert!(
            Params::of(&[])
                .profile_type(None)
                .expect_err("required")
                .message
                .contains("missing parameter type")
        );
    }
}
