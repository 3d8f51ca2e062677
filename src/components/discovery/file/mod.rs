//! `discovery.file`: targets from JSON or YAML files, Prometheus' `file_sd` (Alloy's
//! `internal/component/discovery/file` over Prometheus' `discovery/file`).
//!
//! ```alloy
//! discovery.file "static" {
//!   files            = ["/etc/scraper/targets/*.json", "/etc/scraper/more.yaml"]
//!   refresh_interval = "5m"
//! }
//! ```
//!
//! * Arguments ([`Arguments`]): `files`, paths or Go glob patterns (metacharacters in any
//!   segment; each must end in `.json`, `.yml` or `.yaml`, in any case), and
//!   `refresh_interval` (`"5m"`). Relative paths are relative to the working directory.
//! * Export: `targets`. Each file is a list of target groups (`crate::targets::group`); each
//!   address becomes a target with its group's labels, `__address__` and `__meta_filepath`
//!   (the path as the pattern matched it). Targets come in pattern order, then file name order,
//!   then document order.
//! * When files are read: while the component is built (so the first evaluation of its
//!   dependants already sees targets), whenever a matching file appears, disappears or changes,
//!   and every `refresh_interval` regardless. Prometheus learns of changes from inotify
//!   (fsnotify); we compare each matching file's size, times and inode once a second
//!   ([`scan::Stamp`]), which sees the same edits, atomic renames included, with no inotify
//!   watch limit and within a second.
//! * A file that cannot be read or parsed keeps its last good targets (Prometheus' rule) and is
//!   loud: a warning when it starts failing (`events`), `prometheus_sd_file_read_errors_total`,
//!   `discovery_file_files_failing`, and the component is unhealthy, naming the file and the
//!   error, until it reads again. A file that no longer exists takes its targets with it.
//!
//! # Differences from Alloy, on purpose
//!
//! * A pattern with another extension, or a malformed glob, is a config error at that element;
//!   Alloy accepts it and its file SD panics when it reads such a file. Like Alloy (and unlike
//!   Prometheus' `patFileSDName`), `sd/t.Json` and `/etc/*/targets.json` are accepted.
//! * Alloy reports the component unhealthy only for a bad config and says nothing of a bad
//!   file but a log line; we also mark it unhealthy (see above).
//! * Targets are in a stable order; Alloy's come in Go's random map order.
//! * Alloy's reference says `__meta_filepath` is an absolute path; Alloy (Prometheus' code)
//!   sets the path as the pattern matched it, relative for a relative pattern, and so do we.
//! * Alloy publishes at most every 5 s; we publish a change as soon as it is read.

pub mod args;
mod events;
pub mod glob;
pub mod scan;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use args::Arguments;
pub use scan::FILEPATH_LABEL;

use crate::gocompat::time::rfc3339_nanos;
use crate::labels::LabelSet;
use crate::runtime::event::emit;
use crate::runtime::health::Health;
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;
use crate::targets as target;
use events::{FailingFileGone, FileReadFailed, FileRecovered, InstanceMetrics};
use scan::{Content, Scan, Stamp};

/// How often the files' stamps are compared between full refreshes.
const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// The running component.
pub struct File {
    id: String,
    exports: ExportsHandle,
    metrics: InstanceMetrics,
    state: Mutex<State>,
    /// Wakes the loop when `files` or the interval changed.
    rearm: Notify,
}

struct State {
    args: Arguments,
    /// Bumped when `files` changes, so a scan of the old patterns is discarded.
    generation: u64,
    /// The last good content of each matching file, in match order.
    files: Vec<(String, Content)>,
    /// Files whose last read failed, with the error.
    failing: BTreeMap<String, String>,
    /// The stamp of the files at the last scan.
    stamp: Stamp,
    output: Vec<Arc<LabelSet>>,
    refreshes: u64,
    publications: u64,
    last_refresh: Option<SystemTime>,
}

fn exports(targets: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("targets".to_string(), Value::Array(targets));
    Value::Object(m)
}

