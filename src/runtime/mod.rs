//! The component runtime: the [`Component`] contract, the [`Registry`] of component types, and
//! the [`Controller`] that loads a config file into a graph of running components and keeps it
//! up to date as exports change and the file is reloaded.
//!
//! Reading order: `component` (the trait) and `services` (what the process shares with every
//! component through its build options), `registry`, `loader` and `graph` (from a file to a
//! graph), `analyze` (everything checkable without running anything), `controller` (running it).

mod analyze;
mod check;
pub mod component;
pub mod controller;
pub mod event;
pub mod failing;
mod graph;
pub mod health;
pub mod info;
mod loader;
mod logfmt;
pub mod logging;
pub mod metrics;
mod module;
pub mod process_metrics;
pub mod registry;
pub mod services;
pub mod size;
pub mod source;
pub mod task;

pub use check::{Checked, check, check_config, check_report, check_source};
pub use component::{BoxError, Component, ComponentOptions, ExportsHandle};
pub use controller::{ComponentFailure, Controller, ControllerOptions, LoadError};
pub use health::{Health, HealthState};
pub use info::{ComponentInfo, LoadOutcome};
pub use metrics::MetricsRegistry;
pub use registry::{Registration, Registry};
pub use services::Services;
