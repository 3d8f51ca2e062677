//! Reading profiles back: one interface over the local store (`pyroscope.store`) and a
//! Pyroscope backend's querier API, used by `scraper query`, `scraper pgo` and `scraper diff`.
//!
//! * [`selector`]: label selectors, `{service_name="x", namespace=~"otel.*"}`.
//! * [`time`]: `now-1h`, RFC 3339 and Unix times, and `FROM..TO` ranges.
//! * [`source`]: the [`source::ProfileSource`] trait, queries and marks.
//! * [`catalog`]: what a source holds (label sets, values) and "did you mean" hints.
//! * [`local`]: the source backed by a store directory.
//! * [`remote`]: the source backed by `querier.v1.QuerierService`.
//! * [`multi`]: several local stores read as one (the running scraper's explorer).
//! * [`tree`] and [`flamegraph`]: stacks by function name and Pyroscope's flame graph
//!   encodings of them, for the querier `scraper run` serves.
//! * [`stores`]: queries over the stores open in the running scraper (flame graph trees,
//!   per-profile totals, merged pprof), decoding on worker threads; [`types`]: their series'
//!   profile types as Pyroscope labels them.

pub mod catalog;
pub mod flamegraph;
pub mod local;
pub mod multi;
pub mod remote;
pub mod selector;
pub mod source;
pub mod stores;
pub mod time;
pub mod tree;
pub mod types;
