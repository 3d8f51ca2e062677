//! The `pyroscope.ebpf` component: arguments in, a [`Session`] running, profiles out to
//! `forward_to`.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::args::Arguments;
use super::metrics::{ComponentMetrics, EbpfMetrics};
use super::session::{Mode, Session};
use crate::budget::Budget;
use crate::profiles::FanOut;
use crate::runtime::{BoxError, Component, ComponentOptions, Health};
use crate::sync::lock;

/// The running component.
pub struct Ebpf {
    fan_out: Arc<FanOut>,
    session: Mutex<Session>,
    unsupported: Mutex<Vec<String>>,
    _metrics: ComponentMetrics,
}

fn warn_unsupported(args: &Arguments) {
    for what in &args.unsupported {
        tracing::warn!(argument = %what, "pyroscope.ebpf argument not supported");
    }
}

impl Component for Ebpf {
    type Arguments = Arguments;

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        warn_unsupported(&args);
        let metrics = EbpfMetrics::get(&opts.metrics).component(&opts.id);
        let fan_out = Arc::new(FanOut::new(args.forward_to.clone()));
        let unsupported = args.unsupported.clone();
        let budget = opts.services.get::<Budget>().unwrap_or_default();
        let session = Session::start(args, fan_out.clone(), metrics.clone(), budget)
            .map_err(|e| format!("starting the sampling thread: {e}"))?;
        Ok(Ebpf {
            fan_out,
            session: Mutex::new(session),
            unsupported: Mutex::new(unsupported),
            _metrics: metrics,
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        warn_unsupported(&args);
        self.fan_out.set(args.forward_to.clone());
        *lock(&self.unsupported) = args.unsupported.clone();
        lock(&self.session).update(args);
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        shutdown.cancelled().await;
        // Joining waits at most one drain period plus the last collection, whose profiles are
        // handed to `forward_to` before this returns (the controller stops the receivers only
        // after their senders); off the async workers.
        let this = self.clone();
        let _ = crate::runtime::task::spawn_blocking("pyroscope.ebpf.stop", move || {
            lock(&this.session).stop()
        })
        .await;
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let status = lock(&self.session).status();
        let mut v = serde_json::to_value(status).ok()?;
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "unsupported_arguments".into(),
                serde_json::json!(*lock(&self.unsupported)),
            );
        }
        Some(v)
    }

    /// Unhealthy when no sampler runs, or when the last whole interval showed that it samples
    /// nothing of its targets or can name nothing it samples (see `super::health`).
    fn health(&self) -> Option<Health> {
        let status = lock(&self.session).status();
        match status.mode {
            Mode::Failed { error } => Some(Health::unhealthy(error)),
            // Off-CPU profiles were asked for and none will come: as loud as a CPU problem.
            _ => status
                .off_cpu
                .and_then(|o| o.error)
                .map(|e| Health::unhealthy(format!("off-CPU profiling failed: {e}")))
                .or_else(|| status.findings.unhealthy.map(Health::unhealthy)),
        }
    }
}
