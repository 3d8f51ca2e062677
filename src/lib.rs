//! scraper: a continuous-profiling scraper configured in Alloy syntax.
//!
//! See docs/ARCHITECTURE.md for what each module owns.

pub mod pprof;
pub mod syntax;
