//! From a discovered target (a label set) to the scrape targets of each enabled profile type:
//! final labels, URL and identity, following Alloy's `pyroscope.scrape` (spec §2.3).
//!
//! Every quirk the spec lists, and what we do about it:
//!
//! | Alloy quirk | here |
//! |---|---|
//! | a target without address / with a bad scheme fails its whole target group | **fixed**: reported on its own ([`plan`]'s `invalid`), the others are scraped |
//! | with `params` set, `seconds` is appended to a map shared between targets (`seconds=14&seconds=14`) | **fixed**: `seconds` appears once |
//! | input targets are collapsed by their non-`__meta_*` labels (clustering code path, even with clustering off) | **fixed**: only scrape targets with the same identity (public labels + URL) are one loop |
//! | a target carrying `__profile_path__` gives every enabled type the same URL; `__name__` is private, so they collide and a random one survives | **fixed**: the collision is resolved deterministically (first type by name wins) and reported ([`plan`]'s `collisions`) |
//! | "invalid scheme" names the configured `scheme`, not the target's `__scheme__` | **fixed**: names the scheme that was used |
//! | `delta_profiling_duration = "14s"` written explicitly still means `seconds = interval - 1` | **copied** (the config means the same in both) |
//! | no `job` label unless `job_name` is set (docs say it defaults to the component id) | **copied** (the code's behaviour) |
//! | godeltaprof profiles are sent without `__delta__="false"` | **fixed**: they carry it ([`ScrapeTarget::already_delta`]) |
//! | `profile.memory { delta = true }` asks Go for a delta (`seconds=`) *and* subtracts client-side again | **fixed**: a `seconds` request is already a delta; no client delta, `__delta__="false"` |
//! | `service_name` is inferred from the labels before the defaults (instance, job...) are set | **copied** (it only reads `__meta_*` labels, which are unchanged) |

use std::collections::BTreeMap;
use std::time::Duration;

use super::profiling::ProfileType;

pub type Labels = BTreeMap<String, String>;

pub const ADDRESS: &str = "__address__";
pub const SCHEME: &str = "__scheme__";
pub const NAME: &str = "__name__";
pub const PROFILE_PATH: &str = "__profile_path__";
pub const PROFILE_PATH_PREFIX: &str = "__profile_path_prefix__";
pub const PARAM_PREFIX: &str = "__param_";
pub const JOB: &str = "job";
pub const INSTANCE: &str = "instance";
pub const SERVICE_NAME: &str = "service_name";
pub const DELTA: &str = "__delta__";
pub const SCOPE_NAME: &str = "otel.scope.name";
pub const SCOPE_VERSION: &str = "otel.scope.version";
/// Alloy's scope name, kept so that series keep the label set they had when scraped by Alloy.
pub const SCOPE_NAME_VALUE: &str = "com.grafana.alloy/pyroscope.scrape";

/// Go's cumulative profiles, which need a delta between scrapes.
pub fn is_cumulative(profile_name: &str) -> bool {
    matches!(profile_name, "memory" | "mutex" | "block")
}

/// The component arguments target building depends on.
#[derive(Debug, Clone, Default)]
pub struct TargetSettings {
    pub job_name: String,
    pub scheme: String,
    pub params: BTreeMap<String, Vec<String>>,
    pub path_prefix: String,
    /// The `seconds` value for delta (CPU-like) types; see [`seconds_param`].
    pub seconds: u64,
}

/// One thing to scrape: a target and a profile type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeTarget {
    /// Every label, private ones included; `pyroscope.write` strips what the backend must not see.
    pub labels: Labels,
    pub url: String,
    /// `__name__` as sent: godeltaprof types are renamed to memory/mutex/block.
    pub profile_name: String,
    /// The target computes deltas itself (godeltaprof).
    pub godeltaprof: bool,
    /// The request carries `seconds=N`, so it takes about N seconds to answer.
    pub has_seconds: bool,
    /// Identity: loops (and their delta state) survive a republish while this stays the same.
    pub hash: u64,
}

impl ScrapeTarget {
    /// Whether the scraper subtracts the previous scrape: Go's cumulative profiles (memory,
    /// mutex, block), unless the target already returns a delta (godeltaprof, or a request
    /// with `seconds=`, which Go's handler answers with the delta over that window).
    pub fn client_delta(&self) -> bool {
        !self.godeltaprof && !self.has_seconds && is_cumulative(&self.profile_name)
    }

