//! The component contract: what a block such as `pyroscope.scrape "default" { ... }` becomes at
//! run time.
//!
//! A component author writes an arguments struct (`Deserialize`, decoded strictly from the
//! evaluated block) and implements [`Component`] for the running type; the one line registering
//! it lives in `crate::components`. The controller only sees the object-safe [`ErasedComponent`],
//! which the blanket impl below derives from the typed trait.

use std::any::Any;
use std::collections::HashSet;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::health::Health;
use super::metrics::MetricsRegistry;
use super::services::Services;
use crate::sync::lock;
use crate::syntax::ast::Span;
use crate::syntax::decode::{self, Invalid};
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::EvaluatedBody;
use crate::syntax::value::Value;

/// Errors components return from `build`, `update` and `run`: anything displayable, as in
/// Vector; the controller only ever shows them to the user.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A running component.
///
/// Lifecycle: `build` after the block's first successful evaluation, then `run` on its own task
/// until `shutdown` is cancelled (the block was removed, or the process is stopping). `update`
/// is called from the controller whenever the block re-evaluates to different arguments, possibly
/// while `run` is in progress, so state shared between them needs interior mutability.
pub trait Component: Send + Sync + Sized + 'static {
    /// The block's contents. Decoding is strict: unknown attributes and blocks are errors.
    type Arguments: DeserializeOwned + Send + 'static;

    /// What other blocks see when they reference this component before it has been built (or if
    /// building failed): every export field with its zero value, e.g. `{ targets = [] }`, so
    /// that `discovery.x.y.targets` evaluates instead of failing on a missing field.
    fn initial_exports() -> Value {
        Value::Object(Default::default())
    }

    /// Whether [`Component::initial_exports`] can stand for the exports when dependants are
    /// checked before this component is built. False for a component whose `build` reads its
    /// exports from outside the config (a Kubernetes ConfigMap): until it is built they are
    /// unknown, so the analysis of a load and `scraper check` leave out the attributes that
    /// use them rather than judge them against empty values (`runtime::analyze`).
    const EXPORTS_KNOWN_BEFORE_BUILD: bool = true;

    /// Checks the decoded arguments further than their types can: values that parse but
    /// cannot work (an empty or malformed endpoint URL), settings that exclude each other.
    /// No side effects (no files, network or ports): `scraper check` calls it, and every build
    /// and update runs it first, so that what `check` accepts is what `run` accepts, and the
    /// errors point at the attribute or block at fault. Problems only running can find (a port
    /// in use, a missing capability) stay in `build`.
    fn validate(args: &Self::Arguments) -> Vec<Invalid> {
        let _ = args;
        Vec::new()
    }

    /// Constructs the component. May publish real exports right away through `opts.exports`
    /// (like `pyroscope.write` exporting its receiver).
    fn build(opts: ComponentOptions, args: Self::Arguments) -> Result<Self, BoxError>;

    /// Applies new arguments. Never called with arguments equal to the current ones. On error the
    /// component must keep working with its previous arguments.
    fn update(&self, args: Self::Arguments) -> Result<(), BoxError>;

    /// The component's main loop. Returning (with or without an error) marks it `exited`.
    fn run(
        self: Arc<Self>,
        shutdown: CancellationToken,
    ) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// Extra state for the web UI (`debugInfo`), e.g. a scrape component's targets.
    fn debug_info(&self) -> Option<serde_json::Value> {
        None
    }

    /// Health the component reports about itself (e.g. "last push failed"); combined with the
    /// controller's evaluation and run health, the least healthy one wins.
    fn health(&self) -> Option<Health> {
        None
    }
}

/// What the controller hands a component at build time.
#[derive(Clone, Debug)]
pub struct ComponentOptions {
    /// `discovery.relabel.otel`: the block name plus label.
    pub id: String,
    /// `discovery.relabel`: the registered component name.
    pub name: &'static str,
    /// `<storage.path>/<id>`: where the component may keep state across restarts. Not created
    /// in advance; components that need it create it.
    pub data_path: PathBuf,
    pub exports: ExportsHandle,
    pub metrics: MetricsRegistry,
    /// The process's shared services (the memory budget, the registry of open stores...):
    /// taken here at build and passed on explicitly rather than reached through globals.
    pub services: Services,
}

