//! Everything that can be known about a file without building a component: which blocks are
//! components, the graph, and whether every block evaluates and decodes. `scraper check` reports
//! the result; a reload applies a file only if this finds no error.

use std::collections::{BTreeSet, HashSet};

use super::component::ArgsError;
use super::graph::{self, Graph, GraphNode, Resolver};
use super::loader::{self, ComponentDecl, Kind, Loaded, argument_exports};
use super::logging::{self, LoggingConfig};
use super::registry::Registry;
use crate::syntax::ast::{Body, File, Span, Stmt};
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::{self, EvaluatedBody, Scope, Unevaluated};
use crate::syntax::value::Value;

pub(crate) struct Analysis {
    pub loaded: Loaded,
    pub graph: Graph,
    pub logging: LoggingConfig,
    /// Errors and warnings, in source order.
    pub diags: Vec<Diagnostic>,
    /// The attributes of component blocks left out of the checks, without an error, because
    /// they use exports known only once a component is built: checked by `run`, not here.
    /// Statement spans, in source order.
    pub unchecked: Vec<Span>,
}

impl Analysis {
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }
}

/// What a component exports for the purpose of evaluating its dependants, given its block
/// and, when every attribute of it evaluated in this analysis, its arguments: `None` when
/// they are unknown until the component is built with those arguments.
pub(crate) type ExportsOf<'a> =
    dyn Fn(&ComponentDecl, Option<&EvaluatedBody>) -> Option<Value> + 'a;

/// Analyses `file`. `exports_of` supplies what each component exports for the purpose of
/// evaluating its dependants: initial exports for `check`, live exports on reload, `None` when
/// they are unknown until the component is built (`Kind::exports_before_build`). Arguments
/// and exports of custom components are evaluated here, in dependency order.
///
/// An attribute that uses unknown exports (directly, or through a custom component's
/// argument or export holding them) is left out of the checks as an attribute that could not
/// be evaluated is, but without an error: its value exists only once the component is built.
/// `run` checks it then, when the block is evaluated with the real exports (an error there
/// fails the load, with the block's position); `check`, which builds nothing, cannot.
pub(crate) fn analyze(
    source: &Source,
    file: &File,
    registry: &Registry,
    base: &Scope,
    exports_of: &ExportsOf<'_>,
) -> Analysis {
    analyze_loaded(loader::load(source, &file.body, registry), base, exports_of)
}

/// [`analyze`] of a config already loaded (loading reads imported modules: `run` does it on a
/// blocking thread).
pub(crate) fn analyze_loaded(
    mut loaded: Loaded,
    base: &Scope,
    exports_of: &ExportsOf<'_>,
) -> Analysis {
    let mut diags = std::mem::take(&mut loaded.diags);

    let nodes: Vec<GraphNode> = loaded
        .components
        .iter()
        .map(|d| GraphNode {
            id: &d.id,
            key: &d.key,
            visible_in: d.visible_in,
            resolves_in: d.resolves_in,
            body: &d.block.body,
            span: d.block.header_span(),
        })
        .collect();
    diags.extend(graph::duplicate_keys(&nodes));
    let is_scope_name = |name: &str| name == MODULE_PATH || base.get(name).is_some();
    let resolvers = Resolver::per_scope(&nodes, &loaded.broken, &is_scope_name);
    let (graph, graph_diags) = graph::build(&nodes, &resolvers);
    diags.extend(graph_diags);

    let mut logging = LoggingConfig::default();
    if let (Some(block), Some(resolver)) = (&loaded.logging, resolvers.first()) {
        let (refs, unresolved) = resolver.references(&block.body, &mut diags);
        if !refs.is_empty() {
            diags.push(Diagnostic::error(
                block.header_span(),
                "the logging block cannot reference components",
            ));
        } else {
            diags.extend(eval::deprecation_warnings(&block.body, base));
            let (body, unevaluated) = eval::eval_body_partial(&block.body, base);
            let failed = report_unevaluated(unevaluated, &unresolved, &mut diags);
            if failed.is_empty() {
                match logging::decode_logging(block, &body) {
                    Ok(config) => logging = config,
                    Err(errs) => diags.extend(errs),
                }
            } else {
                diags.extend(logging::check_partial(block, &body, &failed));
            }
        }
    }

    // Every block is evaluated and decoded, even one with a bad reference: the attributes
    // that cannot be evaluated are left out, so the rest of its errors come out in the same run.
    // Dependencies first, so that arguments and exports have their values when used; blocks
    // on a cycle (already reported) come last.
    let decls = &loaded.components;
    let mut values: Vec<Option<Value>> = vec![None; decls.len()];
    // `unknown[j]`: node `j`'s exports exist only once a component is built (set when `j`'s
    // value is computed, or, for a component, asked of `exports_of`).
    let mut unknown = vec![false; decls.len()];
    // `args[j]`: component `j`'s arguments, when every attribute evaluated.
    let mut args: Vec<Option<EvaluatedBody>> = vec![None; decls.len()];
    let mut unchecked = Vec::new();
    let in_order: HashSet<usize> = graph.order.iter().copied().collect();
    let rest = (0..decls.len()).filter(|i| !in_order.contains(i));
    for i in graph.order.iter().copied().chain(rest) {
        let decl = &decls[i];
        let mut deps = Vec::with_capacity(graph.deps[i].len());
        for &j in &graph.deps[i] {
            let dep = &decls[j];
            let value = match (&values[j], dep.kind) {
                (Some(v), _) => v.clone(),
                (None, Kind::Component(_)) => {
                    exports_of(dep, args[j].as_ref()).unwrap_or_else(|| {
                        unknown[j] = true;
                        // Only so that the rest of the block evaluates; what uses it is left out.
                        dep.kind.initial_exports()
                    })
                }
                (None, kind) => kind.initial_exports(),
            };
            deps.push((dep.path.as_slice(), value));
        }
        let mut scope = scope_for(base, deps);
        scope.set(MODULE_PATH, Value::String(decl.module_path.clone()));
        diags.extend(eval::deprecation_warnings(&decl.block.body, &scope));
        let (body, unevaluated) = eval::eval_body_partial(&decl.block.body, &scope);
        let uses_unknown = references_to(&decl.block.body, &graph.deps[i], decls, &unknown);
        // An argument's or export's value is its body's: unknown if that uses unknown data. A
        // component's exports are never computed here (initial or live ones stand for them),
        // so its arguments using unknown data leave its exports as known as they were:
        // `forward_to = [pyroscope.write.w.receiver]` stays checked.
        if !matches!(decl.kind, Kind::Component(_)) {
            unknown[i] = !uses_unknown.is_empty();
        }
        let explained: Vec<Span> = graph.unresolved[i]
            .iter()
            .chain(&uses_unknown)
            .copied()
            .collect();
        let mut failed = report_unevaluated(unevaluated, &explained, &mut diags);
        let mut left_out = HashSet::new();
        attributes_containing(&decl.block.body, &uses_unknown, &mut left_out);
        let header = decl.block.header_span();
        match decl.kind {
            Kind::Component(registration) => {
                unchecked.extend(left_out.iter().copied());
                failed.extend(left_out);
                if let Err(e) = registration.validate(&body, header, &failed) {
                    diags.extend(args_diagnostics(e, header));
                }
                if failed.is_empty() {
                    args[i] = Some(body);
                }
            }
            kind => values[i] = Some(value_exports(kind, &body)),
        }
    }

    // Stable: diagnostics at the same position keep the order they were found in.
    let mut seen = HashSet::new();
    diags.retain(|d| seen.insert((d.span, d.message.clone())));
    diags.sort_by_key(|d| d.span.map_or(u32::MAX, |s| s.start));
    unchecked.sort_by_key(|s| (s.start, s.end));
    unchecked.dedup();
    Analysis {
        loaded,
        graph,
        logging,
        diags,
        unchecked,
    }
}

