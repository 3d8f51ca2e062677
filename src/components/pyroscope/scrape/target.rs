//! From a discovered target (a label set) to the scrape targets of each enabled profile type:
//! final labels, URL and identity, following Alloy's `pyroscope.scrape` (spec §2.3).
//!
//! Labels stay shared from discovery to here: `targets` decodes into [`DiscoveredTarget`]s that
//! hold the discovery component's own [`LabelSet`]s, and a scrape target's [`TargetLabels`] is
//! a clone of one (reference counts) plus the few labels target building adds. The label set
//! its profiles carry ([`ScrapeTarget::forward_label_set`]) is one more such clone, built once
//! per scrape target when the targets change; each scrape clones that set, so no label string
//! is copied between discovery and the write path.
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
//! | `profile.memory { path = "/debug/pprof/delta_heap" }` (a godeltaprof path as a cumulative type) subtracts deltas, so nearly every scrape looks like a restart and nothing is sent | **fixed**: forwarded as received, with a warning ([`ScrapeTarget::delta_path`], `delta_mode`) |
//! | `service_name` is inferred from the labels before the defaults (instance, job...) are set | **copied** (it only reads `__meta_*` labels, which are unchanged) |

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::delta_mode::is_delta_path;
use super::profiling::ProfileType;
use crate::labels::{LabelName, LabelSet};
use crate::targets::Shared;

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

/// One element of the `targets` argument: the label set a discovery component exported,
/// shared (decoding copies no string), plus what a [`LabelSet`] cannot hold: the names that a
/// target written as an object sets to `""`.
///
/// Those names are kept because this component always kept them (it used to decode targets as
/// maps of strings), and they show: they are forwarded with every profile and shown in the debug
/// info, they are part of a target's identity, `__param_<k> = ""` adds `k=` to the URL, and an
/// empty `otel.scope.*` label keeps the default one away. Targets from discovery components have
/// none (their label sets drop empty values), so for them `empty` stays an unallocated `Vec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveredTarget {
    pub labels: Shared,
    /// Sorted and unique; none of them is in `labels`.
    pub empty: Vec<LabelName>,
}

impl From<Shared> for DiscoveredTarget {
    fn from(labels: Shared) -> Self {
        DiscoveredTarget {
            labels,
            empty: Vec::new(),
        }
    }
}

impl From<&BTreeMap<String, String>> for DiscoveredTarget {
    /// A target written as an object: every label, the empty ones as names in `empty`.
    fn from(map: &BTreeMap<String, String>) -> Self {
        // A map iterates in name order, so `empty` comes out sorted.
        let empty = map
            .iter()
            .filter(|(_, v)| v.is_empty())
            .map(|(k, _)| LabelName::from(k.as_str()))
            .collect();
        DiscoveredTarget {
            labels: LabelSet::from(map).into(),
            empty,
        }
    }
}

/// Decodes like [`Shared`] (a target capsule is taken as it is), except that a plain object
/// keeps its empty labels.
impl<'de> serde::Deserialize<'de> for DiscoveredTarget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = DiscoveredTarget;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_u64<E: serde::de::Error>(self, slot: u64) -> Result<DiscoveredTarget, E> {
                crate::syntax::types::take_view::<LabelSet>(slot)
                    .map(|labels| Shared(labels).into())
                    .ok_or_else(|| E::custom("expected map(string), got capsule"))
            }
            fn visit_newtype_struct<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<DiscoveredTarget, D::Error> {
                let map = <BTreeMap<String, String> as serde::Deserialize>::deserialize(d)?;
                Ok(DiscoveredTarget::from(&map))
            }
        }
        d.deserialize_newtype_struct(crate::syntax::types::VIEW_NEWTYPE, V)
    }
}

/// A scrape target's labels: a [`LabelSet`] whose names and values are shared with the
/// discovered target's (building a scrape target copies no string it does not add), plus the
/// names set to `""` (see [`DiscoveredTarget`]). It reads as one sorted map of strings, empty
/// values in their place: [`iter`](Self::iter), `Debug` and `Serialize` (the debug info) show
/// it as the map it replaced did.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TargetLabels {
    set: LabelSet,
    /// Sorted and unique; none of them is in `set`.
    empty: Vec<LabelName>,
}

impl From<&DiscoveredTarget> for TargetLabels {
    fn from(t: &DiscoveredTarget) -> Self {
        TargetLabels {
            set: (*t.labels.0).clone(),
            empty: t.empty.clone(),
        }
    }
}

