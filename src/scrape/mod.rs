//! `pyroscope.scrape`: fetches `/debug/pprof/*` from targets on schedule, computes deltas of
//! cumulative profiles and forwards them to receivers.
//!
//! `profiling` is the `profiling_config` block, `target` turns discovered targets into scrape
//! targets (labels, URL, identity).

pub mod profiling;
pub mod target;
