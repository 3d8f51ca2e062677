//! A Pyroscope backend as a [`ProfileSource`], through its querier API
//! (`querier.v1.QuerierService`, pyroscope-protocol.md §7): Connect unary calls over HTTP with
//! binary protobuf bodies, the same transport `pyroscope.write` pushes with.
//!
//! * Merged profiles come from `SelectMergeStacktraces` with `format = PPROF`. A server that
//!   predates that format answers with a flame graph and no `pprof` field; then this source
//!   switches to the deprecated `SelectMergeProfile`, which returns the pprof itself, for the
//!   rest of its life (as `profilecli` does per query).
//! * The backend rejects ranges longer than `max_query_length` (24 h by default), so longer
//!   queries are sent as consecutive chunks of at most 24 h, merged here, with progress
//!   reported per chunk.
//! * Times are milliseconds and the backend's ranges include both ends, so a chunk
//!   `[from, to)` is asked for as `[from, to - 1 ms]`: a profile stamped exactly on a chunk
//!   boundary (common for `/ingest` data, which has second resolution) is counted once.
//! * `series` counts the distinct label sets `Series` reports for the selector and profile
//!   type over the range. `profiles` is 0: the querier API does not say how many profiles it
//!   merged.
//! * A backend has no marks: [`ProfileSource::marks`] returns none, so `--around-mark` needs
//!   the local store or marks given on the command line.
//!
//! The CLI is synchronous; each source owns a current-thread tokio runtime and blocks on it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message as _;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::catalog::LabelSet;
use super::selector::{MatchOp, Matcher, Selector};
use super::source::{Mark, Merged, ProfileSource, Query, QueryError};
use crate::httpclient::body::{ReadError, read_limited};
use crate::httpclient::{BasicAuth, HttpClient, HttpClientConfig};
use crate::pprof::proto::Profile;
use crate::protocols::pyroscope::wire::{CONTENT_TYPE_PROTO, classify_response, transport_error};
use crate::syntax::types::SecretString;

pub const SELECT_MERGE_STACKTRACES_PATH: &str = "/querier.v1.QuerierService/SelectMergeStacktraces";
pub const SELECT_MERGE_PROFILE_PATH: &str = "/querier.v1.QuerierService/SelectMergeProfile";
pub const SERIES_PATH: &str = "/querier.v1.QuerierService/Series";

/// Longest range sent in one request: the backend's default `max_query_length`.
pub const MAX_CHUNK: Duration = Duration::from_secs(24 * 3600);

/// The label Pyroscope files every series' profile type ID under.
const PROFILE_TYPE_LABEL: &str = "__profile_type__";
/// Merged profiles of a whole window can be large; this only stops a runaway response.
const MAX_PROFILE_BYTES: usize = 1 << 30;

/// The querier messages this source sends and reads, generated from proto/querier/v1.
mod wire {
    pub use crate::protocols::pyroscope::proto::querier::v1::{
        ProfileFormat, SelectMergeProfileRequest, SelectMergeStacktracesRequest,
        SelectMergeStacktracesResponse, SeriesRequest, SeriesResponse,
    };
}

/// How to reach the backend; what `pyroscope.write` endpoints support, minus TLS client
/// settings and OAuth2.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteOptions {
    /// Sent as `X-Scope-OrgID` (multi-tenant backends require it).
    pub tenant: Option<String>,
    /// `(user, password)` for HTTP basic auth (Grafana Cloud: stack user and token).
    pub basic_auth: Option<(String, String)>,
    /// `Authorization: Bearer <token>`. At most one of this and `basic_auth`.
    pub bearer_token: Option<String>,
    /// Extra headers, sent with every request.
    pub headers: Vec<(String, String)>,
    /// Per request (one chunk's select or series call); zero means none.
    pub timeout: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            tenant: None,
            basic_auth: None,
            bearer_token: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }
}

