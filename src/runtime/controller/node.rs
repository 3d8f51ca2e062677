//! One component block in the running graph: its current block, instance, last good arguments,
//! exports and health.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::runtime::analyze::value_exports;
use crate::runtime::component::{
    ArgsError, ComponentOptions, ErasedComponent, ExportsCell, ExportsChanged, ExportsHandle,
    PendingCounter,
};
use crate::runtime::health::{Health, HealthState, least_healthy};
use crate::runtime::info::{ComponentInfo, HealthInfo};
use crate::runtime::loader::{ComponentDecl, Kind};
use crate::runtime::metrics::MetricsRegistry;
use crate::runtime::services::Services;
use crate::sync::lock;
use crate::syntax::ast::Block;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::{self, EvaluatedBody, Scope, value_to_json_redacted};

/// Why a block could not be applied: a one-line message (health, logs) and the diagnostics
/// behind it, with positions (rendered with carets when `run` fails to start).
#[derive(Debug)]
pub(crate) struct EvalFailure {
    pub message: String,
    pub diags: Vec<Diagnostic>,
}

/// What building a component needs from the controller.
pub(super) struct BuildContext<'a> {
    pub source: &'a Source,
    pub storage_path: &'a Path,
    pub metrics: &'a MetricsRegistry,
    pub services: &'a Services,
    pub events: &'a mpsc::UnboundedSender<ExportsChanged>,
    pub pending: &'a PendingCounter,
}

pub(super) struct Node {
    pub id: String,
    /// Scope path of the exports: the name parts plus the label.
    pub path: Vec<String>,
    pub label: String,
    /// The custom component instance the node belongs to; empty at the top level.
    pub module_id: String,
    /// `module_path` for the block's expressions.
    pub module_path: String,
    pub kind: Kind,
    pub block: Block,
    pub exports: Arc<ExportsCell>,
    instance: Option<Arc<dyn ErasedComponent>>,
    /// The arguments of the last successful build or update.
    args: Option<EvaluatedBody>,
    eval_health: Health,
    run_health: Arc<Mutex<Health>>,
    pub cancel: CancellationToken,
    pub task: Option<JoinHandle<()>>,
    pub references: BTreeSet<String>,
    pub referenced_by: BTreeSet<String>,
    pub evaluations: u64,
}