    /// Whether what is forwarded is a delta of a cumulative profile, and so carries
    /// `__delta__="false"` (the backend must not subtract again).
    pub fn already_delta(&self) -> bool {
        is_cumulative(&self.profile_name)
            && (self.godeltaprof || self.has_seconds || self.client_delta())
    }

    /// The labels every forwarded profile of this target carries: all target labels, plus
    /// `__delta__="false"` for deltas and the two `otel.scope.*` labels Alloy adds (each only
    /// if the target does not set it).
    pub fn forward_labels(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if self.already_delta() {
            out.retain(|(k, _)| k != DELTA);
            out.push((DELTA.to_string(), "false".to_string()));
        }
        for (k, v) in [
            (SCOPE_NAME, SCOPE_NAME_VALUE),
            (SCOPE_VERSION, env!("CARGO_PKG_VERSION")),
        ] {
            if !self.labels.contains_key(k) {
                out.push((k.to_string(), v.to_string()));
            }
        }
        out
    }

    /// HTTP timeout: a `seconds` request is expected to take most of an interval.
    pub fn timeout(&self, scrape_timeout: Duration, scrape_interval: Duration) -> Duration {
        if self.has_seconds {
            (scrape_timeout + scrape_interval).saturating_sub(Duration::from_secs(1))
        } else {
            scrape_timeout
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("no address")]
    NoAddress,
    #[error("invalid scheme: {0:?}")]
    InvalidScheme(String),
    #[error("{0:?} is not a valid hostname")]
    InvalidAddress(String),
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
}

/// Alloy's `seconds` value: interval − 1 s, unless `delta_profiling_duration` differs from its
/// default (14 s), in which case that. (Alloy compares with the default value, not with "was
/// it set", so writing the default explicitly still gives interval − 1 s; we keep that.)
pub fn seconds_param(scrape_interval: Duration, delta_profiling_duration: Duration) -> u64 {
    const DEFAULT_DELTA: Duration = Duration::from_secs(14);
    if delta_profiling_duration != DEFAULT_DELTA {
        delta_profiling_duration.as_secs()
    } else {
        scrape_interval.as_secs().saturating_sub(1)
    }
}

/// The scrape targets of one discovered target: one per enabled profile type.
pub fn targets_for(
    base: &Labels,
    types: &BTreeMap<String, ProfileType>,
    settings: &TargetSettings,
) -> Result<Vec<ScrapeTarget>, TargetError> {
    let mut out = Vec::new();
    for profile in types.values().filter(|t| t.enabled) {
        let mut labels = base.clone();
        set_if_empty(&mut labels, PROFILE_PATH, &profile.path);
        set_if_empty(&mut labels, NAME, &profile.name);
        set_if_empty(&mut labels, PROFILE_PATH_PREFIX, &settings.path_prefix);
        populate(&mut labels, base, settings)?;

        // A target may override `__name__`; the `seconds` decision follows the final name.
        let name = labels.get(NAME).cloned().unwrap_or_default();
        let has_seconds = types.get(&name).is_some_and(|t| t.delta);
        let mut params = settings.params.clone();
        if has_seconds {
            params.insert("seconds".to_string(), vec![settings.seconds.to_string()]);
        }
        let (profile_name, godeltaprof) = match name.as_str() {
            "godeltaprof_memory" => ("memory".to_string(), true),
            "godeltaprof_mutex" => ("mutex".to_string(), true),
            "godeltaprof_block" => ("block".to_string(), true),
            _ => (name, false),
        };
        if godeltaprof {
            labels.insert(NAME.to_string(), profile_name.clone());
        }
        let url = url_for(&labels, &params);
        let hash = identity(&labels, &url);
        out.push(ScrapeTarget {
            labels,
            url,
            profile_name,
            godeltaprof,
            has_seconds,
            hash,
        });
    }
    Ok(out)
}

/// A discovered target that yields no scrape target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTarget {
    pub labels: Labels,
    pub error: TargetError,
}

/// Scrape targets of different profile types that ended up with the same identity (same URL
/// and public labels, e.g. a target carrying `__profile_path__`): only `kept` is scraped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    pub url: String,
    pub kept: String,
    pub dropped: Vec<String>,
}

/// Everything to scrape for a list of discovered targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Unique by [`ScrapeTarget::hash`], in input order (profile types by name within a target).
    pub targets: Vec<ScrapeTarget>,
    pub invalid: Vec<InvalidTarget>,
    pub collisions: Vec<Collision>,
    /// Scrape targets identical to an earlier one of the same profile type (discovered targets
    /// that differ only in private labels): scraping them again would send the same series twice.
    pub duplicates: usize,
}

