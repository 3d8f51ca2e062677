//! The controller: owns the running component graph, evaluates blocks in dependency order,
//! re-evaluates dependants when exports change, and applies new versions of the config file.
//!
//! Concurrency model: the graph state sits behind one async mutex, held for a whole apply or
//! a whole re-evaluation cascade, so evaluations never interleave. Components publish exports
//! without touching that lock (each node's exports live in their own cell) and a single worker
//! task turns "exports changed" notifications into cascades.

mod apply;
mod cascade;
mod imports;
mod metrics;
mod node;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, Notify, mpsc};
use tokio_util::sync::CancellationToken;

use self::metrics::ControllerMetrics;
use self::node::{BuildContext, EvalFailure, Node};
use super::analyze::{MODULE_PATH, scope_for};
use super::component::{Component, ExportsChanged, PendingCounter};
use super::health::HealthState;
use super::info::{ComponentInfo, LoadOutcome};
use super::logging::LoggingHandle;
use super::metrics::MetricsRegistry;
use super::registry::Registry;
use super::services::Services;
use super::source::read_config;
use crate::syntax::diag::{Diagnostic, Diagnostics, Source};
use crate::syntax::eval::Scope;
use crate::syntax::value::Value;

/// How long shutdown and reloads wait for a stopped component's `run` to return before moving on
/// without it.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

pub struct ControllerOptions {
    pub registry: Registry,
    /// `--storage.path`: components get `<storage_path>/<component id>`.
    pub storage_path: PathBuf,
    pub metrics: MetricsRegistry,
    /// Present in the real process, so that the `logging` block takes effect; absent in tests,
    /// which must not install a global subscriber.
    pub logging: Option<LoggingHandle>,
    /// Handed to every component in its build options (empty by default: components then use
    /// their defaults, e.g. an unlimited memory budget).
    pub services: Services,
}

impl ControllerOptions {
    pub fn new(registry: Registry) -> Self {
        ControllerOptions {
            registry,
            storage_path: PathBuf::from("data-scraper"),
            metrics: MetricsRegistry::new(),
            logging: None,
            services: Services::default(),
        }
    }
}

/// Why a config could not be (fully) applied.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file has errors; nothing was changed.
    #[error("{}", short_lines(.0))]
    Invalid(Diagnostics),
    /// The file was applied, but some components failed to build or update; they are marked
    /// unhealthy and retried when their inputs change.
    #[error("config applied, but some components failed:\n{}", failure_lines(.0))]
    Components(Vec<ComponentFailure>),
}

/// A component of an applied config that could not be built or updated.
#[derive(Debug)]
pub struct ComponentFailure {
    pub id: String,
    /// One line, with positions: `file:line:col: building component: ...`.
    pub message: String,
    /// Each error with its source line and a caret.
    pub rendered: String,
}

/// `id: message`.
impl std::fmt::Display for ComponentFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.id, self.message)
    }
}

