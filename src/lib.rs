//! scraper: a continuous-profiling scraper configured in Alloy syntax.
//!
//! See docs/ARCHITECTURE.md for what each module owns.

pub mod budget;
pub mod cli;
pub mod components;
pub mod debug;
pub mod diff;
pub mod discovery;
pub mod ebpf;
pub mod gocompat;
pub mod html;
pub mod httpclient;
pub mod otlp;
pub mod pprof;
pub mod profiles;
pub mod query;
pub mod receive;
pub mod relabel;
pub mod runtime;
pub mod scrape;
pub mod server;
pub mod store;
pub mod sync;
pub mod syntax;
pub mod write;