/// A Pyroscope backend's querier.
pub struct RemoteSource {
    base: String,
    client: HttpClient,
    timeout: Duration,
    /// Set once the server turned out not to know the pprof format.
    legacy: AtomicBool,
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for RemoteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSource")
            .field("url", &self.base)
            .finish_non_exhaustive()
    }
}

impl Drop for RemoteSource {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime; nothing of ours is
        // left running between calls, so there is nothing to wait for.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl RemoteSource {
    /// `url` is the backend's base URL, as configured for `pyroscope.write` (the RPC paths are
    /// appended to it).
    pub fn new(url: &str, options: RemoteOptions) -> Result<Self, QueryError> {
        let base = url.trim_end_matches('/').to_string();
        let fail = |message: String| QueryError::Remote {
            url: base.clone(),
            message,
        };
        match reqwest::Url::parse(&base) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            Ok(u) => {
                return Err(fail(format!(
                    "unsupported URL scheme {:?} (expected http or https)",
                    u.scheme()
                )));
            }
            Err(e) => return Err(fail(format!("invalid URL: {e}"))),
        }
        let config = http_config(&options);
        config.validate().map_err(&fail)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(format!("starting the HTTP runtime: {e}")))?;
        let client = {
            let _context = runtime.enter();
            HttpClient::new(&config, crate::httpclient::USER_AGENT)
                .map_err(|e| fail(e.to_string()))?
        };
        Ok(RemoteSource {
            base,
            client,
            timeout: options.timeout,
            legacy: AtomicBool::new(false),
            runtime: Some(runtime),
        })
    }

    /// The base URL requests go to.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// Runs the future `make` builds to completion on this source's runtime. From inside
    /// another runtime (where blocking that thread is not allowed) it runs on a helper thread.
    fn block_on<F, Fut>(&self, make: F) -> Result<Fut::Output, QueryError>
    where
        F: FnOnce() -> Fut + Send,
        Fut: Future,
        Fut::Output: Send,
    {
        let Some(rt) = self.runtime.as_ref() else {
            return Err(QueryError::Remote {
                url: self.base.clone(),
                message: "the source is shutting down".into(),
            });
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Ok(rt.block_on(make()));
        }
        std::thread::scope(|s| match s.spawn(|| rt.block_on(make())).join() {
            Ok(out) => Ok(out),
            Err(panic) => std::panic::resume_unwind(panic),
        })
    }

    /// One Connect unary call: the response body on success.
    async fn call(&self, path: &str, body: Vec<u8>) -> Result<bytes::Bytes, QueryError> {
        let url = format!("{}{path}", self.base);
        let fail = |message: String| QueryError::Remote {
            url: url.clone(),
            message,
        };
        let mut headers = HeaderMap::new();
        self.client
            .apply(&mut headers)
            .await
            .map_err(|e| fail(e.to_string()))?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_PROTO));
        headers.insert(
            HeaderName::from_static("connect-protocol-version"),
            HeaderValue::from_static("1"),
        );
        let mut request = self.client.client().post(&url);
        if !self.timeout.is_zero() {
            headers.insert(
                HeaderName::from_static("connect-timeout-ms"),
                HeaderValue::from(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)),
            );
            request = request.timeout(self.timeout);
        }
        let response = request
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| fail(transport_error(&e).to_string()))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match read_limited(response, MAX_PROFILE_BYTES).await {
            Ok(body) => body,
            Err(ReadError::Transport(e)) => return Err(fail(transport_error(&e).to_string())),
            Err(e) => return Err(fail(e.to_string())),
        };
        classify_response(status, content_type.as_deref(), &body)
            .map_err(|e| fail(e.to_string()))?;
        Ok(body)
    }

    /// The merged profile of one chunk (`None`: nothing matched).
    async fn select_chunk(
        &self,
        profile_type_id: &str,
        selector: &str,
        (start, end): (i64, i64),
    ) -> Result<Option<Profile>, QueryError> {
        if !self.legacy.load(Ordering::Relaxed) {
            let request = wire::SelectMergeStacktracesRequest {
                profile_type_id: profile_type_id.to_string(),
                label_selector: selector.to_string(),
                start,
                end,
                format: wire::ProfileFormat::Pprof as i32,
                ..Default::default()
            };
            let body = self
                .call(SELECT_MERGE_STACKTRACES_PATH, request.encode_to_vec())
                .await?;
            let response = wire::SelectMergeStacktracesResponse::decode(body)
                .map_err(|e| self.bad_response(SELECT_MERGE_STACKTRACES_PATH, e.to_string()))?;
            match response.pprof {
                Some(pprof) => {
                    return decode_profile(&pprof.profile)
                        .map_err(|e| self.bad_response(SELECT_MERGE_STACKTRACES_PATH, e));
                }
                None => {
                    tracing::info!(url = %self.base, "the server does not return pprof from SelectMergeStacktraces; using SelectMergeProfile");
                    self.legacy.store(true, Ordering::Relaxed);
                }
            }
        }
        let request = wire::SelectMergeProfileRequest {
            profile_type_id: profile_type_id.to_string(),
            label_selector: selector.to_string(),
            start,
            end,
            ..Default::default()
        };
        let body = self
            .call(SELECT_MERGE_PROFILE_PATH, request.encode_to_vec())
            .await?;
        decode_profile(&body).map_err(|e| self.bad_response(SELECT_MERGE_PROFILE_PATH, e))
    }

    /// The label sets of the series matching `matcher` in one chunk, labels sorted.
    async fn series_chunk(
        &self,
        matchers: &[String],
        (start, end): (i64, i64),
    ) -> Result<Vec<Vec<(String, String)>>, QueryError> {
        let request = wire::SeriesRequest {
            matchers: matchers.to_vec(),
            label_names: Vec::new(),
            start,
            end,
        };
        let body = self.call(SERIES_PATH, request.encode_to_vec()).await?;
        let response = wire::SeriesResponse::decode(body)
            .map_err(|e| self.bad_response(SERIES_PATH, e.to_string()))?;
        Ok(response
            .labels_set
            .into_iter()
            .map(|set| {
                let mut labels: Vec<(String, String)> =
                    set.labels.into_iter().map(|l| (l.name, l.value)).collect();
                labels.sort();
                labels
            })
            .collect())
    }

    fn bad_response(&self, path: &str, message: String) -> QueryError {
        QueryError::Remote {
            url: format!("{}{path}", self.base),
            message: format!("invalid response: {message}"),
        }
    }
}

