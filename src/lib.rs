//! scraper: a continuous-profiling scraper configured in Alloy syntax.
//!
//! See docs/ARCHITECTURE.md for what each module owns.

pub mod budget;
pub mod cli;
pub mod cluster;
pub mod components;
pub mod diff;
pub mod gocompat;
pub mod html;
pub mod httpclient;
pub mod labels;
pub mod pprof;
pub mod profiles;
pub mod protocols;
pub mod push;
pub mod query;
pub mod relabel;
pub mod runtime;
pub mod server;
pub mod store;
pub mod sync;
pub mod syntax;
pub mod targets;