/// The scrape targets of every discovered target. A discovered target that cannot be scraped is
/// listed in `invalid` without affecting the others.
pub fn plan(
    discovered: &[Labels],
    types: &BTreeMap<String, ProfileType>,
    settings: &TargetSettings,
) -> Plan {
    let mut out = Plan::default();
    let mut index: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for base in discovered {
        let targets = match targets_for(base, types, settings) {
            Ok(t) => t,
            Err(error) => {
                out.invalid.push(InvalidTarget {
                    labels: base.clone(),
                    error,
                });
                continue;
            }
        };
        for t in targets {
            match index.get(&t.hash) {
                None => {
                    index.insert(t.hash, out.targets.len());
                    out.targets.push(t);
                }
                Some(&i) => {
                    let kept = &out.targets[i];
                    let type_name =
                        |t: &ScrapeTarget| t.labels.get(NAME).cloned().unwrap_or_default();
                    if type_name(kept) == type_name(&t) {
                        out.duplicates += 1;
                        continue;
                    }
                    let url = kept.url.clone();
                    let kept_name = type_name(kept);
                    match out
                        .collisions
                        .iter_mut()
                        .find(|c| c.url == url && c.kept == kept_name)
                    {
                        Some(c) => c.dropped.push(type_name(&t)),
                        None => out.collisions.push(Collision {
                            url,
                            kept: kept_name,
                            dropped: vec![type_name(&t)],
                        }),
                    }
                }
            }
        }
    }
    out
}

/// Per-target label limits (the `label_limit`, `label_name_length_limit` and
/// `label_value_length_limit` arguments that Alloy declares but never implemented). 0 means no
/// limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LabelLimits {
    pub count: usize,
    pub name_length: usize,
    pub value_length: usize,
}

/// Checks the labels the backend would see (what `pyroscope.write` keeps: public labels,
/// `__name__` and `__delta__`, non-empty values) against `limits`.
pub fn check_label_limits(labels: &[(String, String)], limits: &LabelLimits) -> Result<(), String> {
    let sent = labels
        .iter()
        .filter(|(k, v)| !v.is_empty() && (!k.starts_with("__") || k == NAME || k == DELTA));
    let mut count = 0;
    for (k, v) in sent {
        count += 1;
        if limits.name_length > 0 && k.chars().count() > limits.name_length {
            return Err(format!(
                "label name {k:?} is longer than label_name_length_limit ({})",
                limits.name_length
            ));
        }
        if limits.value_length > 0 && v.chars().count() > limits.value_length {
            return Err(format!(
                "value of label {k:?} is longer than label_value_length_limit ({})",
                limits.value_length
            ));
        }
    }
    if limits.count > 0 && count > limits.count {
        return Err(format!(
            "{count} labels exceed label_limit ({})",
            limits.count
        ));
    }
    Ok(())
}

fn set_if_empty(labels: &mut Labels, name: &str, value: &str) {
    if value.is_empty() || labels.get(name).is_some_and(|v| !v.is_empty()) {
        return;
    }
    labels.insert(name.to_string(), value.to_string());
}

fn populate(labels: &mut Labels, base: &Labels, s: &TargetSettings) -> Result<(), TargetError> {
    set_if_empty(labels, JOB, &s.job_name);
    set_if_empty(labels, SCHEME, &s.scheme);
    for (k, v) in &s.params {
        if let Some(first) = v.first() {
            labels.insert(format!("{PARAM_PREFIX}{k}"), first.clone());
        }
    }
    let mut addr = labels.get(ADDRESS).cloned().unwrap_or_default();
    if addr.is_empty() {
        return Err(TargetError::NoAddress);
    }
    if split_host_port(&addr).is_err() && split_host_port(&format!("{addr}:1234")).is_ok() {
        match labels.get(SCHEME).map(String::as_str).unwrap_or("") {
            "http" | "" => addr.push_str(":80"),
            "https" => addr.push_str(":443"),
            other => return Err(TargetError::InvalidScheme(other.to_string())),
        }
        labels.insert(ADDRESS.to_string(), addr.clone());
    }
    if addr.contains('/') {
        return Err(TargetError::InvalidAddress(addr));
    }
    set_if_empty(labels, INSTANCE, &addr);
    if labels.get(SERVICE_NAME).is_none_or(|v| v.is_empty()) {
        labels.insert(SERVICE_NAME.to_string(), infer_service_name(base));
    }
    Ok(())
}