/// The HTTP client settings `options` stand for.
fn http_config(options: &RemoteOptions) -> HttpClientConfig {
    let mut config = HttpClientConfig::default();
    if let Some((username, password)) = &options.basic_auth {
        config.basic_auth = Some(BasicAuth {
            username: username.clone(),
            password: SecretString::new(password.clone()),
            password_file: String::new(),
        });
    }
    if let Some(token) = &options.bearer_token {
        config.bearer_token = SecretString::new(token.clone());
    }
    let mut headers: BTreeMap<String, Vec<SecretString>> = BTreeMap::new();
    for (name, value) in &options.headers {
        headers
            .entry(name.clone())
            .or_default()
            .push(SecretString::new(value.clone()));
    }
    if let Some(tenant) = &options.tenant {
        // The dedicated option wins over a header of the same name.
        headers.retain(|name, _| !name.eq_ignore_ascii_case("x-scope-orgid"));
        headers.insert(
            "X-Scope-OrgID".to_string(),
            vec![SecretString::new(tenant.clone())],
        );
    }
    config.http_headers = headers;
    config
}

/// A `google.v1.Profile`, gzipped or not; `None` for the empty profile the backend returns
/// when nothing matched.
fn decode_profile(bytes: &[u8]) -> Result<Option<Profile>, String> {
    let limits = crate::pprof::Limits {
        max_decompressed_bytes: MAX_PROFILE_BYTES,
    };
    let unzipped;
    let raw = if crate::pprof::codec::is_gzip(bytes) {
        unzipped = crate::pprof::gunzip(bytes, &limits).map_err(|e| e.to_string())?;
        unzipped.as_slice()
    } else {
        bytes
    };
    let profile = Profile::decode(raw).map_err(|e| format!("malformed profile: {e}"))?;
    if profile.sample.is_empty() {
        return Ok(None);
    }
    crate::pprof::validate(&profile).map_err(|e| e.to_string())?;
    Ok(Some(profile))
}

