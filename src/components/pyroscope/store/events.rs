//! What `pyroscope.store` reports, as typed events (`runtime::event`): profiles it did not
//! store and operations that failed are counted (the component's own totals and
//! `pyroscope_store_dropped_profiles_total` / `pyroscope_store_errors_total`) and logged by one
//! `emit` each, at the level the reason calls for.

use std::sync::atomic::Ordering;

use super::Shared;
use super::metrics::{DropReason, Op};
use crate::runtime::event::InternalEvent;

/// `profiles` profiles not stored for `reason`. `detail` is the first skipped profile's
/// problem, for invalid ones.
pub(super) struct ProfilesDropped<'a> {
    pub shared: &'a Shared,
    pub reason: DropReason,
    pub profiles: usize,
    pub detail: Option<&'a str>,
}

impl InternalEvent for ProfilesDropped<'_> {
    fn emit(self) {
        let (s, n) = (self.shared, self.profiles);
        if n == 0 {
            return;
        }
        s.dropped.fetch_add(n as u64, Ordering::Relaxed);
        s.metrics.dropped(self.reason, n);
        match self.reason {
            DropReason::Unavailable => {
                tracing::warn!(component_id = %s.id, profiles = n, "store not open at shutdown, queued profiles dropped");
            }
            DropReason::MemoryBudget => {
                tracing::debug!(component_id = %s.id, profiles = n, "memory budget full: profiles not queued for the store");
            }
            DropReason::InvalidLabels | DropReason::InvalidProfile => {
                tracing::debug!(component_id = %s.id, skipped = n, reason = self.detail.unwrap_or(""), "profiles not stored");
            }
            // A full queue is visible in the queue gauge and the drop counter; a failed write
            // is logged by its `OperationFailed`.
            DropReason::QueueFull | DropReason::WriteError => {}
        }
    }
}

/// A store operation failed; `repeated` when it is the same failure as the last one (a store
/// that cannot be opened fails every couple of seconds), which is counted but not logged again.
pub(super) struct OperationFailed<'a, E: std::fmt::Display> {
    pub shared: &'a Shared,
    pub op: Op,
    pub error: &'a E,
    pub repeated: bool,
}

impl<E: std::fmt::Display> InternalEvent for OperationFailed<'_, E> {
    fn emit(self) {
        self.shared.metrics.error(self.op);
        if !self.repeated {
            tracing::warn!(component_id = %self.shared.id, operation = self.op.as_str(), error = %self.error, "store operation failed");
        }
    }
}
