//! What `pyroscope.receive_http` reports, as typed events (`runtime::event`): a refused
//! request is counted (`pyroscope_receive_http_requests_total{route,status_code}` and the debug
//! info's total) and logged by one `emit`; refusing for lack of memory is `budget::Refusals`
//! (counted as shed, logged when it starts and when it ends).

use std::sync::atomic::Ordering;

use super::server::Shared;

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
