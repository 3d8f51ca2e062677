//! What every profile source answers.

use std::time::SystemTime;

use crate::pprof::proto::Profile;

use super::selector::Selector;

/// A profile type as Pyroscope names it: `process_cpu:cpu:nanoseconds:cpu:nanoseconds`, or
/// just the `__name__` (`process_cpu`), in which case the sample type is chosen by
/// [`ProfileType::default_sample_type`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileType {
    /// `__name__` of the series (`process_cpu`, `memory`, `goroutine`...).
    pub name: String,
    /// `(type, unit)` of the sample type to keep, when given.
    pub sample_type: Option<(String, String)>,
    /// The full ID when one was given (sent to backends as is).
    pub full_id: Option<String>,
}

impl ProfileType {
    /// Parses `name` or `name:type:unit:period_type:period_unit`.
    pub fn parse(s: &str) -> Result<ProfileType, String> {
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            [name] if !name.is_empty() => Ok(ProfileType {
                name: name.to_string(),
                sample_type: None,
                full_id: None,
            }),
            [name, ty, unit, _, _] if !name.is_empty() => Ok(ProfileType {
                name: name.to_string(),
                sample_type: Some((ty.to_string(), unit.to_string())),
                full_id: Some(s.to_string()),
            }),
            _ => Err(format!(
                "invalid profile type {s:?}: expected NAME or NAME:TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds"
            )),
        }
    }

    /// The sample type a bare name means: what Pyroscope's UI shows for it.
    pub fn default_sample_type(&self) -> (&'static str, &'static str) {
        match self.name.as_str() {
            "process_cpu" => ("cpu", "nanoseconds"),
            "memory" => ("inuse_space", "bytes"),
            "goroutine" | "goroutines" => ("goroutine", "count"),
            "mutex" => ("delay", "nanoseconds"),
            "block" => ("delay", "nanoseconds"),
            _ => ("", ""),
        }
    }

    /// The sample type to keep: the given one, else the default for the name.
    pub fn sample_type(&self) -> (String, String) {
        match &self.sample_type {
            Some((t, u)) => (t.clone(), u.clone()),
            None => {
                let (t, u) = self.default_sample_type();
                (t.to_string(), u.to_string())
            }
        }
    }

    /// Pyroscope's profile type ID (`process_cpu:cpu:nanoseconds:cpu:nanoseconds`).
    pub fn id(&self) -> String {
        if let Some(id) = &self.full_id {
            return id.clone();
        }
        let (t, u) = self.sample_type();
        let (pt, pu) = match self.name.as_str() {
            "process_cpu" => ("cpu", "nanoseconds"),
            "memory" => ("space", "bytes"),
            "goroutine" | "goroutines" => ("goroutine", "count"),
            "mutex" | "block" => ("contentions", "count"),
            _ => (t.as_str(), u.as_str()),
        };
        format!("{}:{t}:{u}:{pt}:{pu}", self.name)
    }
}

/// One query: which series, which type, which time range (inclusive start, exclusive end).
#[derive(Clone, Debug)]
pub struct Query {
    pub selector: Selector,
    pub profile_type: ProfileType,
    pub from: SystemTime,
    pub to: SystemTime,
    /// Leave out profiles that started before `from`: they straddle the range's start and
    /// would mix in what came before (the workload before a mark), so a diff's windows set it.
    /// Without it a range holds every profile stored in it, so adjacent ranges (a client's
    /// 24 h chunks) split the profiles between them and lose none.
    pub exclude_straddling: bool,
}

/// The merged answer to a query.
#[derive(Clone, Debug)]
pub struct Merged {
    /// All matching profiles merged into one, reduced to the query's sample type.
    pub profile: Profile,
    /// How many profiles were merged.
    pub profiles: usize,
    /// How many distinct series (label sets: scraped instances) contributed.
    pub series: usize,
}

/// An event recorded while profiling ("upgrade to 0.101.0 started").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub name: String,
    pub at: SystemTime,
}

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    Store(String),
    #[error("querying {url}: {message}")]
    Remote { url: String, message: String },
    #[error("merging profiles: {0}")]
    Merge(String),
    #[error("{0}")]
    Unsupported(String),
    /// Nothing matched: the message names the query and the range, with "did you mean" hints.
    #[error("{0}")]
    NoMatch(String),
}

