//! Reading profiles back: one interface over the local store (`pyroscope.store`) and a
//! Pyroscope backend's querier API, used by `scraper query`, `scraper pgo` and `scraper diff`.
//!
//! * [`selector`]: label selectors, `{service_name="x", namespace=~"otel.*"}`.
//! * [`time`]: `now-1h`, RFC 3339 and Unix times, and `FROM..TO` ranges.
//! * [`source`]: the [`source::ProfileSource`] trait, queries and marks.
//! * [`catalog`]: what a source holds (label sets, values) and "did you mean" hints.
//! * [`local`]: the source backed by a store directory.
//! * [`remote`]: the source backed by `querier.v1.QuerierService`.
//! * [`buckets`]: a window cut into time buckets, each merged: the parts of `scraper diff`'s
//!   statistics, for the CLI and the explorer alike.
//! * [`pgo`]: what `scraper pgo` reads: a range's busiest windows, and a label's values that
//!   split a query into workloads.
//! * [`tree`] and [`flamegraph`]: stacks by function name and Pyroscope's flame graph
//!   encodings of them, for the querier `scraper run` serves.
//! * [`stores`]: the stores open in the running scraper read as one, for its querier API and
//!   explorer (flame graph trees and per-profile totals decoded on worker threads, and a
//!   [`source::ProfileSource`] for merged pprof, marks and series); [`types`]: their series'
//!   profile types as Pyroscope labels them.

pub mod buckets;
pub mod catalog;
pub mod flamegraph;
pub mod local;
pub mod pgo;
pub mod remote;
pub mod selector;
pub mod source;
pub mod stores;
pub mod time;
pub mod tree;
pub mod types;
