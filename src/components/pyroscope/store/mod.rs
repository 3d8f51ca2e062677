//! `pyroscope.store`: keeps every profile it receives in an embedded, crash-safe database on
//! local disk, so that profiles can be compared across time windows (before and after an
//! upgrade) or turned into PGO profiles with no backend at all.
//!
//! ```alloy
//! pyroscope.store "local" {
//!   path      = "./data/profiles"  // default: <storage.path>/<component id>
//!   retention = "24h"              // profiles older than this are deleted
//!   max_size  = "2GiB"             // then the oldest, until the profile data fits
//! }
//!
//! pyroscope.scrape "app" {
//!   targets    = [{"__address__" = "localhost:6060", "service_name" = "app"}]
//!   forward_to = [pyroscope.store.local.receiver, pyroscope.write.cloud.receiver]
//! }
//! ```
//!
//! `receiver.append` only queues (at most 4096 profiles and 64 MiB; beyond that profiles are
//! dropped and counted, a producer never waits). A dedicated thread writes what is queued in
//! batches, one transaction each, runs the retention at start and every minute, and answers
//! snapshot requests from `scraper query` (see [`Db::open_read_only`]).
//!
//! Series are stored with the labels Pyroscope would store: private `__*` labels dropped
//! except `__name__` and `__delta__`. `max_size` bounds the database file: the profile data,
//! counted in whole 4 KiB pages ([`Stats::data_bytes`]), is kept within 15/16 of it (see
//! [`size_budget`]), checked after every batch, which leaves room for the index and for pages
//! awaiting reuse. The file does not shrink when `max_size` is lowered; delete the directory
//! to reclaim the space at once.
//!
//! Marks ("upgrade started") are recorded into every running store through the registry of
//! open stores, [`OpenStores`], which a store joins at build when its options' services hold
//! one (`scraper run` gives the same registry to the server for `POST /api/v0/marks`).
//! Metrics: see `metrics`.
//!
//! Modules: `args`, `metrics`, `writer` the component's thread; the database itself is the
//! store engine, `crate::store`.

pub mod args;
mod events;
mod metrics;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

pub use self::args::Arguments;
use self::events::ProfilesDropped;
use self::metrics::{InstanceMetrics, StoreMetrics};
use crate::budget::{Budget, Priority, Reservation, Use};
use crate::gocompat::time::format_go_duration;
use crate::gocompat::time::rfc3339_millis;
use crate::profiles::{Appendable, Profile, Receiver};
use crate::runtime::event::emit;
use crate::runtime::{BoxError, Component, ComponentOptions, Health};
use crate::store::{Db, OpenStore, OpenStores, Removed, Stats};
use crate::syntax::value::Value;

use crate::sync::lock;

/// Profiles waiting for the writer before new ones are dropped.
const QUEUE_PROFILES: usize = 4096;
/// Bytes waiting for the writer before new profiles are dropped.
const QUEUE_BYTES: u64 = 64 << 20;

/// What the writer applies; replaced by `update`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Settings {
    path: PathBuf,
    retention: Duration,
    max_size: u64,
}

impl Settings {
    fn new(args: &Arguments, data_path: &Path) -> Settings {
        Settings {
            path: args.path.clone().unwrap_or_else(|| data_path.to_path_buf()),
            retention: args.retention,
            max_size: args.max_size,
        }
    }
}

/// A failure worth showing in the UI.
#[derive(Clone, Debug)]
struct Failure {
    at: SystemTime,
    operation: &'static str,
    message: String,
}

