//! scraper: a continuous-profiling scraper configured in Alloy syntax.
//!
//! See docs/ARCHITECTURE.md for what each module owns.

pub mod cli;
pub mod components;
pub mod pprof;
pub mod runtime;
pub mod scrape;
pub mod server;
pub mod syntax;