/// `service_name` for targets that do not set one, from the labels discovery gave them.
pub fn infer_service_name(labels: &Labels) -> String {
    crate::profiles::service_name::infer(|k| labels.get(k).map(String::as_str), "")
}

/// Go's `net.SplitHostPort`, which decides whether an address already has a port.
pub fn split_host_port(s: &str) -> Result<(&str, &str), &'static str> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']').ok_or("missing ']' in address")?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) if !p.contains(':') => p,
            Some(_) => return Err("too many colons in address"),
            None if after.is_empty() => return Err("missing port in address"),
            None => return Err("missing port in address"),
        };
        (&rest[..end], port)
    } else {
        let i = s.rfind(':').ok_or("missing port in address")?;
        let host = &s[..i];
        if host.contains(':') {
            return Err("too many colons in address");
        }
        (host, &s[i + 1..])
    };
    if host.contains('[') || host.contains(']') {
        return Err("unexpected bracket in address");
    }
    Ok((host, port))
}

/// `<scheme>://<address><prefix joined with path>?<query>`, the way Go's `url.URL.JoinPath` and
/// `url.Values.Encode` build it.
fn url_for(labels: &Labels, params: &BTreeMap<String, Vec<String>>) -> String {
    let get = |k: &str| labels.get(k).map(String::as_str).unwrap_or("");
    let mut query = params.clone();
    for (name, value) in labels.range(PARAM_PREFIX.to_string()..) {
        let Some(key) = name.strip_prefix(PARAM_PREFIX) else {
            break;
        };
        match query.get_mut(key) {
            Some(values) if !values.is_empty() => values[0] = value.clone(),
            _ => {
                query.insert(key.to_string(), vec![value.clone()]);
            }
        }
    }
    let path = join_path(&[get(PROFILE_PATH_PREFIX), get(PROFILE_PATH)]);
    let mut url = format!("{}://{}{}", get(SCHEME), get(ADDRESS), escape_path(&path));
    let encoded = encode_query(&query);
    if !encoded.is_empty() {
        url.push('?');
        url.push_str(&encoded);
    }
    url
}

