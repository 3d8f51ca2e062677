//! The Kubernetes API as the components and services that watch it use it: which API server
//! to talk to and with what credentials (`client`), and client-go's list+watch loop with every
//! request bounded (`watcher`). Shared by `discovery.kubernetes` and the cluster service's
//! EndpointSlice membership, so both ride out a misbehaving API server the same way.

pub mod client;
pub mod watcher;

pub use client::{Built, ClientError};
pub use watcher::{Backoff, Failure, FailureReason, Selectors, Timeouts, WatchEvent};