impl TargetLabels {
    /// The value of `name` if it is not empty: every rule that reads a label here treats an
    /// empty value as an absent one.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.set.get(name)
    }

    /// Whether `name` is present, even with an empty value.
    pub fn contains(&self, name: &str) -> bool {
        self.set.contains(name) || self.find_empty(name).is_ok()
    }

    /// Number of labels, empty ones included.
    pub fn len(&self) -> usize {
        self.set.len() + self.empty.len()
    }

    /// True when there are no labels at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn find_empty(&self, name: &str) -> Result<usize, usize> {
        self.empty.binary_search_by(|n| n.as_ref().cmp(name))
    }

    /// Sets `name` to `value`. Unlike [`LabelSet::set`], `""` does not delete: the label stays
    /// with an empty value, as it did in a map (a `params` entry whose first value is `""`).
    pub fn set(&mut self, name: &str, value: &str) {
        match (value.is_empty(), self.find_empty(name)) {
            (false, Ok(i)) => {
                self.empty.remove(i);
                self.set.set(name, value);
            }
            (false, Err(_)) => self.set.set(name, value),
            (true, Ok(_)) => {}
            (true, Err(i)) => {
                self.set.remove(name);
                self.empty.insert(i, LabelName::from(name));
            }
        }
    }

    /// Every label in name order, empty values included.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        // Both halves are sorted and disjoint: a merge keeps the order a map would have.
        let mut set = self.set.iter().peekable();
        let mut empty = self.empty.iter().map(|n| (n.as_ref(), "")).peekable();
        std::iter::from_fn(move || match (set.peek(), empty.peek()) {
            (Some(a), Some(b)) if b.0 < a.0 => empty.next(),
            (Some(_), _) => set.next(),
            (None, _) => empty.next(),
        })
    }
}

impl fmt::Debug for TargetLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for TargetLabels {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (n, v) in self.iter() {
            map.serialize_entry(n, v)?;
        }
        map.end()
    }
}

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
    pub labels: TargetLabels,
    pub url: String,
    /// `__name__` as sent: godeltaprof types are renamed to memory/mutex/block.
    pub profile_name: String,
    /// The target computes deltas itself (godeltaprof).
    pub godeltaprof: bool,
    /// The request carries `seconds=N`, so it takes about N seconds to answer.
    pub has_seconds: bool,
    /// A cumulative type whose path is a godeltaprof handler's (`delta_heap`...): the target
    /// sends deltas, which are forwarded as received (see `delta_mode`).
    pub delta_path: bool,
    /// Identity: loops (and their delta state) survive a republish while this stays the same.
    pub hash: u64,
}

impl ScrapeTarget {
    /// Whether the scraper subtracts the previous scrape: Go's cumulative profiles (memory,
    /// mutex, block), unless the target already returns a delta (godeltaprof, by its type or
    /// its path, or a request with `seconds=`, which Go's handler answers with the delta over
    /// that window).
    pub fn client_delta(&self) -> bool {
        !self.godeltaprof
            && !self.has_seconds
            && !self.delta_path
            && is_cumulative(&self.profile_name)
    }

    /// Whether what is forwarded is a delta of a cumulative profile, and so carries
    /// `__delta__="false"` (the backend must not subtract again).
    pub fn already_delta(&self) -> bool {
        is_cumulative(&self.profile_name)
            && (self.godeltaprof || self.has_seconds || self.delta_path || self.client_delta())
    }