/// Go's `path.Join` of the elements (cleaning `.`, `..` and repeated slashes), rooted, keeping a
/// trailing slash when the last element has one.
fn join_path(elems: &[&str]) -> String {
    let joined = elems
        .iter()
        .filter(|e| !e.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    if joined.is_empty() {
        return String::new();
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in joined.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if elems.last().is_some_and(|l| l.ends_with('/')) && !out.ends_with('/') {
        out.push('/');
    }
    out
}

fn escape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&b);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `url.Values.Encode`: keys sorted, `key=value` pairs joined by `&`, query-escaped.
fn encode_query(query: &BTreeMap<String, Vec<String>>) -> String {
    let mut out = String::new();
    for (k, values) in query {
        for v in values {
            if !out.is_empty() {
                out.push('&');
            }
            out.push_str(&query_escape(k));
            out.push('=');
            out.push_str(&query_escape(v));
        }
    }
    out
}

use crate::gocompat::query_escape;

/// FNV-1a over the public labels (names not starting with `__`) and the URL: what makes two
/// scrape targets the same loop.
fn identity(labels: &Labels, url: &str) -> u64 {
    const OFFSET: u64 = 0xcbf29ce484222325;
    const PRIME: u64 = 0x100000001b3;
    let mut h = OFFSET;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(PRIME);
        }
    };
    for (k, v) in labels.iter().filter(|(k, _)| !k.starts_with("__")) {
        feed(k.as_bytes());
        feed(&[0xff]);
        feed(v.as_bytes());
        feed(&[0xff]);
    }
    feed(url.as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::pyroscope::scrape::profiling::ProfilingConfig;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn settings() -> TargetSettings {
        TargetSettings {
            scheme: "http".into(),
            seconds: seconds_param(Duration::from_secs(15), Duration::from_secs(14)),
            ..Default::default()
        }
    }

    fn default_types() -> BTreeMap<String, ProfileType> {
        ProfilingConfig::default().all_types().expect("valid")
    }

    #[test]
    fn default_config_gives_five_urls() {
        let ts = targets_for(
            &labels(&[("__address__", "localhost:6060")]),
            &default_types(),
            &settings(),
        )
        .expect("targets");
        let urls: Vec<&str> = ts.iter().map(|t| t.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://localhost:6060/debug/pprof/block",
                "http://localhost:6060/debug/pprof/goroutine",
                "http://localhost:6060/debug/pprof/allocs",
                "http://localhost:6060/debug/pprof/mutex",
                "http://localhost:6060/debug/pprof/profile?seconds=14",
            ]
        );
        let cpu = &ts[4];
        assert!(cpu.has_seconds && !cpu.client_delta());
        assert_eq!(
            cpu.timeout(Duration::from_secs(10), Duration::from_secs(15)),
            Duration::from_secs(24)
        );
        let mem = &ts[2];
        assert!(mem.client_delta());
        assert_eq!(mem.labels["__name__"], "memory");
        assert_eq!(mem.labels["instance"], "localhost:6060");
        assert_eq!(mem.labels["service_name"], "unspecified");
        assert!(
            !mem.labels.contains_key("job"),
            "no job label unless job_name is set"
        );
        assert_eq!(mem.labels["__scheme__"], "http");
    }

    #[test]
    fn url_and_label_rules() {
        struct Case {
            name: &'static str,
            target: &'static [(&'static str, &'static str)],
            settings: fn(&mut TargetSettings),
            profile: &'static str,
            want_url: Result<&'static str, TargetError>,
            want_labels: &'static [(&'static str, &'static str)],
        }
        let cases = [
            Case {
                name: "port 80 added for http",
                target: &[("__address__", "pod")],
                settings: |_| {},
                profile: "memory",
                want_url: Ok("http://pod:80/debug/pprof/allocs"),
                want_labels: &[("instance", "pod:80"), ("__address__", "pod:80")],
            },
            Case {
                name: "port 443 added for https from the target's scheme",
                target: &[("__address__", "pod"), ("__scheme__", "https")],
                settings: |_| {},
                profile: "memory",
                want_url: Ok("https://pod:443/debug/pprof/allocs"),
                want_labels: &[("instance", "pod:443")],
            },
            Case {
                name: "bracketed IPv6 gets a port",
                target: &[("__address__", "[::1]")],
                settings: |_| {},
                profile: "memory",
                want_url: Ok("http://[::1]:80/debug/pprof/allocs"),
                want_labels: &[],
            },
            Case {
                name: "unknown scheme without a port is an error",
                target: &[("__address__", "pod"), ("__scheme__", "ftp")],
                settings: |s| s.scheme = "ftp".into(),
                profile: "memory",
                want_url: Err(TargetError::InvalidScheme("ftp".into())),
                want_labels: &[],
            },
            Case {
                name: "no address",
                target: &[("foo", "bar")],
                settings: |_| {},
                profile: "memory",
                want_url: Err(TargetError::NoAddress),
                want_labels: &[],
            },
            Case {
                name: "slash in address",
                target: &[("__address__", "pod:80/x")],
                settings: |_| {},
                profile: "memory",
                want_url: Err(TargetError::InvalidAddress("pod:80/x".into())),
                want_labels: &[],
            },
            Case {
                name: "target overrides path and prefix",
                target: &[
                    ("__address__", "pod:8080"),
                    ("__profile_path__", "/custom/heap"),
                    ("__profile_path_prefix__", "/app/"),
                ],
                settings: |_| {},
                profile: "memory",
                want_url: Ok("http://pod:8080/app/custom/heap"),
                want_labels: &[],
            },
            Case {
                name: "config path prefix",
                target: &[("__address__", "pod:8080")],
                settings: |s| s.path_prefix = "/mount".into(),
                profile: "process_cpu",
                want_url: Ok("http://pod:8080/mount/debug/pprof/profile?seconds=14"),
                want_labels: &[("__profile_path_prefix__", "/mount")],
            },
            Case {
                name: "params and __param_ labels, sorted, label overrides first value",
                target: &[("__address__", "pod:1"), ("__param_debug", "2")],
                settings: |s| {
                    s.params
                        .insert("debug".into(), vec!["0".into(), "1".into()]);
                    s.params.insert("a b".into(), vec!["x&y".into()]);
                },
                profile: "process_cpu",
                want_url: Ok(
                    "http://pod:1/debug/pprof/profile?a+b=x%26y&debug=0&debug=1&seconds=14",
                ),
                want_labels: &[("__param_debug", "0"), ("__param_a b", "x&y")],
            },
            Case {
                name: "job only when job_name is set; existing job kept",
                target: &[("__address__", "pod:1"), ("job", "mine")],
                settings: |s| s.job_name = "cfg".into(),
                profile: "goroutine",
                want_url: Ok("http://pod:1/debug/pprof/goroutine"),
                want_labels: &[("job", "mine")],
            },
            Case {
                name: "job_name applied",
                target: &[("__address__", "pod:1")],
                settings: |s| s.job_name = "cfg".into(),
                profile: "goroutine",
                want_url: Ok("http://pod:1/debug/pprof/goroutine"),
                want_labels: &[("job", "cfg")],
            },
            Case {
                name: "instance kept when set",
                target: &[("__address__", "pod:1"), ("instance", "i-1")],
                settings: |_| {},
                profile: "goroutine",
                want_url: Ok("http://pod:1/debug/pprof/goroutine"),
                want_labels: &[("instance", "i-1")],
            },
            Case {
                name: "path cleaning",
                target: &[
                    ("__address__", "pod:1"),
                    ("__profile_path__", "//a/./b/../c/"),
                ],
                settings: |_| {},
                profile: "goroutine",
                want_url: Ok("http://pod:1/a/c/"),
                want_labels: &[],
            },
        ];
        for c in cases {
            let mut s = settings();
            (c.settings)(&mut s);
            let types: BTreeMap<String, ProfileType> = default_types()
                .into_iter()
                .map(|(k, mut t)| {
                    t.enabled = k == c.profile;
                    (k, t)
                })
                .collect();
            let got = targets_for(&labels(c.target), &types, &s);
            match (&got, &c.want_url) {
                (Ok(ts), Ok(url)) => {
                    assert_eq!(ts.len(), 1, "{}", c.name);
                    assert_eq!(ts[0].url, *url, "{}", c.name);
                    for (k, v) in c.want_labels {
                        assert_eq!(
                            ts[0].labels.get(*k).map(String::as_str),
                            Some(*v),
                            "{}: label {k}",
                            c.name
                        );
                    }
                }
                (Err(e), Err(want)) => assert_eq!(e, want, "{}", c.name),
                _ => panic!("{}: got {got:?}, want {:?}", c.name, c.want_url),
            }
        }
    }

    #[test]
    fn service_name_inference_order() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[
                    (
                        "__meta_kubernetes_pod_annotation_pyroscope_io_service_name",
                        "annotated",
                    ),
                    ("__meta_kubernetes_namespace", "ns"),
                    ("__meta_kubernetes_pod_container_name", "c"),
                ],
                "annotated",
            ),
            (
                &[
                    ("__meta_kubernetes_namespace", "ns"),
                    ("__meta_kubernetes_pod_container_name", "c"),
                    ("__meta_docker_container_name", "d"),
                ],
                "ns/c",
            ),
            (
                &[
                    ("__meta_kubernetes_namespace", "ns"),
                    ("__meta_docker_container_name", "d"),
                ],
                "d",
            ),
            (
                &[
                    ("__meta_dockerswarm_container_label_service_name", "s1"),
                    ("__meta_dockerswarm_service_name", "s2"),
                ],
                "s1",
            ),
            (&[("__meta_dockerswarm_service_name", "s2")], "s2"),
            (&[], "unspecified"),
        ];
        for (input, want) in cases {
            assert_eq!(infer_service_name(&labels(input)), *want, "{input:?}");
        }
        // An explicit service_name wins over inference.
        let ts = targets_for(
            &labels(&[
                ("__address__", "a:1"),
                ("service_name", "explicit"),
                ("__meta_kubernetes_namespace", "ns"),
                ("__meta_kubernetes_pod_container_name", "c"),
            ]),
            &default_types(),
            &settings(),
        )
        .expect("targets");
        assert!(ts.iter().all(|t| t.labels["service_name"] == "explicit"));
    }

    #[test]
    fn seconds_follow_alloy_rules() {
        let s = |i: u64, d: u64| seconds_param(Duration::from_secs(i), Duration::from_secs(d));
        assert_eq!(s(15, 14), 14);
        assert_eq!(s(60, 14), 59, "explicit default still means interval - 1");
        assert_eq!(s(60, 30), 30);
        assert_eq!(s(10, 5), 5);
    }

    #[test]
    fn godeltaprof_is_renamed_and_not_client_delta() {
        let mut cfg = ProfilingConfig::default();
        cfg.godeltaprof_memory.enabled = true;
        cfg.memory.enabled = false;
        let types: BTreeMap<String, ProfileType> = cfg
            .all_types()
            .expect("valid")
            .into_iter()
            .filter(|(k, _)| k == "godeltaprof_memory")
            .collect();
        let ts =
            targets_for(&labels(&[("__address__", "a:1")]), &types, &settings()).expect("targets");
        assert_eq!(ts.len(), 1);
        assert_eq!(ts[0].labels["__name__"], "memory");
        assert_eq!(ts[0].profile_name, "memory");
        assert!(ts[0].godeltaprof && !ts[0].client_delta());
        assert_eq!(ts[0].url, "http://a:1/debug/pprof/delta_heap");
    }

    #[test]
    fn identity_ignores_private_labels_but_not_public_ones() {
        let t = |extra: &[(&str, &str)]| {
            let mut l = labels(&[("__address__", "a:1"), ("app", "x")]);
            l.extend(labels(extra));
            targets_for(&l, &default_types(), &settings()).expect("targets")[0].hash
        };
        assert_eq!(t(&[]), t(&[("__meta_kubernetes_pod_uid", "u")]));
        assert_ne!(t(&[]), t(&[("team", "y")]));
    }

    fn only(types: &[&str]) -> BTreeMap<String, ProfileType> {
        default_types()
            .into_iter()
            .map(|(k, mut t)| {
                t.enabled = types.contains(&k.as_str());
                (k, t)
            })
            .collect()
    }

    /// Every quirk of spec §2.3-2.5 that target building touches, with the decision taken (see
    /// the module docs).
    #[test]
    fn alloy_quirks_copied_or_fixed() {
        // Fixed: the scheme named in the error is the one used (the target's), not the config's.
        let err = targets_for(
            &labels(&[("__address__", "pod"), ("__scheme__", "ftp")]),
            &only(&["memory"]),
            &settings(),
        )
        .expect_err("bad scheme");
        assert_eq!(err, TargetError::InvalidScheme("ftp".into()));

        // Fixed: with params, `seconds` appears once (Alloy: seconds=14&seconds=14 on later
        // targets, because it appends to the shared params map).
        let mut s = settings();
        s.params.insert("debug".into(), vec!["1".into()]);
        for _ in 0..2 {
            let ts = targets_for(
                &labels(&[("__address__", "a:1")]),
                &only(&["process_cpu"]),
                &s,
            )
            .expect("targets");
            assert_eq!(
                ts[0].url,
                "http://a:1/debug/pprof/profile?debug=1&seconds=14"
            );
        }

        // Fixed: a bad target is reported alone; the others are scraped (Alloy drops the whole
        // group).
        let p = plan(
            &[
                labels(&[("__address__", "a:1")]),
                labels(&[("job", "no-address")]),
                labels(&[("__address__", "b:1")]),
            ],
            &only(&["goroutine"]),
            &settings(),
        );
        assert_eq!(p.targets.len(), 2);
        assert_eq!(p.invalid.len(), 1);
        assert_eq!(p.invalid[0].error, TargetError::NoAddress);

        // Fixed: targets differing only in `__meta_*` labels are not collapsed by those labels
        // before building (Alloy keeps the first and may infer another service_name); identical
        // scrape targets are one loop, counted.
        let p = plan(
            &[
                labels(&[("__address__", "a:1"), ("__meta_x", "1")]),
                labels(&[("__address__", "a:1"), ("__meta_x", "2")]),
                labels(&[
                    ("__address__", "a:1"),
                    ("__meta_docker_container_name", "web"),
                ]),
            ],
            &only(&["goroutine"]),
            &settings(),
        );
        assert_eq!(p.targets.len(), 2, "service_name differs for the third");
        assert_eq!(p.duplicates, 1);
        assert_eq!(p.targets[1].labels["service_name"], "web");

        // Fixed: a target carrying __profile_path__ gives several types the same URL; one is
        // kept deterministically (first by name) and the collision is reported.
        let p = plan(
            &[labels(&[
                ("__address__", "a:1"),
                ("__profile_path__", "/debug/pprof/heap"),
            ])],
            &default_types(),
            &settings(),
        );
        let urls: Vec<(&str, &str)> = p
            .targets
            .iter()
            .map(|t| (t.url.as_str(), t.labels["__name__"].as_str()))
            .collect();
        assert_eq!(
            urls,
            [
                ("http://a:1/debug/pprof/heap", "block"),
                ("http://a:1/debug/pprof/heap?seconds=14", "process_cpu"),
            ]
        );
        assert_eq!(
            p.collisions,
            [Collision {
                url: "http://a:1/debug/pprof/heap".into(),
                kept: "block".into(),
                dropped: vec!["goroutine".into(), "memory".into(), "mutex".into()],
            }]
        );

        // Fixed: godeltaprof and `seconds` requests of cumulative types are already deltas:
        // no client delta, but `__delta__="false"`. Copied: client deltas carry it too.
        let mut cfg = ProfilingConfig::default();
        cfg.memory.delta = true;
        cfg.godeltaprof_mutex.enabled = true;
        let ts = targets_for(
            &labels(&[("__address__", "a:1")]),
            &cfg.all_types().expect("valid"),
            &settings(),
        )
        .expect("targets");
        let by_url = |u: &str| ts.iter().find(|t| t.url == u).expect(u);
        let mem = by_url("http://a:1/debug/pprof/allocs?seconds=14");
        assert!(!mem.client_delta() && mem.already_delta());
        let dmutex = by_url("http://a:1/debug/pprof/delta_mutex");
        assert!(!dmutex.client_delta() && dmutex.already_delta());
        let block = by_url("http://a:1/debug/pprof/block");
        assert!(block.client_delta() && block.already_delta());
        let cpu = by_url("http://a:1/debug/pprof/profile?seconds=14");
        assert!(!cpu.client_delta() && !cpu.already_delta());
        let goroutine = by_url("http://a:1/debug/pprof/goroutine");
        assert!(!goroutine.already_delta());
    }

    #[test]
    fn forwarded_labels() {
        let ts = targets_for(
            &labels(&[("__address__", "a:1"), ("__meta_k", "v"), ("team", "t")]),
            &only(&["memory", "goroutine"]),
            &settings(),
        )
        .expect("targets");
        let fwd = |t: &ScrapeTarget| -> Vec<String> {
            let mut l: Vec<String> = t
                .forward_labels()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            l.sort();
            l
        };
        let version = format!("otel.scope.version={}", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            fwd(&ts[1]),
            [
                "__address__=a:1",
                "__delta__=false",
                "__meta_k=v",
                "__name__=memory",
                "__profile_path__=/debug/pprof/allocs",
                "__scheme__=http",
                "instance=a:1",
                "otel.scope.name=com.grafana.alloy/pyroscope.scrape",
                version.as_str(),
                "service_name=unspecified",
                "team=t",
            ]
        );
        assert!(!fwd(&ts[0]).iter().any(|l| l.starts_with("__delta__")));
        // A target's own scope label wins.
        let ts = targets_for(
            &labels(&[("__address__", "a:1"), ("otel.scope.name", "mine")]),
            &only(&["goroutine"]),
            &settings(),
        )
        .expect("targets");
        let f = ts[0].forward_labels();
        assert_eq!(
            f.iter()
                .filter(|(k, _)| k == "otel.scope.name")
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>(),
            ["mine"]
        );
    }

    #[test]
    fn label_limits() {
        let l = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let set = l(&[
            ("__name__", "memory"),
            ("__meta_ignored_because_private", "x"),
            ("a", "1"),
            ("b", "22"),
            ("empty", ""),
        ]);
        let lim = |count, name_length, value_length| LabelLimits {
            count,
            name_length,
            value_length,
        };
        assert_eq!(check_label_limits(&set, &lim(0, 0, 0)), Ok(()));
        assert_eq!(check_label_limits(&set, &lim(3, 0, 0)), Ok(()));
        assert_eq!(
            check_label_limits(&set, &lim(2, 0, 0)),
            Err("3 labels exceed label_limit (2)".into())
        );
        assert_eq!(check_label_limits(&set, &lim(0, 8, 0)), Ok(()));
        assert!(check_label_limits(&set, &lim(0, 7, 0)).is_err_and(|e| e.contains("__name__")));
        assert!(check_label_limits(&set, &lim(0, 0, 5)).is_err_and(|e| e.contains("__name__")));
        assert_eq!(check_label_limits(&set, &lim(0, 0, 6)), Ok(()));
    }

    #[test]
    fn split_host_port_matches_go() {
        assert_eq!(split_host_port("a:1"), Ok(("a", "1")));
        assert_eq!(split_host_port("[::1]:80"), Ok(("::1", "80")));
        assert_eq!(split_host_port("a:"), Ok(("a", "")));
        assert!(split_host_port("a").is_err());
        assert!(split_host_port("::1").is_err());
        assert!(split_host_port("[::1]").is_err());
    }
}
