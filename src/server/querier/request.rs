//! What every querier request carries, checked: the time range, the profile type and the label
//! selector.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::connect::ConnectError;
use crate::query::selector::Selector;
use crate::query::source::{ProfileType, Query};
use crate::query::types::{SeriesType, TYPE_LABELS};

/// A request's range: `start` and `end` are milliseconds, both included (as upstream reads
/// them); 0 for either means unbounded on that side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub from: SystemTime,
    /// Exclusive.
    pub to: SystemTime,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// Far enough in the future for "no end" (profiles stamped ahead of this clock count too),
/// near enough to stay a valid time everywhere.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);

pub fn range(start: i64, end: i64) -> Result<Range, ConnectError> {
    if start < 0 || end < 0 {
        return Err(ConnectError::invalid(format!(
            "start and end are milliseconds since the epoch, got start={start} end={end}"
        )));
    }
    if end != 0 && start > end {
        return Err(ConnectError::invalid(format!(
            "the range ends before it starts (start={start} > end={end})"
        )));
    }
    let ms = |v: i64| UNIX_EPOCH + Duration::from_millis(v.unsigned_abs());
    let to = if end == 0 {
        SystemTime::now() + FOREVER
    } else {
        ms(end) + Duration::from_millis(1)
    };
    let end_ms = if end == 0 {
        to.duration_since(UNIX_EPOCH).map_or(i64::MAX, |d| {
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
        })
    } else {
        end
    };
    Ok(Range {
        from: ms(start),
        to,
        start_ms: start,
        end_ms,
    })
}

/// A profile type ID (or a bare name), with the labels Pyroscope gives its series.
pub fn profile_type(id: &str) -> Result<(ProfileType, SeriesType), ConnectError> {
    if id.is_empty() {
        return Err(ConnectError::invalid(
            "profile_typeID is required, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds",
        ));
    }
    let ty = ProfileType::parse(id).map_err(ConnectError::invalid)?;
    let full = ty.id();
    let parts: Vec<&str> = full.split(':').collect();
    let part = |i: usize| parts.get(i).copied().unwrap_or("").to_string();
    let series = SeriesType {
        name: part(0),
        sample_type: part(1),
        sample_unit: part(2),
        period_type: part(3),
        period_unit: part(4),
    };
    Ok((ty, series))
}

/// A selector, or invalid_argument saying where it is wrong.
pub fn selector(s: &str) -> Result<Selector, ConnectError> {
    Selector::parse(s).map_err(|e| ConnectError::invalid(format!("{e}: {s}")))
}

/// `label_selector` for series of type `ty`: matchers on the type's own labels
/// (`__profile_type__`, `__type__`...) are decided here against `ty`, since stored series do
/// not carry them; `None` when one of them excludes `ty` (nothing can match).
pub fn selector_for(
    label_selector: &str,
    ty: &SeriesType,
) -> Result<Option<Selector>, ConnectError> {
    let mut sel = selector(label_selector)?;
    let labels = ty.labels();
    let mut excluded = false;
    sel.matchers.retain(|m| {
        if !TYPE_LABELS.contains(&m.name.as_str()) {
            return true;
        }
        let value = labels
            .iter()
            .find(|(k, _)| *k == m.name)
            .map_or("", |(_, v)| v.as_str());
        excluded |= !m.matches(value);
        false
    });
    Ok((!excluded).then_some(sel))
}

/// The query a select request stands for; `None` when its selector excludes the type.
pub fn query(
    profile_type_id: &str,
    label_selector: &str,
    start: i64,
    end: i64,
) -> Result<Option<(Query, Range)>, ConnectError> {
    let (ty, series_type) = profile_type(profile_type_id)?;
    let range = range(start, end)?;
    let Some(selector) = selector_for(label_selector, &series_type)? else {
        return Ok(None);
    };
    Ok(Some((
        Query {
            selector,
            profile_type: ty,
            from: range.from,
            to: range.to,
            exclude_straddling: false,
        },
        range,
    )))
}

/// Selectors of a `matchers` list (any may match); empty means every series.
pub fn selectors(matchers: &[String]) -> Result<Vec<Selector>, ConnectError> {
    matchers.iter().map(|m| selector(m)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_include_both_ends_and_zero_is_open() {
        let r = range(1_000, 2_000).expect("valid");
        assert_eq!(r.from, UNIX_EPOCH + Duration::from_millis(1_000));
        assert_eq!(r.to, UNIX_EPOCH + Duration::from_millis(2_001));
        let open = range(0, 0).expect("valid");
        assert_eq!(open.from, UNIX_EPOCH);
        // Open means open: a profile stamped a year ahead (a skewed clock) is still inside.
        assert!(open.to > SystemTime::now() + Duration::from_secs(365 * 86_400));
        assert_eq!(open.start_ms, 0);
        let from_start = range(0, 2_000).expect("valid");
        assert_eq!(from_start.from, UNIX_EPOCH);
        assert_eq!(from_start.end_ms, 2_000);
        assert!(range(5, 4).is_err());
        assert!(range(-1, 4).is_err());
    }

    #[test]
    fn type_matchers_are_decided_against_the_requested_type() {
        let (_, cpu) = profile_type("process_cpu:cpu:nanoseconds:cpu:nanoseconds").expect("id");
        type Case = (&'static str, Option<&'static str>);
        let cases: [Case; 5] = [
            (r#"{service_name="a"}"#, Some(r#"{service_name="a"}"#)),
            (
                r#"{__profile_type__="process_cpu:cpu:nanoseconds:cpu:nanoseconds", service_name="a"}"#,
                Some(r#"{service_name="a"}"#),
            ),
            (r#"{__type__="samples"}"#, None),
            (r#"{__unit__=~"nano.*"}"#, Some("{}")),
            ("", Some("{}")),
        ];
        for (given, want) in cases {
            let got = selector_for(given, &cpu)
                .expect(given)
                .map(|s| s.to_string());
            assert_eq!(got.as_deref(), want, "{given}");
        }
        assert!(selector_for("{service_name=", &cpu).is_err());
        assert!(profile_type("").is_err());
        assert!(profile_type("a:b").is_err());
        let (_, bare) = profile_type("memory").expect("name");
        assert_eq!(bare.id(), "memory:inuse_space:bytes:space:bytes");
    }
}