    /// The labels every forwarded profile of this target carries: all target labels, plus
    /// `__delta__="false"` for deltas and the two `otel.scope.*` labels Alloy adds (each only
    /// if the target does not set it, even to `""`).
    ///
    /// Built once per target when the targets change; every scrape clones the result.
    pub fn forward_labels(&self) -> Vec<(String, String)> {
        // Room for the three labels added below, so that adding them does not reallocate.
        let mut out: Vec<(String, String)> = Vec::with_capacity(self.labels.len() + 3);
        out.extend(
            self.labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        if self.already_delta() {
            out.retain(|(k, _)| k != DELTA);
            out.push((DELTA.to_string(), "false".to_string()));
        }
        for (k, v) in [
            (SCOPE_NAME, SCOPE_NAME_VALUE),
            (SCOPE_VERSION, env!("CARGO_PKG_VERSION")),
        ] {
            if !self.labels.contains(k) {
                out.push((k.to_string(), v.to_string()));
            }
        }
        out
    }

    /// [`forward_labels`](Self::forward_labels) as the shared set profiles carry: a clone of the
    /// target's own set (reference counts) with the same labels added, empty values left out
    /// (they mean absent, and every consumer ignores them).
    pub fn forward_label_set(&self) -> LabelSet {
        let mut out = self.labels.set.clone();
        if self.already_delta() {
            out.set(DELTA, "false");
        }
        for (k, v) in [
            (SCOPE_NAME, SCOPE_NAME_VALUE),
            (SCOPE_VERSION, env!("CARGO_PKG_VERSION")),
        ] {
            // As there: a target that sets the label, even to "", keeps its own.
            if !self.labels.contains(k) {
                out.set(k, v);
            }
        }
        // Kept by the loop as long as the target exists.
        out.shrink_to_fit();
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
    discovered: &DiscoveredTarget,
    types: &BTreeMap<String, ProfileType>,
    settings: &TargetSettings,
) -> Result<Vec<ScrapeTarget>, TargetError> {
    let mut enabled = types.values().filter(|t| t.enabled).peekable();
    // Without an enabled type a target yields nothing, and is not checked either.
    if enabled.peek().is_none() {
        return Ok(Vec::new());
    }
    // What `populate` reads and writes (job, scheme, `__param_*`, address, instance,
    // service_name) is disjoint from the three per-type labels set below, so it runs once per
    // target, and each type starts from a clone of the result (reference counts, no strings).
    let mut common = TargetLabels::from(discovered);
    populate(&mut common, &discovered.labels.0, settings)?;
    let mut out = Vec::new();
    for profile in enabled {
        let mut labels = common.clone();
        set_if_empty(&mut labels, PROFILE_PATH, &profile.path);
        set_if_empty(&mut labels, NAME, &profile.name);
        set_if_empty(&mut labels, PROFILE_PATH_PREFIX, &settings.path_prefix);

        // A target may override `__name__`; the `seconds` decision follows the final name.
        let name = labels.get(NAME).unwrap_or("").to_string();
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
            labels.set(NAME, &profile_name);
        }
        // Kept by the loop as long as the target exists.
        labels.set.shrink_to_fit();
        let url = url_for(&labels, &params);
        let hash = identity(&labels, &url);
        let delta_path = !godeltaprof
            && is_cumulative(&profile_name)
            && is_delta_path(labels.get(PROFILE_PATH).unwrap_or(""));
        out.push(ScrapeTarget {
            labels,
            url,
            profile_name,
            godeltaprof,
            has_seconds,
            delta_path,
            hash,
        });
    }
    Ok(out)
}

/// A discovered target that yields no scrape target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTarget {
    /// As discovered (before any default was added).
    pub labels: TargetLabels,
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
    discovered: &[DiscoveredTarget],
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
                    labels: TargetLabels::from(base),
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
                    let type_name = |t: &ScrapeTarget| t.labels.get(NAME).unwrap_or("").to_string();
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

/// Sets `name` unless it has a non-empty value already; an empty `value` sets nothing.
fn set_if_empty(labels: &mut TargetLabels, name: &str, value: &str) {
    if value.is_empty() || labels.get(name).is_some() {
        return;
    }
    labels.set(name, value);
}

/// The labels every profile type of a target shares (Alloy's `populateLabels`): defaults from
/// the arguments, `params` as `__param_*` labels, the address with its default port, instance
/// and service_name. `base` is the target as discovered, which service_name is inferred from.
fn populate(
    labels: &mut TargetLabels,
    base: &LabelSet,
    s: &TargetSettings,
) -> Result<(), TargetError> {
    set_if_empty(labels, JOB, &s.job_name);
    set_if_empty(labels, SCHEME, &s.scheme);
    for (k, v) in &s.params {
        if let Some(first) = v.first() {
            labels.set(&format!("{PARAM_PREFIX}{k}"), first);
        }
    }
    let mut addr = labels.get(ADDRESS).unwrap_or("").to_string();
    if addr.is_empty() {
        return Err(TargetError::NoAddress);
    }
    if split_host_port(&addr).is_err() && split_host_port(&format!("{addr}:1234")).is_ok() {
        match labels.get(SCHEME).unwrap_or("") {
            "http" | "" => addr.push_str(":80"),
            "https" => addr.push_str(":443"),
            other => return Err(TargetError::InvalidScheme(other.to_string())),
        }
        labels.set(ADDRESS, &addr);
    }
    if addr.contains('/') {
        return Err(TargetError::InvalidAddress(addr));
    }
    set_if_empty(labels, INSTANCE, &addr);
    if labels.get(SERVICE_NAME).is_none() {
        labels.set(SERVICE_NAME, &infer_service_name(base));
    }
    Ok(())
}

/// `service_name` for targets that do not set one, from the labels discovery gave them.
pub fn infer_service_name(labels: &LabelSet) -> String {
    crate::profiles::service_name::infer(|k| labels.get(k), "")
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
fn url_for(labels: &TargetLabels, params: &BTreeMap<String, Vec<String>>) -> String {
    let get = |k: &str| labels.get(k).unwrap_or("");
    let mut query = params.clone();
    // The `__param_<key>` labels, a run in name order; empty ones count (they send `key=`).
    let param_labels = labels
        .iter()
        .skip_while(|(name, _)| *name < PARAM_PREFIX)
        .map_while(|(name, value)| Some((name.strip_prefix(PARAM_PREFIX)?, value)));
    for (key, value) in param_labels {
        match query.get_mut(key) {
            Some(values) if !values.is_empty() => values[0] = value.to_string(),
            _ => {
                query.insert(key.to_string(), vec![value.to_string()]);
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
fn identity(labels: &TargetLabels, url: &str) -> u64 {
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

    /// A target written as an object in the config (empty values kept).
    fn labels(pairs: &[(&str, &str)]) -> DiscoveredTarget {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        DiscoveredTarget::from(&map)
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
        assert_eq!(mem.labels.get("__name__").unwrap_or(""), "memory");
        assert_eq!(mem.labels.get("instance").unwrap_or(""), "localhost:6060");
        assert_eq!(mem.labels.get("service_name").unwrap_or(""), "unspecified");
        assert!(
            !mem.labels.contains("job"),
            "no job label unless job_name is set"
        );
        assert_eq!(mem.labels.get("__scheme__").unwrap_or(""), "http");
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
                        assert_eq!(ts[0].labels.get(k), Some(*v), "{}: label {k}", c.name);
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
            assert_eq!(
                infer_service_name(&labels(input).labels.0),
                *want,
                "{input:?}"
            );
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
        assert!(
            ts.iter()
                .all(|t| t.labels.get("service_name") == Some("explicit"))
        );
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
        assert_eq!(ts[0].labels.get("__name__").unwrap_or(""), "memory");
        assert_eq!(ts[0].profile_name, "memory");
        assert!(ts[0].godeltaprof && !ts[0].client_delta());
        assert_eq!(ts[0].url, "http://a:1/debug/pprof/delta_heap");
    }

    #[test]
    fn a_godeltaprof_path_as_a_cumulative_type_is_not_subtracted() {
        let mut cfg = ProfilingConfig::default();
        cfg.memory.path = "/debug/pprof/delta_heap".into();
        cfg.mutex.path = "/debug/pprof/delta_mutex".into();
        cfg.goroutine.path = "/debug/pprof/delta_goroutine".into();
        let types = cfg.all_types().expect("valid");
        let ts =
            targets_for(&labels(&[("__address__", "a:1")]), &types, &settings()).expect("targets");
        let by_name = |n: &str| {
            ts.iter()
                .find(|t| t.labels.get("__name__") == Some(n))
                .unwrap_or_else(|| panic!("no {n}"))
        };
        for n in ["memory", "mutex"] {
            let t = by_name(n);
            assert!(
                t.delta_path && !t.client_delta() && t.already_delta(),
                "{n}"
            );
            assert!(
                t.forward_labels()
                    .contains(&("__delta__".into(), "false".into()))
            );
        }
        // Block keeps its cumulative path; goroutine is not cumulative whatever its path.
        assert!(!by_name("block").delta_path && by_name("block").client_delta());
        assert!(!by_name("goroutine").delta_path);
    }

    #[test]
    fn identity_ignores_private_labels_but_not_public_ones() {
        let t = |extra: &[(&str, &str)]| {
            let mut pairs = vec![("__address__", "a:1"), ("app", "x")];
            pairs.extend_from_slice(extra);
            targets_for(&labels(&pairs), &default_types(), &settings()).expect("targets")[0].hash
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
        assert_eq!(p.targets[1].labels.get("service_name").unwrap_or(""), "web");

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
            .map(|t| (t.url.as_str(), t.labels.get("__name__").unwrap_or("")))
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
        for t in &ts {
            assert_eq!(
                t.forward_label_set(),
                t.forward_labels().into_iter().collect::<LabelSet>()
            );
        }
        // A target's own scope label wins.
        let ts = targets_for(
            &labels(&[("__address__", "a:1"), ("otel.scope.name", "mine")]),
            &only(&["goroutine"]),
            &settings(),
        )
        .expect("targets");
        let f = ts[0].forward_labels();
        assert_eq!(
            ts[0].forward_label_set().get("otel.scope.name"),
            Some("mine")
        );
        assert_eq!(
            f.iter()
                .filter(|(k, _)| k == "otel.scope.name")
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>(),
            ["mine"]
        );
    }

    /// Targets written as objects may set labels to `""`; those labels are kept as they were
    /// when targets decoded as maps (discovery's label sets never have any).
    #[test]
    fn empty_labels_of_written_targets_are_kept() {
        let target = labels(&[
            ("__address__", "a:1"),
            ("__meta_x", ""),
            ("__param_foo", ""),
            ("__param_debug", "5"),
            ("job", ""),
            ("otel.scope.name", ""),
            ("team", ""),
        ]);
        let mut s = settings();
        s.params.insert("debug".into(), vec![String::new()]);
        let ts = targets_for(&target, &only(&["goroutine"]), &s).expect("targets");
        let t = &ts[0];
        // `__param_foo = ""` sends `foo=`; a `params` value of `""` overrides the label.
        assert_eq!(t.url, "http://a:1/debug/pprof/goroutine?debug=&foo=");
        let version = env!("CARGO_PKG_VERSION");
        let want: Vec<(&str, &str)> = vec![
            ("__address__", "a:1"),
            ("__meta_x", ""),
            ("__name__", "goroutine"),
            ("__param_debug", ""),
            ("__param_foo", ""),
            ("__profile_path__", "/debug/pprof/goroutine"),
            ("__scheme__", "http"),
            ("instance", "a:1"),
            ("job", ""),
            // Present (empty): the default scope name is not added, the version is.
            ("otel.scope.name", ""),
            ("service_name", "unspecified"),
            ("team", ""),
            ("otel.scope.version", version),
        ];
        let got = t.forward_labels();
        let got: Vec<(&str, &str)> = got.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, want);
        // The set profiles carry: the same labels, empty ones left out.
        assert_eq!(
            t.forward_label_set(),
            t.forward_labels().into_iter().collect::<LabelSet>()
        );
        assert_eq!(
            format!("{:?}", t.labels),
            format!("{:?}", t.labels.iter().collect::<BTreeMap<_, _>>()),
            "debug output is the map's"
        );
        assert_eq!(
            serde_json::to_value(&t.labels).expect("json")["team"],
            "",
            "the debug info shows empty labels"
        );
        // Empty public labels are part of the identity.
        let without = targets_for(
            &labels(&[("__address__", "a:1"), ("__param_foo", "")]),
            &only(&["goroutine"]),
            &settings(),
        )
        .expect("targets");
        let with = targets_for(
            &labels(&[("__address__", "a:1"), ("__param_foo", ""), ("team", "")]),
            &only(&["goroutine"]),
            &settings(),
        )
        .expect("targets");
        assert_ne!(without[0].hash, with[0].hash);
        // Invalid targets are reported with their empty labels.
        let p = plan(
            &[labels(&[("team", "")])],
            &only(&["goroutine"]),
            &settings(),
        );
        assert_eq!(
            p.invalid[0].labels.iter().collect::<Vec<_>>(),
            [("team", "")]
        );
    }

    #[test]
    fn target_labels_set_and_merge_in_name_order() {
        let mut l = TargetLabels::from(&labels(&[("b", ""), ("d", "4")]));
        l.set("a", "");
        l.set("c", "3");
        l.set("e", "");
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            [("a", ""), ("b", ""), ("c", "3"), ("d", "4"), ("e", "")]
        );
        // Reads treat empty as absent; presence does not.
        assert_eq!((l.get("b"), l.contains("b")), (None, true));
        assert_eq!((l.get("z"), l.contains("z")), (None, false));
        l.set("b", "2");
        l.set("d", "");
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            [("a", ""), ("b", "2"), ("c", "3"), ("d", ""), ("e", "")]
        );
        assert_eq!(l.len(), 5);
    }

    #[test]
    fn targets_decode_shared_or_from_objects() {
        use crate::syntax::value::Value;
        use std::sync::Arc;
        let set: Arc<LabelSet> = Arc::new([("__address__", "a:1")].into_iter().collect());
        let object = Value::Object(
            [("__address__", "b:1"), ("team", "")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .collect(),
        );
        let v = Value::Array(vec![crate::targets::value(set.clone()), object]);
        let got: Vec<DiscoveredTarget> = crate::syntax::decode::from_value(&v).expect("decodes");
        assert!(
            Arc::ptr_eq(&got[0].labels.0, &set),
            "a capsule is not copied"
        );
        assert!(got[0].empty.is_empty());
        assert_eq!(got[1].labels.0.get("__address__"), Some("b:1"));
        assert_eq!(got[1].empty, [LabelName::from("team")]);
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