/// State shared by the component, its receiver and its writer thread.
struct Shared {
    id: String,
    /// `<storage.path>/<component id>`: the store's directory when `path` is not set.
    data_path: PathBuf,
    settings: Mutex<Settings>,
    /// Set by `update`: the writer re-runs the retention with the new limits.
    settings_changed: AtomicBool,
    db: RwLock<Option<Arc<Db>>>,
    queued_profiles: AtomicUsize,
    queued_bytes: AtomicU64,
    /// `queued_bytes` as reserved against the memory budget.
    queue_memory: Mutex<Reservation>,
    received: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
    /// Why the store is not open, or why the last append failed; cleared by success.
    unhealthy: Mutex<Option<String>>,
    last_error: Mutex<Option<Failure>>,
    stats: Mutex<Option<Stats>>,
    last_retention: Mutex<Option<(SystemTime, Removed)>>,
    retention_log: Mutex<writer::RetentionLog>,
    metrics: InstanceMetrics,
    /// The component's memory budget, for counting what the queue sheds.
    budget: Budget,
    /// The registry this store joined, pruned when the store goes.
    open_stores: Option<OpenStores>,
}

impl Shared {
    fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    fn current(&self) -> Option<Arc<Db>> {
        crate::sync::read(&self.db).clone()
    }

    fn set_db(&self, db: Option<Arc<Db>>) -> Option<Arc<Db>> {
        std::mem::replace(&mut *crate::sync::write(&self.db), db)
    }
}

/// What the registry of open stores sees of this one.
impl OpenStore for Shared {
    fn component_id(&self) -> &str {
        &self.id
    }

    fn current(&self) -> Option<Arc<Db>> {
        Shared::current(self)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Entries die with their store; this keeps reloads from piling up dead ones.
        if let Some(open) = &self.open_stores {
            open.prune();
        }
    }
}

/// Gives `bytes` of the queue's reservation back (they left the queue).
fn release_queue_memory(s: &Shared, bytes: u64) {
    let mut memory = lock(&s.queue_memory);
    let left = memory.bytes().saturating_sub(bytes);
    memory.resize(left);
}

/// What the exported receiver appends to: the writer's queue.
struct Sink {
    tx: mpsc::SyncSender<Profile>,
    shared: Arc<Shared>,
}

impl Appendable for Sink {
    fn append(&self, profiles: Vec<Profile>) {
        let s = &self.shared;
        let (mut dropped, mut over_budget) = (0, 0);
        for p in profiles {
            s.received.fetch_add(1, Ordering::Relaxed);
            let size = p.raw.len() as u64;
            if s.queued_bytes.fetch_add(size, Ordering::Relaxed) + size > QUEUE_BYTES {
                s.queued_bytes.fetch_sub(size, Ordering::Relaxed);
                dropped += 1;
                continue;
            }
            {
                let mut memory = lock(&s.queue_memory);
                let want = memory.bytes() + size;
                if !memory.try_resize(Priority::Normal, want) {
                    drop(memory);
                    s.queued_bytes.fetch_sub(size, Ordering::Relaxed);
                    over_budget += 1;
                    continue;
                }
            }
            match self.tx.try_send(p) {
                Ok(()) => {
                    s.queued_profiles.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    s.queued_bytes.fetch_sub(size, Ordering::Relaxed);
                    release_queue_memory(s, size);
                    dropped += 1;
                }
            }
        }
        emit(ProfilesDropped {
            shared: s,
            reason: metrics::DropReason::QueueFull,
            profiles: dropped,
            detail: None,
        });
        for _ in 0..over_budget {
            s.budget.count_shed(Use::StoreQueue, Priority::Normal);
        }
        emit(ProfilesDropped {
            shared: s,
            reason: metrics::DropReason::MemoryBudget,
            profiles: over_budget,
            detail: None,
        });
        s.metrics.queue(s.queued_profiles.load(Ordering::Relaxed));
    }
}

/// The `pyroscope.store` component.
pub struct Store {
    shared: Arc<Shared>,
    receiver: Arc<Receiver>,
    rx: Mutex<Option<mpsc::Receiver<Profile>>>,
}

fn exports(receiver: &Arc<Receiver>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    Value::Object(m)
}

impl Store {
    /// The store this component writes, when open.
    pub fn db(&self) -> Option<Arc<Db>> {
        self.shared.current()
    }

