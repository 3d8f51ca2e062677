//! The `discovery.*` components: targets in, targets out.
//!
//! A target is a set of labels (`list(map(string))` in Alloy); `__address__` and the other `__`
//! labels tell a scrape component where and how to scrape, the rest become the profile's
//! labels. Every component here takes targets and/or produces them under an export field, so
//! they chain: `discovery.kubernetes` → `discovery.relabel` → `pyroscope.scrape`. Targets
//! travel between components as `crate::targets` capsules.
//!
//! * [`docker`]: `discovery.docker`, container ports from the Docker Engine API (Prometheus'
//!   docker_sd).
//! * [`file`]: `discovery.file`, targets from JSON or YAML files (Prometheus' file_sd).
//! * [`http`]: `discovery.http`, targets from an HTTP endpoint (Prometheus' http_sd).
//! * [`kubernetes`]: `discovery.kubernetes`, targets from the Kubernetes API with Prometheus'
//!   `__meta_kubernetes_*` labels.
//! * [`process`]: `discovery.process`, one target per local process from `/proc`.
//! * [`relabel`]: `discovery.relabel`, the relabel engine (`crate::relabel`) applied to a
//!   target list.
//! * [`sample`]: `discovery.sample`, at most N (or a fraction of the) pods of each workload,
//!   chosen by a stable hash and kept while they exist.

pub mod docker;
pub mod file;
pub mod http;
pub mod kubernetes;
pub mod process;
pub mod relabel;
pub mod sample;