impl File {
    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Applies a scan: good files replace their content, failing ones keep theirs, files no
    /// longer matched are dropped; then publishes if the targets changed.
    fn apply(&self, st: &mut State, scan: Scan) {
        st.refreshes += 1;
        st.last_refresh = Some(SystemTime::now());
        st.stamp = scan.stamp;
        for e in &scan.glob_errors {
            tracing::warn!(component = %self.id, error = %e, "cannot expand a discovery.file pattern");
        }
        let mut previous: BTreeMap<String, Content> =
            std::mem::take(&mut st.files).into_iter().collect();
        let mut failing = BTreeMap::new();
        for (path, result) in scan.files {
            match result {
                Ok(content) => {
                    if st.failing.contains_key(&path) {
                        emit(FileRecovered {
                            component: &self.id,
                            path: &path,
                        });
                    }
                    self.metrics.set_mtime(&path, content.mtime);
                    previous.remove(&path);
                    st.files.push((path, content));
                }
                Err(error) => {
                    let kept = previous.remove(&path);
                    emit(FileReadFailed {
                        component: &self.id,
                        path: &path,
                        error: &error,
                        new: st.failing.get(&path) != Some(&error),
                        kept: kept.as_ref().map_or(0, |c| c.targets.len()),
                        metrics: &self.metrics,
                    });
                    if let Some(content) = kept {
                        st.files.push((path.clone(), content));
                    }
                    failing.insert(path, error);
                }
            }
        }
        for gone in previous.keys() {
            tracing::debug!(component = %self.id, path = %gone, "discovery file gone; its targets are removed");
            self.metrics.forget(gone);
        }
        // A failing file no longer matched ends its failure without reading again: say so, or
        // the warning it started with would be the last word on it.
        for path in st.failing.keys() {
            if !failing.contains_key(path) && !st.files.iter().any(|(p, _)| p == path) {
                emit(FailingFileGone {
                    component: &self.id,
                    path,
                });
            }
        }
        st.failing = failing;
        self.metrics.set_failing(st.failing.len());
        let output: Vec<Arc<LabelSet>> = st
            .files
            .iter()
            .flat_map(|(_, c)| c.targets.iter().cloned())
            .collect();
        if output != st.output {
            let values = output.iter().map(|t| target::value(t.clone())).collect();
            self.exports.publish(exports(values));
            st.publications += 1;
            st.output = output;
        }
    }

    /// Scans and applies on a blocking thread, unless `files` changed meanwhile.
    async fn refresh(self: &Arc<Self>) {
        let (patterns, generation) = {
            let st = self.state();
            (st.args.files.clone(), st.generation)
        };
        let scan = crate::runtime::task::spawn_blocking("discovery.file.scan", move || {
            scan::scan(&patterns)
        })
        .await;
        match scan {
            Ok(scan) => {
                let mut st = self.state();
                if st.generation == generation {
                    self.apply(&mut st, scan);
                }
            }
            Err(e) => {
                tracing::warn!(component = %self.id, error = %e, "discovery file scan did not complete")
            }
        }
    }

    /// True when the matching files differ from those of the last scan.
    async fn changed(self: &Arc<Self>) -> bool {
        let (patterns, stamp) = {
            let st = self.state();
            (st.args.files.clone(), st.stamp.clone())
        };
        crate::runtime::task::spawn_blocking("discovery.file.stat", move || {
            scan::stamp(&patterns) != stamp
        })
        .await
        .unwrap_or(true)
    }
}

impl Component for File {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        args.invalid()
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let component = File {
            metrics: InstanceMetrics::new(&opts.metrics, &opts.id),
            id: opts.id,
            exports: opts.exports,
            state: Mutex::new(State {
                args,
                generation: 0,
                files: Vec::new(),
                failing: BTreeMap::new(),
                stamp: Stamp::new(),
                output: Vec::new(),
                refreshes: 0,
                publications: 0,
                last_refresh: None,
            }),
            rearm: Notify::new(),
        };
        {
            let mut st = component.state();
            let scan = scan::scan(&st.args.files);
            component.apply(&mut st, scan);
        }
        Ok(component)
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let mut st = self.state();
        let rescan = args.files != st.args.files;
        st.args = args;
        if rescan {
            st.generation += 1;
            let scan = scan::scan(&st.args.files);
            self.apply(&mut st, scan);
        }
        self.rearm.notify_one();
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let mut last_full = Instant::now();
        loop {
            let interval = self.state().args.refresh_interval.get();
            let wait = interval.min(WATCH_INTERVAL);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.rearm.notified() => {
                    last_full = Instant::now();
                    continue;
                }
                _ = tokio::time::sleep(wait) => {}
            }
            if last_full.elapsed() >= interval || self.changed().await {
                self.refresh().await;
                last_full = Instant::now();
            }
        }
        let paths: Vec<String> = self.state().files.iter().map(|(p, _)| p.clone()).collect();
        self.metrics.remove(paths);
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let st = self.state();
        let mut files: Vec<serde_json::Value> = st
            .files
            .iter()
            .map(|(p, c)| {
                serde_json::json!({
                    "path": p,
                    "targets": c.targets.len(),
                    "error": st.failing.get(p),
                })
            })
            .collect();
        for (p, e) in &st.failing {
            if !st.files.iter().any(|(f, _)| f == p) {
                files.push(serde_json::json!({"path": p, "targets": 0, "error": e}));
            }
        }
        Some(serde_json::json!({
            "files": files,
            "targets": st.output.len(),
            "refresh_interval": st.args.refresh_interval.to_string(),
            "refreshes": st.refreshes,
            "publications": st.publications,
            "last_refresh": st.last_refresh.map(rfc3339_nanos),
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.state();
        let (path, error) = st.failing.iter().next()?;
        let more = match st.failing.len() {
            1 => String::new(),
            n => format!(" (and {} more files)", n - 1),
        };
        Some(Health::unhealthy(format!(
            "cannot read {path}: {error}{more}; keeping its last good targets"
        )))
    }
}

#[cfg(test)]
mod tests;
