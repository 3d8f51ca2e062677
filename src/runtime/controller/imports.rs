//! Reloading when an imported module changes: after every load, one task watches the files and
//! URLs the config imported (see `module::watch`) and applies the config again when one of them
//! changed. A module that no longer loads leaves the running graph as it was; the error is
//! logged and recorded as the latest load's, as for a broken config file. Applies are
//! serialised by `Inner::apply_lock`, so that a reload triggered here and one asked for by the
//! user never interleave.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Inner, LoadError};
use crate::runtime::module::watch::wait_for_change;
use crate::syntax::diag::Source;

/// Applies `source`, then (when it was applied) watches what it imported instead of what the
/// previous config imported.
pub(super) async fn apply_and_watch(inner: &Arc<Inner>, source: Source) -> Result<(), LoadError> {
    let _serial = inner.apply_lock.lock().await;
    let result = inner.apply(source).await;
    restart_watch(inner);
    result
}

/// Replaces the watch task when the latest apply got as far as knowing what it imports.
fn restart_watch(inner: &Arc<Inner>) {
    if let Some(watches) = crate::sync::lock(&inner.watches).take() {
        let token = inner.shutdown.child_token();
        if let Some(previous) = crate::sync::lock(&inner.import_watch).replace(token.clone()) {
            previous.cancel();
        }
        if !watches.is_empty() {
            let weak = Arc::downgrade(inner);
            crate::runtime::task::spawn("controller.import_watch", watch(weak, watches, token));
        }
    }
}

async fn watch(
    inner: std::sync::Weak<Inner>,
    mut watches: Vec<crate::runtime::module::imports::Watch>,
    token: CancellationToken,
) {
    while let Some(changed) = wait_for_change(&mut watches, &token).await {
        let Some(inner) = inner.upgrade() else { return };
        // One apply at a time: otherwise a SIGHUP or `/-/reload` applying a new config while
        // this applies the one before could finish first and be undone by this one.
        let _serial = inner.apply_lock.lock().await;
        if token.is_cancelled() {
            // An apply made meanwhile replaced this watch (and read the modules again).
            return;
        }
        let Some(source) = crate::sync::lock(&inner.last_applied).clone() else {
            return;
        };
        tracing::info!(module = %changed, "imported module changed; applying the config again");
        let result = inner.apply(source).await;
        restart_watch(&inner);
        match result {
            Ok(()) => {}
            Err(LoadError::Invalid(d)) => tracing::error!(
                module = %changed,
                error = %LoadError::Invalid(d),
                "the changed module does not load; the running components are kept"
            ),
            Err(e) => tracing::error!(module = %changed, error = %e, "applying the config again"),
        }
        if token.is_cancelled() {
            return;
        }
    }
}
