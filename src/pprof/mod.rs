//! pprof `profile.proto` support: the generated message types, our own CPU profiler (served
//! like Go's /debug/pprof/profile), and the profile core every scrape goes through:
//!
//! * [`codec`]: gzip in and out (decompression capped by [`Limits`]) and the prost-based slow
//!   path ([`decode`], [`encode`]) for tools;
//! * [`validate()`]: the structural rules Go's pprof and Pyroscope enforce;
//! * [`delta`]: client-side deltas of cumulative profiles with compact per-series state, on a
//!   zero-copy decoder (`view`);
//! * [`merge()`](merge::merge) and [`trim`]: combining profiles and fitting backend limits;
//! * [`info`]: a summary for `scraper pprof info`;
//! * [`named`]: profiles whose frames are plain names (folded text, scraper's own tasks and
//!   memory);
//! * [`stacks`]: a profile's samples read straight from its bytes, for flame graphs and totals;
//! * [`pgo`], [`pgo_edges`], [`pgo_trim`], [`pgo_assess`]: Go PGO profiles, the call graph
//!   Go's compiler reads from them, trimming them to a budget of call edges, and whether one
//!   is worth building with.
//!
//! Errors are [`PprofError`] values naming the problem; nothing here panics on input.

pub mod codec;
pub mod delta;
mod error;
pub mod info;
pub mod merge;
pub mod named;
pub mod pgo;
pub mod pgo_assess;
pub mod pgo_edges;
pub mod pgo_trim;
pub mod proto;
#[doc(hidden)]
pub mod reference;
pub mod self_profile;
pub mod stacks;
pub mod trim;
mod validate;
mod view;
mod wire;

pub use codec::{
    DEFAULT_LEVEL, DEFAULT_MAX_DECOMPRESSED, DELTA_LEVEL, Limits, decode, encode, gunzip, gzip,
};
pub use delta::{
    Cumulative, DeltaEngine, DeltaOptions, DeltaOutcome, DeltaStats, DeltaStore, ResetReason,
    SeriesState,
};
pub use error::{PprofError, WireError};
pub use merge::merge;
pub use validate::validate;
pub use view::validate_raw;

#[cfg(test)]
pub(crate) mod testutil;
