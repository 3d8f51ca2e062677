//! Applying a config file: analyse it completely first (touching nothing), then swap it in.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::node::Node;
use super::{ComponentFailure, Inner, LoadError, State, wait_for_exit};
use crate::runtime::analyze::{Analysis, analyze_loaded};
use crate::runtime::loader;
use crate::syntax::diag::{Diagnostic, Diagnostics, Source};
use crate::syntax::parser::parse_source;

impl Inner {
    pub(super) async fn apply(&self, source: Source) -> Result<(), LoadError> {
        *crate::sync::lock(&self.last_applied) = Some(source.clone());
        let result = self.apply_inner(source).await;
        match &result {
            Ok(()) => {
                self.ctl.last_load_successful.set(1);
                self.record_load(None);
            }
            Err(e) => {
                self.ctl.last_load_successful.set(0);
                self.ctl.load_failures.inc();
                self.record_load(Some(e.to_string()));
            }
        }
        result
    }

    /// Remembers a load's outcome for [`super::Controller::last_load`].
    pub(super) fn record_load(&self, error: Option<String>) {
        *crate::sync::lock(&self.last_load) = Some(crate::runtime::LoadOutcome {
            at: std::time::SystemTime::now(),
            error,
        });
    }

    async fn apply_inner(&self, source: Source) -> Result<(), LoadError> {
        // Parsing and loading read imported modules (files, URLs): off the async threads.
        let registry = self.registry.clone();
        let parsed = source.clone();
        let last_good = self.last_good.clone();
        let loaded = crate::runtime::task::spawn_blocking("controller.load_config", move || {
            let (file, parse_diags) = parse_source(&parsed);
            if parse_diags.iter().any(Diagnostic::is_error) {
                return Err(parse_diags);
            }
            Ok((
                loader::load_with(&parsed, &file.body, &registry, &last_good),
                parse_diags,
            ))
        })
        .await
        .map_err(|e| {
            LoadError::Invalid(Diagnostics {
                source: source.clone(),
                items: vec![Diagnostic::unspanned(format!("loading the config: {e}"))],
            })
        })?;
        let (loaded, parse_diags) = match loaded {
            Ok(loaded) => loaded,
            Err(items) => return Err(LoadError::Invalid(Diagnostics { source, items })),
        };

        let mut state = self.state.lock().await;
        // Dependants of a component that survives the reload are checked against its live
        // exports; new components can only offer their initial ones, or none when their
        // exports are read at build (remote.kubernetes.*): the attributes using those are
        // checked by the evaluation in `commit`, after the component was built and has read
        // them, as in Alloy, whose dependants are evaluated after the component's first read.
        // Such a component's live exports stand only for the arguments they were read with:
        // the new block must evaluate to the arguments it runs with. Comparing blocks would
        // not do: after a failed update the node has the new block but the old arguments and
        // data, and the same block can evaluate to other arguments (a module's argument).
        let analysis = {
            let nodes = &state.nodes;
            analyze_loaded(loaded, &self.base_scope, &|decl, args| {
                let before_build = decl.kind.exports_before_build();
                match nodes.get(&decl.id) {
                    Some(n) if n.name() == decl.kind.name() => {
                        let current = before_build.is_some()
                            || (n.instance().is_some() && args.is_some() && n.args() == args);
                        current.then(|| n.exports.get())
                    }
                    _ => before_build,
                }
            })
        };
        let source = analysis.loaded.source.clone();
        let mut items = parse_diags;
        items.extend(analysis.diags.iter().cloned());
        if analysis.has_errors() {
            return Err(LoadError::Invalid(Diagnostics { source, items }));
        }
        for warning in &items {
            tracing::warn!("{}", source.short(warning));
        }
        *crate::sync::lock(&self.watches) = Some(analysis.loaded.watches.clone());
        self.commit(&mut state, source, &analysis).await
    }

    async fn commit(
        &self,
        state: &mut State,
        source: Source,
        analysis: &Analysis,
    ) -> Result<(), LoadError> {
        self.ctl.evaluating.set(1);
        let decls = &analysis.loaded.components;
        let wanted: HashMap<&str, &'static str> = decls
            .iter()
            .map(|d| (d.id.as_str(), d.kind.name()))
            .collect();

        // Stop what is gone first, so that a replacement never runs next to its predecessor
        // (two scrapers of the same target, two listeners on one port).
        let removed: Vec<String> = state
            .nodes
            .iter()
            .filter(|(id, n)| wanted.get(id.as_str()) != Some(&n.name()))
            .map(|(id, _)| id.clone())
            .collect();
        let mut stopping = Vec::new();
        for id in removed {
            if let Some(mut node) = state.nodes.remove(&id) {
                tracing::info!(component_id = %id, "stopping removed component");
                node.cancel.cancel();
                if let Some(task) = node.task.take() {
                    stopping.push((id, task));
                }
            }
        }
        wait_for_exit(stopping).await;

        for decl in decls {
            match state.nodes.get_mut(&decl.id) {
                // Same ID and component: keep the running instance (and its state); the new
                // block is picked up by the evaluation below.
                Some(node) => {
                    node.block = decl.block.clone();
                    node.kind = decl.kind;
                    node.module_path = decl.module_path.clone();
                }
                None => {
                    state
                        .nodes
                        .insert(decl.id.clone(), Node::new(decl, &self.shutdown));
                }
            }
        }
        for node in state.nodes.values_mut() {
            node.references.clear();
            node.referenced_by.clear();
        }
        for (from, deps) in analysis.graph.deps.iter().enumerate() {
            for &to in deps {
                let (from_id, to_id) = (&decls[from].id, &decls[to].id);
                if let Some(n) = state.nodes.get_mut(from_id) {
                    n.references.insert(to_id.clone());
                }
                if let Some(n) = state.nodes.get_mut(to_id) {
                    n.referenced_by.insert(from_id.clone());
                }
            }
        }
        state.order = analysis
            .graph
            .order
            .iter()
            .map(|&i| decls[i].id.clone())
            .collect();
        state.position = state
            .order
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i))
            .collect();
        state.source = Arc::new(source);

        if let Some(logging) = &self.logging
            && let Err(e) = logging.apply(analysis.logging)
        {
            tracing::warn!(error = %e, "could not apply the logging block");
        }

        tracing::info!("starting complete graph evaluation");
        let mut failures = Vec::new();
        for id in state.order.clone() {
            if let Err(f) = state.evaluate(self, &id) {
                failures.push(ComponentFailure {
                    rendered: state.source.render_all(&f.diags),
                    message: f.message,
                    id,
                });
            }
        }
        tracing::info!(
            components = state.order.len(),
            "finished complete graph evaluation"
        );
        self.ctl.evaluating.set(0);
        self.ready.store(true, Ordering::SeqCst);
        state.update_running_metric(&self.ctl);
        if failures.is_empty() {
            Ok(())
        } else {
            Err(LoadError::Components(failures))
        }
    }
}
