//! The embedded profile store engine: a redb database of profiles indexed by series (label
//! set) and time, with marks, retention by age and size, and an integrity check. It knows no
//! component: `pyroscope.store` (`crate::components::pyroscope::store`) writes through it, and
//! `crate::query::local` reads through it.
//!
//! Modules: [`db`] the engine (its public API is what queries use), `keys` the on-disk
//! layout, `retention`, `integrity`, `snapshot` (consistent reads beside a live writer),
//! `open` the registry of the stores open in this process ([`OpenStores`]).

pub mod db;
mod error;
mod integrity;
mod keys;
mod open;
mod retention;
mod snapshot;

pub use self::db::{Appended, Db, FILE, Mode, Series, Stats, Visit};
pub use self::error::StoreError;
pub use self::integrity::{Integrity, RedbCheck};
pub use self::open::{OpenStore, OpenStores, RunningStore};
pub use self::retention::{Removed, size_budget};