/// Milliseconds since the epoch, rounded down (`ceil`: up); 0 before the epoch.
fn millis(t: SystemTime, ceil: bool) -> i64 {
    let Ok(d) = t.duration_since(UNIX_EPOCH) else {
        return 0;
    };
    let ms = d.as_millis() + u128::from(ceil && d.subsec_nanos() % 1_000_000 != 0);
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// `[from, to)` as request ranges `(start, end)` in ms, both inclusive, each at most
/// [`MAX_CHUNK`] long.
fn chunks(from: SystemTime, to: SystemTime) -> Vec<(i64, i64)> {
    // The backend reads a start of 0 as "no range given".
    let from = millis(from, false).max(1);
    let to = millis(to, true);
    let step = i64::try_from(MAX_CHUNK.as_millis()).unwrap_or(i64::MAX);
    let mut out = Vec::new();
    let mut start = from;
    while start < to {
        let end = start.saturating_add(step).min(to);
        out.push((start, end - 1));
        start = end;
    }
    out
}

/// `p` reduced to the sample type `(ty, unit)`, when it has others too.
fn keep_sample_type(mut p: Profile, (ty, unit): (&str, &str)) -> Profile {
    if p.sample_type.len() <= 1 {
        return p;
    }
    let s = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map_or("", String::as_str)
    };
    let Some(index) = p
        .sample_type
        .iter()
        .position(|t| s(t.r#type) == ty && s(t.unit) == unit)
    else {
        return p;
    };
    p.sample_type = vec![p.sample_type[index]];
    for sample in &mut p.sample {
        sample.value = vec![sample.value.get(index).copied().unwrap_or(0)];
    }
    p
}

impl ProfileSource for RemoteSource {
    fn select_merge(
        &self,
        query: &Query,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<Merged>, QueryError> {
        let type_id = query.profile_type.id();
        let selector = query.selector.to_string();
        let mut with_type: Selector = query.selector.clone();
        with_type.matchers.push(
            Matcher::new(PROFILE_TYPE_LABEL, MatchOp::Eq, &type_id)
                .map_err(QueryError::Unsupported)?,
        );
        let series_matcher = with_type.to_string();

        let ranges = chunks(query.from, query.to);
        let mut profiles = Vec::new();
        let mut series: HashSet<Vec<(String, String)>> = HashSet::new();
        let mut series_known = true;
        for (i, &range) in ranges.iter().enumerate() {
            let (type_id, selector, series_matcher) = (&type_id, &selector, &series_matcher);
            let (profile, labels) = self.block_on(move || async move {
                let Some(profile) = self.select_chunk(type_id, selector, range).await? else {
                    return Ok::<_, QueryError>((None, None));
                };
                // The count is informational: a backend (or proxy) refusing `Series` should
                // not cost the profile.
                let labels = match self
                    .series_chunk(std::slice::from_ref(series_matcher), range)
                    .await
                {
                    Ok(labels) => Some(labels),
                    Err(e) => {
                        tracing::warn!(error = %e, "counting series failed");
                        None
                    }
                };
                Ok((Some(profile), labels))
            })??;
            if let Some(p) = profile {
                profiles.push(p);
                match labels {
                    Some(labels) => series.extend(labels),
                    None => series_known = false,
                }
            }
            progress(i + 1, ranges.len());
        }
        if profiles.is_empty() {
            return Ok(None);
        }
        let profile = if profiles.len() == 1 {
            profiles.swap_remove(0)
        } else {
            crate::pprof::merge(&profiles).map_err(|e| QueryError::Merge(e.to_string()))?
        };
        let (ty, unit) = query.profile_type.sample_type();
        Ok(Some(Merged {
            profile: keep_sample_type(profile, (&ty, &unit)),
            profiles: 0,
            series: if series_known { series.len() } else { 0 },
        }))
    }

    /// `Series` over the range in 24 h chunks, as queries are; `{}` is sent as no matcher at
    /// all, which the querier reads as "every series".
    fn series(
        &self,
        selector: &Selector,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<LabelSet>, QueryError> {
        let matchers: Vec<String> = if selector.matchers.is_empty() {
            Vec::new()
        } else {
            vec![selector.to_string()]
        };
        let mut out: BTreeSet<LabelSet> = BTreeSet::new();
        for range in chunks(from, to) {
            let matchers = &matchers;
            out.extend(
                self.block_on(move || async move { self.series_chunk(matchers, range).await })??,
            );
        }
        Ok(out.into_iter().collect())
    }

    /// Always empty: Pyroscope has no marks.
    fn marks(&self, _from: SystemTime, _to: SystemTime) -> Result<Vec<Mark>, QueryError> {
        Ok(Vec::new())
    }
}

/// Not an API: the entry point of the `push_response` fuzz target (fuzz/). Reads `body` as
/// every querier response this source decodes (`SelectMergeStacktraces`, `SelectMergeProfile`,
/// `Series`), then merges the profiles that decoded and reduces the result to `sample_type`,
/// as [`RemoteSource::select_merge`] does with its chunks.
#[doc(hidden)]
pub fn fuzz_decode_responses(
    body: &[u8],
    sample_type: (&str, &str),
) -> Result<Option<Profile>, String> {
    let _ = wire::SeriesResponse::decode(body);
    let stacktraces = wire::SelectMergeStacktracesResponse::decode(body)
        .map_err(|e| e.to_string())
        .and_then(|r| r.pprof.map_or(Ok(None), |p| decode_profile(&p.profile)));
    let mut profiles: Vec<Profile> = [stacktraces, decode_profile(body)]
        .into_iter()
        .filter_map(|r| r.ok().flatten())
        .collect();
    let profile = match profiles.len() {
        0 => return Ok(None),
        1 => profiles.swap_remove(0),
        _ => crate::pprof::merge(&profiles).map_err(|e| e.to_string())?,
    };
    Ok(Some(keep_sample_type(profile, sample_type)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn long_ranges_are_cut_into_days_without_overlap() {
        const DAY: i64 = 86_400_000;
        let t0: i64 = 1_700_000_000_000;
        type Case = (SystemTime, SystemTime, Vec<(i64, i64)>);
        let cases: Vec<Case> = vec![
            (at(t0 as u64), at(t0 as u64), vec![]),
            (at(t0 as u64 + 5), at(t0 as u64), vec![]),
            (
                at(t0 as u64),
                at(t0 as u64 + 3_600_000),
                vec![(t0, t0 + 3_600_000 - 1)],
            ),
            (
                at(t0 as u64),
                at((t0 + DAY) as u64),
                vec![(t0, t0 + DAY - 1)],
            ),
            (
                at(t0 as u64),
                at((t0 + 3 * DAY) as u64),
                vec![
                    (t0, t0 + DAY - 1),
                    (t0 + DAY, t0 + 2 * DAY - 1),
                    (t0 + 2 * DAY, t0 + 3 * DAY - 1),
                ],
            ),
            (
                at(t0 as u64),
                at((t0 + DAY + 1) as u64),
                vec![(t0, t0 + DAY - 1), (t0 + DAY, t0 + DAY)],
            ),
            // Sub-millisecond bounds: the start rounds down, the (exclusive) end up.
            (
                at(t0 as u64) + Duration::from_micros(300),
                at(t0 as u64 + 10) + Duration::from_micros(1),
                vec![(t0, t0 + 10)],
            ),
            (UNIX_EPOCH, at(10), vec![(1, 9)]),
        ];
        for (from, to, want) in cases {
            let got = chunks(from, to);
            assert_eq!(got, want, "{from:?}..{to:?}");
            for (s, e) in got {
                assert!(e >= s && e - s < DAY);
            }
        }
    }

    #[test]
    fn options_become_http_client_settings() {
        let options = RemoteOptions {
            tenant: Some("team-a".into()),
            basic_auth: Some(("user".into(), "pw".into())),
            bearer_token: None,
            headers: vec![
                ("x-scope-orgid".into(), "ignored".into()),
                ("X-Extra".into(), "1".into()),
                ("X-Extra".into(), "2".into()),
            ],
            timeout: Duration::from_secs(5),
        };
        let config = http_config(&options);
        config.validate().expect("valid");
        let headers: Vec<(String, Vec<String>)> = config
            .http_headers
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.iter().map(|s| s.expose().to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(
            headers,
            [
                (
                    "X-Extra".to_string(),
                    vec!["1".to_string(), "2".to_string()]
                ),
                ("X-Scope-OrgID".to_string(), vec!["team-a".to_string()]),
            ]
        );
        assert_eq!(
            config.basic_auth.as_ref().map(|b| b.username.as_str()),
            Some("user")
        );

        let both = RemoteOptions {
            basic_auth: Some(("u".into(), "p".into())),
            bearer_token: Some("t".into()),
            ..RemoteOptions::default()
        };
        let err = RemoteSource::new("http://localhost:4040", both).expect_err("two auths");
        assert!(err.to_string().contains("at most one of"), "{err}");
        for bad in ["localhost:4040", "ftp://x", "not a url"] {
            let err = RemoteSource::new(bad, RemoteOptions::default()).expect_err(bad);
            assert!(matches!(err, QueryError::Remote { .. }), "{bad}: {err}");
        }
        let ok =
            RemoteSource::new("http://localhost:4040/", RemoteOptions::default()).expect("valid");
        assert_eq!(ok.url(), "http://localhost:4040");
    }

    #[test]
    fn responses_decode_gzipped_plain_and_empty() {
        use crate::pprof::proto::{Sample, ValueType};
        let p = Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample: vec![Sample {
                location_id: vec![],
                value: vec![7],
                label: vec![],
            }],
            string_table: vec!["".into(), "cpu".into(), "nanoseconds".into()],
            ..Profile::default()
        };
        let raw = p.encode_to_vec();
        assert_eq!(decode_profile(&raw).expect("plain"), Some(p.clone()));
        assert_eq!(
            decode_profile(&crate::pprof::gzip(&raw, 1)).expect("gzip"),
            Some(p.clone())
        );
        assert_eq!(decode_profile(&[]).expect("empty"), None);
        let mut invalid = p;
        invalid.string_table.clear();
        assert!(decode_profile(&invalid.encode_to_vec()).is_err());
        assert!(decode_profile(&[0xff, 0xff]).is_err());
    }

    #[test]
    fn reduces_to_the_query_sample_type() {
        use crate::pprof::proto::{Sample, ValueType};
        let p = Profile {
            sample_type: vec![
                ValueType { r#type: 1, unit: 2 },
                ValueType { r#type: 3, unit: 4 },
            ],
            sample: vec![Sample {
                location_id: vec![],
                value: vec![1, 2],
                label: vec![],
            }],
            string_table: ["", "samples", "count", "cpu", "nanoseconds"]
                .map(String::from)
                .to_vec(),
            ..Profile::default()
        };
        let cpu = keep_sample_type(p.clone(), ("cpu", "nanoseconds"));
        assert_eq!(cpu.sample_type, [ValueType { r#type: 3, unit: 4 }]);
        assert_eq!(cpu.sample[0].value, [2]);
        assert_eq!(keep_sample_type(p.clone(), ("x", "y")), p);
    }
}