/// Where `body` references a node of `deps` whose exports are `unknown`. A reference belongs
/// to the dependency whose path is its longest prefix, as the graph resolved it.
fn references_to(
    body: &Body,
    deps: &BTreeSet<usize>,
    decls: &[ComponentDecl],
    unknown: &[bool],
) -> Vec<Span> {
    if !deps.iter().any(|&j| unknown[j]) {
        return Vec::new();
    }
    let mut out = Vec::new();
    body.for_each_reference(&mut |parts, span| {
        let target = deps
            .iter()
            .copied()
            .filter(|&j| {
                let path = &decls[j].path;
                path.len() <= parts.len() && path.iter().zip(parts).all(|(a, b)| a == b)
            })
            .max_by_key(|&j| decls[j].path.len());
        if target.is_some_and(|j| unknown[j]) {
            out.push(span);
        }
    });
    out
}

/// Adds to `out` the statement span of every attribute of `body` (nested blocks included)
/// that contains one of `spans`.
fn attributes_containing(body: &Body, spans: &[Span], out: &mut HashSet<Span>) {
    if spans.is_empty() {
        return;
    }
    for stmt in &body.stmts {
        match stmt {
            Stmt::Attribute(a) => {
                if spans
                    .iter()
                    .any(|r| r.start >= a.span.start && r.end <= a.span.end)
                {
                    out.insert(a.span);
                }
            }
            Stmt::Block(b) => attributes_containing(&b.body, spans, out),
        }
    }
}

/// What an argument or export node exports, given its evaluated body.
pub(crate) fn value_exports(kind: Kind, body: &EvaluatedBody) -> Value {
    let value = body
        .attribute("value")
        .map_or(Value::Null, |a| a.value.clone());
    match kind {
        Kind::Argument => argument_exports(value),
        _ => value,
    }
}

/// Alloy's name for the directory of the file a block was read from.
pub(crate) const MODULE_PATH: &str = "module_path";

/// The scope a block is evaluated in: the standard library plus the exports of the components
/// it references, each under its ID path (`discovery.relabel.otel`).
pub(crate) fn scope_for<'p>(
    base: &Scope,
    deps: impl IntoIterator<Item = (&'p [String], Value)>,
) -> Scope {
    let mut scope = base.clone();
    for (path, exports) in deps {
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        scope.insert_path(&parts, exports);
    }
    scope
}

/// Reports the attributes that could not be evaluated, except those whose failure has another
/// explanation (`explained`: where the references are that explain it, one already reported as
/// unresolvable, or one to exports unknown before a build, which is no error), and returns the
/// statement spans of all of them, for decoding to skip.
fn report_unevaluated(
    unevaluated: Vec<Unevaluated>,
    explained: &[Span],
    diags: &mut Vec<Diagnostic>,
) -> HashSet<Span> {
    let mut failed = HashSet::with_capacity(unevaluated.len());
    for u in unevaluated {
        let is_explained = explained
            .iter()
            .any(|r| r.start >= u.span.start && r.end <= u.span.end);
        if !is_explained {
            diags.push(u.error);
        }
        failed.insert(u.span);
    }
    failed
}

/// Turns an arguments error into diagnostics: decode errors carry their own positions, the rest
/// point at the block header.
pub(crate) fn args_diagnostics(err: ArgsError, header: Span) -> Vec<Diagnostic> {
    match err {
        ArgsError::Decode(diags) => diags,
        other => vec![Diagnostic::error(header, other.to_string())],
    }
}