impl ComponentOptions {
    /// Options for exercising a component in a unit test, without a controller: exports are
    /// kept (see [`ExportsHandle::current`]) but reach no other component, and there are no
    /// services (components fall back to their defaults, e.g. an unlimited budget).
    pub fn standalone(id: &str, name: &'static str, initial_exports: Value) -> Self {
        ComponentOptions {
            id: id.to_string(),
            name,
            data_path: std::env::temp_dir().join(id),
            exports: ExportsHandle::detached(id, initial_exports),
            metrics: MetricsRegistry::new(),
            services: Services::default(),
        }
    }
}

/// The current exports of one component instance. Shared by the component's [`ExportsHandle`] and
/// the controller, which reads it to build the scope of dependent blocks.
pub(crate) struct ExportsCell {
    pub(crate) id: String,
    value: Mutex<Value>,
}

impl ExportsCell {
    pub(crate) fn new(id: &str, initial: Value) -> Arc<Self> {
        Arc::new(ExportsCell {
            id: id.to_string(),
            value: Mutex::new(initial),
        })
    }

    pub(crate) fn get(&self) -> Value {
        lock(&self.value).clone()
    }
}

/// Tells the controller that a component's exports changed. The cell identifies the instance, so
/// a notification from a component that has since been removed or replaced is ignored.
pub(crate) struct ExportsChanged {
    pub(crate) cell: Arc<ExportsCell>,
}

/// Counts published changes not yet fully processed, so tests and reloads can wait until the
/// graph has settled.
pub(crate) type PendingCounter = Arc<std::sync::atomic::AtomicUsize>;

/// How a component publishes its exports.
#[derive(Clone)]
pub struct ExportsHandle {
    cell: Arc<ExportsCell>,
    notify: Option<(mpsc::UnboundedSender<ExportsChanged>, PendingCounter)>,
}

impl std::fmt::Debug for ExportsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportsHandle")
            .field("id", &self.cell.id)
            .finish_non_exhaustive()
    }
}

impl ExportsHandle {
    pub(crate) fn new(
        cell: Arc<ExportsCell>,
        tx: mpsc::UnboundedSender<ExportsChanged>,
        pending: PendingCounter,
    ) -> Self {
        ExportsHandle {
            cell,
            notify: Some((tx, pending)),
        }
    }

    fn detached(id: &str, initial: Value) -> Self {
        ExportsHandle {
            cell: ExportsCell::new(id, initial),
            notify: None,
        }
    }