impl Node {
    pub fn new(decl: &ComponentDecl, parent: &CancellationToken) -> Self {
        let created = Health::new(HealthState::Unknown, "component created");
        Node {
            id: decl.id.clone(),
            path: decl.path.clone(),
            label: decl.label.clone(),
            module_id: decl.module_id.clone(),
            module_path: decl.module_path.clone(),
            kind: decl.kind,
            block: decl.block.clone(),
            exports: ExportsCell::new(&decl.id, decl.kind.initial_exports()),
            instance: None,
            args: None,
            eval_health: created.clone(),
            run_health: Arc::new(Mutex::new(created)),
            cancel: parent.child_token(),
            task: None,
            references: BTreeSet::new(),
            referenced_by: BTreeSet::new(),
            evaluations: 0,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    pub fn instance(&self) -> Option<&Arc<dyn ErasedComponent>> {
        self.instance.as_ref()
    }

    /// The arguments of the last successful build or update: what the instance runs with.
    pub fn args(&self) -> Option<&EvaluatedBody> {
        self.args.as_ref()
    }

    /// Evaluates the block in `scope`, then builds the component (first success) or updates it
    /// (arguments changed). On failure the component keeps running with its previous arguments
    /// and is marked unhealthy; the error is returned for the caller to report.
    pub fn evaluate(&mut self, scope: &Scope, cx: &BuildContext<'_>) -> Result<(), EvalFailure> {
        self.evaluations += 1;
        let result = self.evaluate_inner(scope, cx);
        self.eval_health = match &result {
            Ok(()) => Health::healthy("component evaluated"),
            Err(f) => Health::unhealthy(format!("component evaluation failed: {}", f.message)),
        };
        result
    }

    fn evaluate_inner(&mut self, scope: &Scope, cx: &BuildContext<'_>) -> Result<(), EvalFailure> {
        let decoding = |diags: Vec<Diagnostic>| {
            let lines: Vec<String> = diags.iter().map(|d| cx.source.short(d)).collect();
            EvalFailure {
                message: format!("decoding configuration: {}", lines.join("; ")),
                diags,
            }
        };
        let body = eval::eval_body(&self.block.body, scope).map_err(decoding)?;
        let registration = match self.kind {
            Kind::Component(registration) => registration,
            // An argument or export: its value is what it exports, and publishing a different
            // one re-evaluates the blocks that use it.
            kind => {
                let handle =
                    ExportsHandle::new(self.exports.clone(), cx.events.clone(), cx.pending.clone());
                handle.publish(value_exports(kind, &body));
                self.args = Some(body);
                return Ok(());
            }
        };
        // Errors of building or updating are about the block as a whole: they point at its
        // header, so `run` shows where the failing component is, like `check` does.
        let header = self.block.header_span();
        let render = |e: ArgsError| match e {
            ArgsError::Decode(diags) => decoding(diags),
            other => {
                let d = Diagnostic::error(header, other.to_string());
                EvalFailure {
                    message: cx.source.short(&d),
                    diags: vec![d],
                }
            }
        };
        match &self.instance {
            None => {
                let opts = ComponentOptions {
                    id: self.id.clone(),
                    name: registration.name(),
                    data_path: cx.storage_path.join(&self.id),
                    exports: ExportsHandle::new(
                        self.exports.clone(),
                        cx.events.clone(),
                        cx.pending.clone(),
                    ),
                    metrics: cx.metrics.clone(),
                    services: cx.services.clone(),
                };
                let span = component_span(&self.id);
                let instance = span
                    .in_scope(|| registration.build(opts, &body, self.block.header_span()))
                    .map_err(render)?;
                self.args = Some(body);
                self.start(instance.clone());
                self.instance = Some(instance);
            }
            Some(instance) => {
                // Unchanged arguments: skip the update, which may be expensive (restarting
                // discovery, re-resolving targets).
                if self.args.as_ref() == Some(&body) {
                    return Ok(());
                }
                component_span(&self.id)
                    .in_scope(|| instance.update_body(&body, self.block.header_span()))
                    .map_err(render)?;
                self.args = Some(body);
            }
        }
        Ok(())
    }

    fn start(&mut self, instance: Arc<dyn ErasedComponent>) {
        let run_health = self.run_health.clone();
        *lock(&run_health) = Health::healthy("started component");
        let token = self.cancel.clone();
        let task = async move {
            let (state, message) = match instance.run_boxed(token).await {
                Ok(()) => {
                    tracing::info!("component exited");
                    (
                        HealthState::Exited,
                        "component shut down cleanly".to_string(),
                    )
                }
                Err(e) => {
                    tracing::error!(error = %e, "component exited with an error");
                    (
                        HealthState::Exited,
                        format!("component shut down with error: {e}"),
                    )
                }
            };
            *lock(&run_health) = Health::new(state, message);
        };
        self.task = Some(tokio::spawn(task.instrument(component_span(&self.id))));
    }

    pub fn health(&self) -> Health {
        // Arguments and exports have no task: their evaluation is all there is to them.
        if !matches!(self.kind, Kind::Component(_)) {
            return self.eval_health.clone();
        }
        let mut reports = vec![self.eval_health.clone(), lock(&self.run_health).clone()];
        if let Some(h) = self.instance.as_ref().and_then(|i| i.erased_health()) {
            reports.push(h);
        }
        least_healthy(reports).unwrap_or_else(|| self.eval_health.clone())
    }

    pub fn info(&self, details: bool) -> ComponentInfo {
        let health = self.health();
        let (arguments, exports, debug_info) = if details {
            (
                self.args.as_ref().map(EvaluatedBody::to_json_redacted),
                Some(value_to_json_redacted(&self.exports.get())),
                self.instance.as_ref().and_then(|i| i.erased_debug_info()),
            )
        } else {
            (None, None, None)
        };
        ComponentInfo {
            name: self.name().to_string(),
            kind: "block",
            local_id: self.id.clone(),
            module_id: self.module_id.clone(),
            label: self.label.clone(),
            references_to: self.references.iter().cloned().collect(),
            referenced_by: self.referenced_by.iter().cloned().collect(),
            health: HealthInfo::from(&health),
            original: String::new(),
            arguments,
            exports,
            debug_info,
            live_debugging_enabled: false,
            evaluations: self.evaluations,
        }
    }
}

/// Every log line a component writes carries its ID, as Alloy's do.
fn component_span(id: &str) -> tracing::Span {
    tracing::info_span!("component", component_path = %"/", component_id = %id)
}
