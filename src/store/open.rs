//! The stores open in this process: what `POST /api/v0/marks` records a mark in, and what
//! queries served by the running scraper read through.
//!
//! `scraper run` creates one [`OpenStores`], gives it to the components through the
//! controller's services (each `pyroscope.store` registers itself at build) and to the HTTP
//! server, so the server never reaches into a component. The registry holds weak references:
//! an entry dies with its store.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use super::Db;
use crate::sync::lock;

/// What a running store shows the registry. Implemented by `pyroscope.store`'s state.
pub trait OpenStore: Send + Sync {
    /// `pyroscope.store.<label>`.
    fn component_id(&self) -> &str;
    /// The database the store writes, when it is open (it may be waiting for a lock held by
    /// another handle).
    fn current(&self) -> Option<Arc<Db>>;
}

/// A store open in this process.
#[derive(Clone, Debug)]
pub struct RunningStore {
    /// `pyroscope.store.<label>`.
    pub component_id: String,
    pub path: PathBuf,
    pub db: Arc<Db>,
}

/// The registry of open stores. Cheap to clone; clones share it.
#[derive(Clone, Default)]
pub struct OpenStores {
    stores: Arc<Mutex<Vec<Weak<dyn OpenStore>>>>,
}

impl std::fmt::Debug for OpenStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenStores")
            .field("entries", &lock(&self.stores).len())
            .finish()
    }
}

impl OpenStores {
    /// Adds `store`; it stays listed while it is alive.
    pub fn register<S: OpenStore + 'static>(&self, store: &Arc<S>) {
        let weak: Weak<dyn OpenStore> = Arc::downgrade(store) as Weak<dyn OpenStore>;
        let mut stores = lock(&self.stores);
        stores.retain(|w| w.strong_count() > 0);
        stores.push(weak);
    }

    /// Forgets the entries of stores that are gone. A store calls it from its `Drop`, so that
    /// the list does not grow with every store a reload replaces.
    pub fn prune(&self) {
        lock(&self.stores).retain(|w| w.strong_count() > 0);
    }

    fn live(&self) -> Vec<Arc<dyn OpenStore>> {
        // Collected before use: dropping the last reference to a store while holding the lock
        // would deadlock in its `Drop`, which calls `prune`.
        let stores: Vec<Arc<dyn OpenStore>> = lock(&self.stores)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        stores
    }

    /// Records mark `name` at `at` in every running store; returns how many recorded it.
    /// Blocking (a write transaction per store, which waits for a batch being written): call
    /// it from a blocking context, e.g. `tokio::task::spawn_blocking`.
    pub fn record_mark(&self, name: &str, at: SystemTime) -> usize {
        let mut recorded = 0;
        for store in self.live() {
            let Some(db) = store.current() else {
                continue;
            };
            match db.add_mark(name, at) {
                Ok(()) => recorded += 1,
                Err(e) => {
                    tracing::warn!(component_id = %store.component_id(), mark = name, error = %e, "recording a mark failed")
                }
            }
        }
        recorded
    }

    /// The stores open now, for queries served by the running scraper: reading through the
    /// writer's own handle needs no snapshot.
    pub fn running(&self) -> Vec<RunningStore> {
        self.live()
            .into_iter()
            .filter_map(|s| {
                let db = s.current()?;
                Some(RunningStore {
                    component_id: s.component_id().to_string(),
                    path: db.path().to_path_buf(),
                    db,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A store as the registry sees it, pruning on drop like `pyroscope.store`.
    struct Fake {
        id: String,
        db: Option<Arc<Db>>,
        registry: OpenStores,
    }

    impl OpenStore for Fake {
        fn component_id(&self) -> &str {
            &self.id
        }
        fn current(&self) -> Option<Arc<Db>> {
            self.db.clone()
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.registry.prune();
        }
    }

    fn fake(registry: &OpenStores, id: &str, db: Option<Arc<Db>>) -> Arc<Fake> {
        let store = Arc::new(Fake {
            id: id.to_string(),
            db,
            registry: registry.clone(),
        });
        registry.register(&store);
        store
    }

    #[test]
    fn marks_reach_every_open_store_and_only_those() {
        let (a, b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let registry = OpenStores::default();
        let db_a = Arc::new(Db::open(a.path()).expect("open a"));
        let db_b = Arc::new(Db::open(b.path()).expect("open b"));
        let _one = fake(&registry, "pyroscope.store.a", Some(db_a.clone()));
        let two = fake(&registry, "pyroscope.store.b", Some(db_b.clone()));
        // Registered but not open (its store is locked elsewhere): skipped.
        let _closed = fake(&registry, "pyroscope.store.c", None);

        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(registry.record_mark("deploy", at), 2);
        let window = (at, at + Duration::from_secs(1));
        for db in [&db_a, &db_b] {
            assert_eq!(
                db.marks(window.0, window.1).expect("marks"),
                vec![("deploy".to_string(), at)]
            );
        }
        let mut running: Vec<String> = registry
            .running()
            .into_iter()
            .map(|r| r.component_id)
            .collect();
        running.sort();
        assert_eq!(running, ["pyroscope.store.a", "pyroscope.store.b"]);

        // A dropped store leaves the registry (and its entry is pruned).
        drop(two);
        assert_eq!(registry.record_mark("later", at), 1);
        assert_eq!(registry.running().len(), 1);
        assert_eq!(lock(&registry.stores).len(), 2);
    }

    #[test]
    fn registries_are_independent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mine, other) = (OpenStores::default(), OpenStores::default());
        let _store = fake(
            &mine,
            "pyroscope.store.x",
            Some(Arc::new(Db::open(dir.path()).expect("open"))),
        );
        assert_eq!(other.record_mark("m", SystemTime::now()), 0);
        assert!(other.running().is_empty());
        assert_eq!(mine.clone().running().len(), 1);
    }
}