    /// Replaces the exports. Dependent blocks are re-evaluated only if the new value differs
    /// (deep equality) from the current one; returns whether it did.
    pub fn publish(&self, exports: Value) -> bool {
        {
            let mut current = lock(&self.cell.value);
            if *current == exports {
                return false;
            }
            *current = exports;
        }
        if let Some((tx, pending)) = &self.notify {
            pending.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let event = ExportsChanged {
                cell: self.cell.clone(),
            };
            // The controller is gone (shutting down): nobody is left to re-evaluate.
            if tx.send(event).is_err() {
                pending.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        true
    }

    /// The exports last published (or the initial ones).
    pub fn current(&self) -> Value {
        self.cell.get()
    }
}

/// Why arguments could not be applied to a component.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgsError {
    /// Rendered by the controller, which has the source text for positions.
    #[error("decoding configuration")]
    Decode(Vec<Diagnostic>),
    #[error("building component: {0}")]
    Build(BoxError),
    #[error("updating component: {0}")]
    Update(BoxError),
    #[error("component panicked: {0}")]
    Panicked(String),
}

/// The object-safe view of a [`Component`] that the controller stores.
pub(crate) trait ErasedComponent: Send + Sync + 'static {
    fn update_body(&self, body: &EvaluatedBody, block_span: Span) -> Result<(), ArgsError>;
    fn run_boxed(
        self: Arc<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>>;
    fn erased_debug_info(&self) -> Option<serde_json::Value>;
    fn erased_health(&self) -> Option<Health>;
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<C: Component> ErasedComponent for C {
    fn update_body(&self, body: &EvaluatedBody, block_span: Span) -> Result<(), ArgsError> {
        let args = decode_args::<C>(body, block_span)?;
        // A panicking component must not take the controller (and every other component) down.
        match std::panic::catch_unwind(AssertUnwindSafe(|| Component::update(self, args))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ArgsError::Update(e)),
            Err(panic) => Err(ArgsError::Panicked(panic_message(&panic))),
        }
    }

    fn run_boxed(
        self: Arc<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            match AssertUnwindSafe(Component::run(self, shutdown))
                .catch_unwind()
                .await
            {
                Ok(result) => result,
                Err(panic) => Err(format!("component panicked: {}", panic_message(&panic)).into()),
            }
        })
    }

    fn erased_debug_info(&self) -> Option<serde_json::Value> {
        Component::debug_info(self)
    }

    fn erased_health(&self) -> Option<Health> {
        Component::health(self)
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// Decodes and validates a block's arguments: what `check`, `build` and `update` all go
/// through.
pub(crate) fn decode_args<C: Component>(
    body: &EvaluatedBody,
    block_span: Span,
) -> Result<C::Arguments, ArgsError> {
    let args = decode::from_body_at::<C::Arguments>(body, block_span).map_err(ArgsError::Decode)?;
    let invalid = C::validate(&args);
    if invalid.is_empty() {
        Ok(args)
    } else {
        Err(ArgsError::Decode(Invalid::locate_all(
            &invalid, body, block_span,
        )))
    }
}

/// [`decode_args`] for `scraper check`, reporting every error of the block at once: the
/// arguments are decoded with the statements at fault left out, and validated as far as that
/// is meaningful. `unevaluated`: statement spans of attributes that could not be evaluated
/// (their errors are already reported).
///
/// When something was left out, its default stands in for it, and a complaint about the
/// default would be about something the user did not write: then only validation errors about
/// attributes that were decoded as written are kept (not those about a block as a whole).
pub(crate) fn check_args<C: Component>(
    body: &EvaluatedBody,
    block_span: Span,
    unevaluated: &HashSet<Span>,
) -> Result<(), ArgsError> {
    let decoded = decode::from_body_lenient::<C::Arguments>(body, block_span, unevaluated);
    let mut diags = decoded.errors;
    if let Some(args) = decoded.value {
        let complete = diags.is_empty() && decoded.skipped.is_empty();
        // Validation numbers the blocks the value holds, which lacks the blocks left out.
        let seen = decode::without_skipped_blocks(body, &decoded.skipped);
        for invalid in C::validate(&args) {
            let written_as_decoded = invalid.attribute_statement(&seen).is_some_and(|stmt| {
                !decoded
                    .skipped
                    .iter()
                    .any(|s| s.start <= stmt.start && stmt.end <= s.end)
            });
            if complete || written_as_decoded {
                diags.push(invalid.locate(&seen, block_span));
            }
        }
    }
    if diags.is_empty() {
        Ok(())
    } else {
        diags.sort_by_key(|d| d.span.map_or(u32::MAX, |s| s.start));
        Err(ArgsError::Decode(diags))
    }
}

pub(crate) fn build_erased<C: Component>(
    opts: ComponentOptions,
    body: &EvaluatedBody,
    block_span: Span,
) -> Result<Arc<dyn ErasedComponent>, ArgsError> {
    let args = decode_args::<C>(body, block_span)?;
    match std::panic::catch_unwind(AssertUnwindSafe(|| C::build(opts, args))) {
        Ok(Ok(c)) => Ok(Arc::new(c)),
        Ok(Err(e)) => Err(ArgsError::Build(e)),
        Err(panic) => Err(ArgsError::Panicked(panic_message(&panic))),
    }
}

fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}