fn failure_lines(failures: &[ComponentFailure]) -> String {
    let lines: Vec<String> = failures.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

impl LoadError {
    /// The full rendering for a terminal: each error with its source line and a caret.
    pub fn render(&self) -> String {
        match self {
            LoadError::Invalid(d) => {
                let errors: Vec<Diagnostic> =
                    d.items.iter().filter(|x| x.is_error()).cloned().collect();
                d.source.render_all(&errors)
            }
            LoadError::Components(failures) => {
                failures.iter().map(|f| f.rendered.as_str()).collect()
            }
            other => format!("{other}\n"),
        }
    }
}

fn short_lines(d: &Diagnostics) -> String {
    let lines: Vec<String> = d
        .items
        .iter()
        .filter(|x| x.is_error())
        .map(|x| d.source.short(x))
        .collect();
    lines.join("\n")
}

/// A handle on the controller; clones share it.
#[derive(Clone)]
pub struct Controller {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    registry: Registry,
    storage_path: PathBuf,
    metrics: MetricsRegistry,
    logging: Option<LoggingHandle>,
    services: Services,
    ctl: Arc<ControllerMetrics>,
    base_scope: Scope,
    state: Mutex<State>,
    events: mpsc::UnboundedSender<ExportsChanged>,
    pending: PendingCounter,
    idle: Notify,
    ready: AtomicBool,
    shutdown: CancellationToken,
    /// The latest load's outcome, for the UI (the metrics only say whether it succeeded).
    last_load: std::sync::Mutex<Option<LoadOutcome>>,
    /// The config last given to `apply`, loaded or refused: what `scraper run`'s config watch
    /// compares the file with, so that a file already (re)loaded by SIGHUP or `/-/reload` is
    /// not reloaded a second time.
    last_applied: std::sync::Mutex<Option<Source>>,
    /// What the config last analysed without errors imports, for `imports` to watch.
    watches: std::sync::Mutex<Option<Vec<crate::runtime::module::imports::Watch>>>,
    /// Stops the task watching the imports of the config applied before.
    import_watch: std::sync::Mutex<Option<CancellationToken>>,
    /// What each imported file and URL held when last read, used when it cannot be read again.
    last_good: Arc<crate::runtime::module::lastgood::LastGood>,
    /// Held across an apply and the watch restart that follows it (see `imports`).
    apply_lock: Mutex<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub(crate) struct State {
    /// The file the graph was loaded from, for positions in evaluation errors.
    source: Arc<Source>,
    nodes: HashMap<String, Node>,
    /// Evaluation order, dependencies first.
    order: Vec<String>,
    position: HashMap<String, usize>,
}

impl Controller {
    /// Creates an empty controller. Must be called inside a tokio runtime: it spawns the worker
    /// that re-evaluates dependants when exports change.
    pub fn new(opts: ControllerOptions) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let ctl = ControllerMetrics::register(&opts.metrics);
        let last_good = crate::runtime::module::lastgood::LastGood::new(ctl.imports_stale.clone());
        let inner = Arc::new(Inner {
            last_good: Arc::new(last_good),
            apply_lock: Mutex::new(()),
            ctl,
            registry: opts.registry,
            storage_path: opts.storage_path,
            metrics: opts.metrics,
            logging: opts.logging,
            services: opts.services,
            base_scope: Scope::stdlib(),
            state: Mutex::new(State {
                source: Arc::new(Source::new("", "")),
                nodes: HashMap::new(),
                order: Vec::new(),
                position: HashMap::new(),
            }),
            events: tx,
            pending: Arc::new(AtomicUsize::new(0)),
            idle: Notify::new(),
            ready: AtomicBool::new(false),
            shutdown: CancellationToken::new(),
            last_load: std::sync::Mutex::new(None),
            last_applied: std::sync::Mutex::new(None),
            watches: std::sync::Mutex::new(None),
            import_watch: std::sync::Mutex::new(None),
        });
        crate::runtime::task::spawn(
            "controller.cascade",
            cascade::worker(Arc::downgrade(&inner), rx),
        );
        Controller { inner }
    }

    /// Applies a config file's text. On [`LoadError::Invalid`] the running graph is untouched.
    pub async fn apply_source(&self, file_name: &str, src: &str) -> Result<(), LoadError> {
        self.apply_config(Source::new(file_name, src)).await
    }

    /// Applies a config of one file or several (a directory).
    pub async fn apply_config(&self, source: Source) -> Result<(), LoadError> {
        imports::apply_and_watch(&self.inner, source).await
    }

    /// Reads and applies a config file, or a directory of them (startup, `/-/reload`, SIGHUP).
    pub async fn load_file(&self, path: &Path) -> Result<(), LoadError> {
        let owned = path.to_path_buf();
        let read = crate::runtime::task::spawn_blocking("controller.read_config", move || {
            read_config(&owned)
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
        let source = match read {
            Ok(source) => source,
            Err(source) => {
                self.inner.ctl.last_load_successful.set(0);
                self.inner.ctl.load_failures.inc();
                let err = LoadError::Read {
                    path: path.to_path_buf(),
                    source,
                };
                self.inner.record_load(Some(err.to_string()));
                return Err(err);
            }
        };
        self.apply_config(source).await
    }

    /// When the latest load (startup, `/-/reload`, SIGHUP) happened and how it ended; None
    /// before the first.
    pub fn last_load(&self) -> Option<LoadOutcome> {
        crate::sync::lock(&self.inner.last_load).clone()
    }

    /// The config last applied (whether it loaded or was refused); None before the first.
    pub fn last_applied(&self) -> Option<Source> {
        crate::sync::lock(&self.inner.last_applied).clone()
    }

    /// True once a config has been applied (`/-/ready`).
    pub fn is_ready(&self) -> bool {
        self.inner.ready.load(Ordering::SeqCst)
    }

    pub fn metrics(&self) -> &MetricsRegistry {
        &self.inner.metrics
    }

    /// Every component, in evaluation order, without arguments, exports or debug info.
    pub async fn components(&self) -> Vec<ComponentInfo> {
        let state = self.inner.state.lock().await;
        state
            .order
            .iter()
            .filter_map(|id| state.nodes.get(id))
            .map(|n| n.info(false))
            .collect()
    }

    /// One component with everything known about it.
    pub async fn component(&self, id: &str) -> Option<ComponentInfo> {
        let state = self.inner.state.lock().await;
        state.nodes.get(id).map(|n| n.info(true))
    }

    /// IDs of the components whose health is `unhealthy` (`/-/healthy`).
    pub async fn unhealthy_components(&self) -> Vec<String> {
        let state = self.inner.state.lock().await;
        state
            .order
            .iter()
            .filter_map(|id| state.nodes.get(id))
            .filter(|n| n.health().state == HealthState::Unhealthy)
            .map(|n| n.id.clone())
            .collect()
    }

    /// The running instance of component `id`, if it is built and of type `C`.
    pub async fn instance<C: Component>(&self, id: &str) -> Option<Arc<C>> {
        let state = self.inner.state.lock().await;
        let instance = state.nodes.get(id)?.instance()?.clone();
        instance.into_any().downcast::<C>().ok()
    }

    /// Waits until every published exports change has been propagated through the graph.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.inner.pending.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Refreshes gauges computed from component state (called before `/metrics` is served, so
    /// that components which exited since the last evaluation are counted as such).
    pub async fn refresh_metrics(&self) {
        let state = self.inner.state.lock().await;
        state.update_running_metric(&self.inner.ctl);
    }

    /// Stops every component and waits (bounded) for them to return from `run`.
    ///
    /// Components stop in waves, those no running component references first: a component
    /// that forwards to another (`pyroscope.ebpf` and `pyroscope.scrape` to
    /// `pyroscope.write`'s receiver) hands over what it still holds, such as a partial
    /// collection interval, while its receiver still accepts. One deadline covers all waves.
    pub async fn shutdown(&self) {
        let mut state = self.inner.state.lock().await;
        let deadline = tokio::time::Instant::now() + STOP_TIMEOUT;
        let mut stopped: HashSet<String> = HashSet::new();
        loop {
            let wave: Vec<String> = state
                .nodes
                .iter()
                .filter(|(id, node)| {
                    !stopped.contains(*id)
                        && node
                            .referenced_by
                            .iter()
                            .all(|d| stopped.contains(d) || !state.nodes.contains_key(d))
                })
                .map(|(id, _)| id.clone())
                .collect();
            if wave.is_empty() {
                break;
            }
            let mut tasks = Vec::new();
            for id in wave {
                if let Some(node) = state.nodes.get_mut(&id) {
                    node.cancel.cancel();
                    if let Some(task) = node.task.take() {
                        tasks.push((id.clone(), task));
                    }
                }
                stopped.insert(id);
            }
            wait_for_exit_until(tasks, deadline).await;
        }
        // The graph has no cycles, so every node was in a wave; this stops anything else.
        self.inner.shutdown.cancel();
        let rest: Vec<_> = state
            .nodes
            .values_mut()
            .filter_map(|n| n.task.take().map(|t| (n.id.clone(), t)))
            .collect();
        wait_for_exit_until(rest, deadline).await;
    }
}

impl Inner {
    fn build_context<'a>(&'a self, source: &'a Source) -> BuildContext<'a> {
        BuildContext {
            source,
            storage_path: &self.storage_path,
            metrics: &self.metrics,
            services: &self.services,
            events: &self.events,
            pending: &self.pending,
        }
    }

    /// Marks `consumed` notifications as fully processed.
    fn settle(&self, consumed: usize) {
        if self.pending.fetch_sub(consumed, Ordering::SeqCst) == consumed {
            self.idle.notify_waiters();
        }
    }
}

impl State {
    /// Evaluates one node against the current exports of the nodes it references.
    fn evaluate(&mut self, inner: &Inner, id: &str) -> Result<(), EvalFailure> {
        let Some(node) = self.nodes.get(id) else {
            return Ok(());
        };
        let mut scope = scope_for(
            &inner.base_scope,
            node.references
                .iter()
                .filter_map(|dep| self.nodes.get(dep))
                .map(|dep| (dep.path.as_slice(), dep.exports.get())),
        );
        scope.set(MODULE_PATH, Value::String(node.module_path.clone()));
        let source = self.source.clone();
        let Some(node) = self.nodes.get_mut(id) else {
            return Ok(());
        };
        let start = Instant::now();
        let result = node.evaluate(&scope, &inner.build_context(&source));
        inner
            .ctl
            .evaluation_seconds
            .observe(start.elapsed().as_secs_f64());
        if let Err(f) = &result {
            tracing::error!(component_id = %id, error = %f.message, "failed to evaluate config");
        }
        result
    }

    fn update_running_metric(&self, ctl: &ControllerMetrics) {
        let mut counts: Vec<(HealthState, i64)> = Vec::new();
        for node in self.nodes.values() {
            let state = node.health().state;
            match counts.iter_mut().find(|(s, _)| *s == state) {
                Some((_, n)) => *n += 1,
                None => counts.push((state, 1)),
            }
        }
        ctl.set_running(&counts);
    }
}

/// Waits for stopped components' tasks, giving up (and logging) after [`STOP_TIMEOUT`] so that a
/// component ignoring cancellation cannot block a reload or shutdown forever.
async fn wait_for_exit(tasks: Vec<(String, tokio::task::JoinHandle<()>)>) {
    wait_for_exit_until(tasks, tokio::time::Instant::now() + STOP_TIMEOUT).await;
}

/// [`wait_for_exit`] with a deadline shared by several waits.
async fn wait_for_exit_until(
    tasks: Vec<(String, tokio::task::JoinHandle<()>)>,
    deadline: tokio::time::Instant,
) {
    if tasks.is_empty() {
        return;
    }
    for (id, task) in tasks {
        if tokio::time::timeout_at(deadline, task).await.is_err() {
            tracing::warn!(component_id = %id, "component did not stop in time; abandoning it");
        }
    }
}
