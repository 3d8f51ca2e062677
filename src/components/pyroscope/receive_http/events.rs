//! What `pyroscope.receive_http` reports, as typed events (`runtime::event`): a refused
//! request is counted (`pyroscope_receive_http_requests_total{route,status_code}` and the debug
//! info's total) and logged by one `emit`; refusing for lack of memory is counted as shed and
//! logged when it starts and when it ends.

use std::sync::atomic::Ordering;

use super::server::Shared;
use crate::budget::{Priority, Use};
use crate::runtime::event::InternalEvent;

/// A request answered with an error status.
pub(super) struct RequestRejected<'a> {
    pub shared: &'a Shared,
    pub route: &'a str,
    pub status: u16,
    pub message: &'a str,
}

impl InternalEvent for RequestRejected<'_> {
    fn emit(self) {
        let (route, status) = (self.route, self.status);
        self.shared.metrics.request(route, status);
        self.shared
            .requests_rejected
            .fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            component_id = %self.shared.id,
            route,
            status,
            error = self.message,
            "request rejected"
        );
    }
}

/// The memory budget had no room to convert a request of `need` bytes (it is refused with
/// 429). Warns when refusing starts.
pub(super) struct RequestShed<'a> {
    pub shared: &'a Shared,
    pub need: u64,
}

impl InternalEvent for RequestShed<'_> {
    fn emit(self) {
        let s = self.shared;
        s.budget.count_shed(Use::Receive, Priority::Normal);
        if !s.shedding.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                component_id = %s.id,
                need = self.need,
                used = s.budget.used(),
                limit = s.budget.limit(),
                "requests refused with 429: the memory budget is full"
            );
        }
    }
}

/// The budget had room again after requests were refused.
pub(super) struct SheddingEnded<'a> {
    pub shared: &'a Shared,
}

impl InternalEvent for SheddingEnded<'_> {
    fn emit(self) {
        if self.shared.shedding.swap(false, Ordering::Relaxed) {
            tracing::info!(
                component_id = %self.shared.id,
                "requests accepted again: the memory budget has room"
            );
        }
    }
}