    /// The receiver it exports.
    pub fn receiver(&self) -> Arc<Receiver> {
        self.receiver.clone()
    }
}

impl Component for Store {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable())
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let settings = Settings::new(&args, &opts.data_path);
        let budget = opts.services.get::<Budget>().unwrap_or_default();
        let open_stores = opts.services.get::<OpenStores>();
        // Opened here so that a wrong path or a damaged store fails the configuration with a
        // clear message. A store held by another handle (the instance this one replaces, a
        // `scraper query` repairing it) is not an error: the writer retries.
        let db = match Db::open(&settings.path) {
            Ok(db) => Some(Arc::new(db)),
            Err(e) if e.is_locked() => {
                tracing::warn!(component_id = %opts.id, error = %e, "store in use, will retry");
                None
            }
            Err(e) => return Err(Box::new(e)),
        };
        let shared = Arc::new(Shared {
            id: opts.id.clone(),
            data_path: opts.data_path.clone(),
            settings: Mutex::new(settings),
            settings_changed: AtomicBool::new(false),
            unhealthy: Mutex::new(
                db.is_none()
                    .then(|| "the store is in use by another process".to_string()),
            ),
            db: RwLock::new(db),
            queued_profiles: AtomicUsize::new(0),
            queued_bytes: AtomicU64::new(0),
            queue_memory: Mutex::new(budget.reserve(Use::StoreQueue, 0)),
            received: AtomicU64::new(0),
            written: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            last_error: Mutex::new(None),
            stats: Mutex::new(None),
            last_retention: Mutex::new(None),
            retention_log: Mutex::default(),
            metrics: StoreMetrics::get(&opts.metrics).instance(&opts.id),
            budget,
            open_stores,
        });
        if let Some(db) = shared.current() {
            writer::refresh_stats(&shared, &db);
        }
        if let Some(open) = &shared.open_stores {
            open.register(&shared);
        }
        let (tx, rx) = mpsc::sync_channel(QUEUE_PROFILES);
        let receiver = Arc::new(Receiver::new(Sink {
            tx,
            shared: shared.clone(),
        }));
        opts.exports.publish(exports(&receiver));
        Ok(Store {
            shared,
            receiver,
            rx: Mutex::new(Some(rx)),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        *lock(&self.shared.settings) = Settings::new(&args, &self.shared.data_path);
        self.shared.settings_changed.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let s = &self.shared;
        let settings = s.settings();
        let stats = lock(&s.stats).clone();
        let time = |t: Option<SystemTime>| t.map(rfc3339_millis);
        let mut info = serde_json::json!({
            "path": settings.path.display().to_string(),
            "open": s.current().is_some(),
            "retention": format_go_duration(settings.retention),
            "max_size": settings.max_size,
            "received_total": s.received.load(Ordering::Relaxed),
            "written_total": s.written.load(Ordering::Relaxed),
            "dropped_total": s.dropped.load(Ordering::Relaxed),
            "queued_profiles": s.queued_profiles.load(Ordering::Relaxed),
            "queued_bytes": s.queued_bytes.load(Ordering::Relaxed),
        });
        if let (Some(stats), Some(o)) = (stats, info.as_object_mut()) {
            o.insert("series".into(), stats.series.into());
            o.insert("profiles".into(), stats.profiles.into());
            o.insert("bytes".into(), stats.bytes.into());
            o.insert("data_bytes".into(), stats.data_bytes.into());
            o.insert("file_bytes".into(), stats.file_bytes.into());
            o.insert("marks".into(), stats.marks.into());
            o.insert("oldest".into(), time(stats.oldest).into());
            o.insert("newest".into(), time(stats.newest).into());
        }
        if let (Some((at, r)), Some(o)) = (*lock(&s.last_retention), info.as_object_mut()) {
            o.insert(
                "last_retention".into(),
                serde_json::json!({
                    "at": rfc3339_millis(at),
                    "removed_by_age": r.by_age,
                    "removed_by_size": r.by_size,
                    "removed_bytes": r.bytes,
                    "removed_series": r.series,
                }),
            );
        }
        if let (Some(f), Some(o)) = (lock(&s.last_error).clone(), info.as_object_mut()) {
            o.insert(
                "last_error".into(),
                serde_json::json!({
                    "at": rfc3339_millis(f.at),
                    "operation": f.operation,
                    "message": f.message,
                }),
            );
        }
        Some(info)
    }

    fn health(&self) -> Option<Health> {
        lock(&self.shared.unhealthy).clone().map(Health::unhealthy)
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let Some(rx) = lock(&self.rx).take() else {
            return Err("pyroscope.store run twice".into());
        };
        // The writer thread stops when this task does, also if it is dropped rather than
        // cancelled.
        let stop = shutdown.child_token();
        let _stop_on_drop = stop.clone().drop_guard();
        let shared = self.shared.clone();
        let result = crate::runtime::task::spawn_blocking("pyroscope.store.writer", move || {
            writer::run(&shared, rx, &stop)
        })
        .await;
        self.shared.metrics.remove();
        result.map_err(|e| format!("pyroscope.store writer thread: {e}").into())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::runtime::{HealthState, Services};

    fn receiver_of(exports: &crate::runtime::ExportsHandle) -> Arc<Receiver> {
        let Value::Object(m) = exports.current() else {
            panic!("exports are an object");
        };
        let Some(Value::Capsule(c)) = m.get("receiver") else {
            panic!("no receiver in {m:?}");
        };
        c.downcast::<Receiver>().expect("a receiver")
    }

    fn build(id: &str, args: Arguments) -> (Arc<Store>, Arc<Receiver>) {
        let (store, receiver, _) = build_with_metrics(id, args);
        (store, receiver)
    }

    fn build_with_metrics(
        id: &str,
        args: Arguments,
    ) -> (Arc<Store>, Arc<Receiver>, crate::runtime::MetricsRegistry) {
        let opts = ComponentOptions::standalone(id, "pyroscope.store", Store::initial_exports());
        let exports = opts.exports.clone();
        let metrics = opts.metrics.clone();
        let store = Store::build(opts, args).expect("build");
        (Arc::new(store), receiver_of(&exports), metrics)
    }

    fn profile(service: &str, at: SystemTime) -> Profile {
        Profile {
            received_at: at,
            ..Profile::new(
                vec![
                    ("service_name".into(), service.into()),
                    ("__name__".into(), "process_cpu".into()),
                    ("__address__".into(), "10.0.0.1:6060".into()),
                ],
                crate::pprof::gzip(format!("profile of {service}").as_bytes(), 1),
            )
        }
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stored(store: &Store) -> u64 {
        store
            .db()
            .and_then(|db| db.stats().ok())
            .map_or(0, |s| s.profiles)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn profiles_appended_to_the_receiver_land_in_the_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store");
        let open_stores = OpenStores::default();
        let mut opts = ComponentOptions::standalone(
            "pyroscope.store.receives",
            "pyroscope.store",
            Store::initial_exports(),
        );
        opts.services = Services::default().with(open_stores.clone());
        let exports = opts.exports.clone();
        let store = Arc::new(
            Store::build(
                opts,
                Arguments {
                    path: Some(path.clone()),
                    ..Arguments::default()
                },
            )
            .expect("build"),
        );
        let receiver = receiver_of(&exports);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(store.clone().run(shutdown.clone()));
        let now = SystemTime::now();
        receiver.append(vec![profile("a", now), profile("b", now)]);
        receiver.append(vec![profile("a", now + Duration::from_secs(15))]);
        wait_for("3 profiles", || stored(&store) == 3);

        let db = store.db().expect("open");
        let series = db.series().expect("series");
        assert_eq!(series.len(), 2);
        assert!(series.iter().all(|s| s.label("__address__").is_none()));
        let info = store.debug_info().expect("info");
        assert_eq!(info["path"], path.display().to_string());
        assert_eq!(info["received_total"], 3);
        assert_eq!(info["written_total"], 3);
        assert_eq!(info["dropped_total"], 0);
        assert_eq!(info["series"], 2);
        assert_eq!(info["retention"], "24h0m0s");
        assert_eq!(info["max_size"], 2u64 << 30);
        assert!(info["oldest"].is_string(), "{info}");
        assert!(store.health().is_none());

        // Marks reach the stores registered in the services given at build.
        assert_eq!(open_stores.record_mark("deploy v2", now), 1);
        assert_eq!(
            db.marks(now, now + Duration::from_secs(1)).expect("marks"),
            vec![("deploy v2".to_string(), now)]
        );
        assert!(
            open_stores
                .running()
                .iter()
                .any(|r| r.component_id == "pyroscope.store.receives" && r.path == path)
        );

        shutdown.cancel();
        task.await.expect("joins").expect("runs");
        assert!(store.db().is_none(), "closed at exit");
        assert!(open_stores.running().is_empty());
        drop(db);
        let reopened = Db::open(&path).expect("reopen after exit");
        assert_eq!(reopened.stats().expect("stats").profiles, 3);
    }

    /// The budget and the registry of open stores come from the controller's services, not
    /// from globals: a store built by a controller joins that registry and sheds against that
    /// budget.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_controllers_services_reach_the_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stores = OpenStores::default();
        // Normal priority may fill 80 % of 1 KiB: a 4 KiB profile never fits.
        let budget = Budget::new(1 << 10);
        // Only this component registered: a component's tests do not need the others.
        let registry = crate::runtime::Registry::new().with(crate::runtime::Registration::new::<
            Store,
        >("pyroscope.store"));
        let mut opts = crate::runtime::ControllerOptions::new(registry);
        opts.storage_path = dir.path().to_path_buf();
        opts.services = Services::default()
            .with(budget.clone())
            .with(stores.clone());
        let c = crate::runtime::Controller::new(opts);
        c.apply_source("cfg.alloy", "pyroscope.store \"local\" { }\n")
            .await
            .expect("apply");
        let store = c
            .instance::<Store>("pyroscope.store.local")
            .await
            .expect("built");
        let ids: Vec<String> = stores
            .running()
            .into_iter()
            .map(|r| r.component_id)
            .collect();
        assert_eq!(ids, ["pyroscope.store.local"]);

        let big = Profile {
            raw: vec![0u8; 4 << 10].into(),
            ..profile("a", SystemTime::now())
        };
        store.receiver().append(vec![big]);
        let info = store.debug_info().expect("info");
        assert_eq!(info["dropped_total"], 1, "{info}");
        assert_eq!(budget.used_by(Use::StoreQueue), 0);

        c.shutdown().await;
        assert!(stores.running().is_empty(), "closed at exit");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_is_queued_at_shutdown_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, receiver) = build(
            "pyroscope.store.flush",
            Arguments {
                path: Some(dir.path().to_path_buf()),
                ..Arguments::default()
            },
        );
        let now = SystemTime::now();
        receiver.append(
            (0..100)
                .map(|i| profile(&format!("s{}", i % 3), now))
                .collect(),
        );
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        store.clone().run(shutdown).await.expect("runs");
        let db = Db::open(dir.path()).expect("open");
        assert_eq!(db.stats().expect("stats").profiles, 100);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, receiver, metrics) = build_with_metrics(
            "pyroscope.store.full",
            Arguments {
                path: Some(dir.path().to_path_buf()),
                ..Arguments::default()
            },
        );
        // Not running: nothing drains. 64 MiB of queue takes 64 profiles of 1 MiB.
        let big = Profile {
            raw: vec![0u8; 1 << 20].into(),
            ..profile("a", SystemTime::now())
        };
        for _ in 0..70 {
            receiver.append(vec![big.clone()]);
        }
        let info = store.debug_info().expect("info");
        assert_eq!(info["received_total"], 70);
        assert_eq!(info["dropped_total"], 6);
        assert_eq!(info["queued_profiles"], 64);
        let text = metrics.encode().expect("encode");
        assert!(
            text.contains(r#"pyroscope_store_dropped_profiles_total{component_id="pyroscope.store.full",component_path="/",reason="queue_full"} 6"#),
            "{text}"
        );
        assert!(
            text.contains(r#"pyroscope_store_queue_profiles{component_id="pyroscope.store.full",component_path="/"} 64"#),
            "{text}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn updates_move_the_store_and_apply_the_retention() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (first, second) = (dir.path().join("one"), dir.path().join("two"));
        let (store, receiver) = build(
            "pyroscope.store.update",
            Arguments {
                path: Some(first.clone()),
                ..Arguments::default()
            },
        );
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(store.clone().run(shutdown.clone()));
        let old = SystemTime::now() - Duration::from_secs(7200);
        receiver.append(vec![profile("a", old), profile("a", SystemTime::now())]);
        wait_for("2 profiles", || stored(&store) == 2);

        // A shorter retention is applied at once, not at the next minute.
        store
            .update(Arguments {
                path: Some(first.clone()),
                retention: Duration::from_secs(3600),
                ..Arguments::default()
            })
            .expect("update");
        wait_for("retention", || stored(&store) == 1);
        assert_eq!(
            store.debug_info().expect("info")["last_retention"]["removed_by_age"],
            1
        );

        store
            .update(Arguments {
                path: Some(second.clone()),
                ..Arguments::default()
            })
            .expect("update");
        wait_for("the new path", || {
            store.db().is_some_and(|db| db.path() == second)
        });
        receiver.append(vec![profile("b", SystemTime::now())]);
        wait_for("a profile in the new store", || stored(&store) == 1);
        shutdown.cancel();
        task.await.expect("joins").expect("runs");
        assert_eq!(
            Db::open(&first)
                .expect("first")
                .stats()
                .expect("stats")
                .profiles,
            1
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_in_use_is_retried_and_a_bad_path_fails_the_build() {
        let dir = tempfile::tempdir().expect("tempdir");
        let holder = Db::open(dir.path()).expect("open");
        let (store, receiver) = build(
            "pyroscope.store.busy",
            Arguments {
                path: Some(dir.path().to_path_buf()),
                ..Arguments::default()
            },
        );
        let health = store.health().expect("unhealthy while locked");
        assert_eq!(health.state, HealthState::Unhealthy);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(store.clone().run(shutdown.clone()));
        receiver.append(vec![profile("a", SystemTime::now())]);
        std::thread::sleep(Duration::from_millis(300));
        assert!(store.db().is_none());
        drop(holder);
        wait_for("the queued profile after the store is free", || {
            stored(&store) == 1
        });
        assert!(store.health().is_none());
        shutdown.cancel();
        task.await.expect("joins").expect("runs");

        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").expect("write");
        let opts = ComponentOptions::standalone(
            "pyroscope.store.bad",
            "pyroscope.store",
            Store::initial_exports(),
        );
        let err = Store::build(
            opts,
            Arguments {
                path: Some(file),
                ..Arguments::default()
            },
        )
        .err()
        .expect("fails");
        assert!(err.to_string().contains("a-file"), "{err}");
    }

    #[test]
    fn the_default_path_is_the_components_data_directory() {
        let id = format!("pyroscope.store.default-{}", std::process::id());
        let opts = ComponentOptions::standalone(&id, "pyroscope.store", Store::initial_exports());
        let data_path = opts.data_path.clone();
        let store = Store::build(opts, Arguments::default()).expect("build");
        assert_eq!(store.db().expect("open").path(), data_path);
        assert!(data_path.join(crate::store::FILE).is_file());
        drop(store);
        std::fs::remove_dir_all(&data_path).expect("cleanup");
    }
}
