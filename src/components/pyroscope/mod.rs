//! The `pyroscope.*` components: producers of profiles (`scrape`, `ebpf`, `receive_http`),
//! filters (`relabel`, `enrich`) and consumers (`write`, `store`, `debug`). They hand profiles to each
//! other only through `crate::profiles::Receiver` exports.

pub mod debug;
pub mod ebpf;
pub mod enrich;
pub mod receive_http;
pub mod relabel;
pub mod scrape;
pub mod store;
pub mod write;
