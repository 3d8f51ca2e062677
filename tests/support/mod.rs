//! Shared helpers for integration tests. Each test binary uses a subset.
#![allow(dead_code)]

pub mod alloy;
pub mod child;
pub mod corpus;
pub mod ebpf;
pub mod fake_docker;
pub mod fake_kube;
pub mod fake_querier;
pub mod go;
pub mod heap_profile;
pub mod helm;
pub mod logs;
pub mod profile_server;
pub mod pyroscope_receiver;
pub mod python;
pub mod tools;