/// A place profiles can be read back from.
pub trait ProfileSource {
    /// Merges every profile matching `query` (None when nothing matched).
    fn select_merge(
        &self,
        query: &Query,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<Merged>, QueryError>;

    /// Marks recorded between `from` and `to`, oldest first.
    fn marks(&self, from: SystemTime, to: SystemTime) -> Result<Vec<Mark>, QueryError>;

    /// The label sets (sorted, `__name__` included) of the series `selector` selects that
    /// have profiles between `from` and `to`, in no particular order.
    fn series(
        &self,
        selector: &Selector,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<super::catalog::LabelSet>, QueryError>;
}

/// Runs `query` and insists on an answer: when nothing matched, [`QueryError::NoMatch`] says
/// which type, selector and range (`what` names the query, e.g. "the before window") with
/// hints from [`super::catalog::explain_no_match`]. What `scraper query`, `pgo` and `diff`
/// and the explorer's endpoints share.
pub fn select_required(
    source: &dyn ProfileSource,
    query: &Query,
    what: &str,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Merged, QueryError> {
    if let Some(merged) = source.select_merge(query, progress)? {
        return Ok(merged);
    }
    let mut message = format!(
        "no {} profiles match {} in {what} ({}..{})",
        query.profile_type.name,
        query.selector,
        crate::gocompat::time::rfc3339_millis(query.from),
        crate::gocompat::time::rfc3339_millis(query.to),
    );
    // The hint is best effort: a source that cannot list its series (a backend refusing
    // `Series`) still gets the plain message.
    match source.series(&Selector::default(), query.from, query.to) {
        Ok(all) => {
            for hint in super::catalog::explain_no_match(&query.selector, &query.profile_type, &all)
            {
                message.push_str("; ");
                message.push_str(&hint);
            }
        }
        Err(e) => tracing::debug!(error = %e, "listing series for a hint failed"),
    }
    Err(QueryError::NoMatch(message))
}

/// Keeps only the sample type `ty` of `profile` (values of the other types dropped), so that
/// profiles of different producers (Go's `samples,cpu` and eBPF's `cpu`) merge. Errors name
/// the types the profile has.
pub fn reduce_to(mut profile: Profile, ty: &ProfileType) -> Result<Profile, QueryError> {
    let (want_type, want_unit) = ty.sample_type();
    let s = |i: i64| {
        profile
            .string_table
            .get(usize::try_from(i).unwrap_or(usize::MAX))
            .map_or("", String::as_str)
    };
    let idx = profile.sample_type.iter().position(|vt| {
        s(vt.r#type) == want_type && (want_unit.is_empty() || s(vt.unit) == want_unit)
    });
    let Some(idx) = idx else {
        let have: Vec<String> = profile
            .sample_type
            .iter()
            .map(|vt| format!("{}/{}", s(vt.r#type), s(vt.unit)))
            .collect();
        return Err(QueryError::Merge(format!(
            "profile has no {want_type}/{want_unit} samples (it has {})",
            have.join(", ")
        )));
    };
    let kept = profile.sample_type[idx];
    profile.sample_type = vec![kept];
    profile.default_sample_type = 0;
    for sample in &mut profile.sample {
        let v = sample.value.get(idx).copied().unwrap_or(0);
        sample.value = vec![v];
    }
    profile.sample.retain(|s| s.value[0] != 0);
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_types_parse_as_pyroscope_names_them() {
        let full = ProfileType::parse("process_cpu:cpu:nanoseconds:cpu:nanoseconds").expect("id");
        assert_eq!(full.name, "process_cpu");
        assert_eq!(full.id(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
        let short = ProfileType::parse("process_cpu").expect("name");
        assert_eq!(short.sample_type(), ("cpu".into(), "nanoseconds".into()));
        assert_eq!(short.id(), full.id());
        assert_eq!(
            ProfileType::parse("memory").expect("name").id(),
            "memory:inuse_space:bytes:space:bytes"
        );
        assert!(ProfileType::parse("a:b").is_err());
        assert!(ProfileType::parse("").is_err());
    }
}
