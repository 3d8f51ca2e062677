//! Everything that can be known about a file without building a component: which blocks are
//! components, the graph, and whether every block evaluates and decodes. `scraper check` reports
//! the result; a reload applies a file only if this finds no error.

use super::component::ArgsError;
use super::graph::{self, Graph, GraphNode, Resolver};
use super::loader::{self, ComponentDecl, Loaded};
use super::logging::{self, LoggingConfig};
use super::registry::Registry;
use crate::syntax::ast::{File, Span};
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::{self, Scope};
use crate::syntax::value::Value;

pub(crate) struct Analysis<'a> {
    pub loaded: Loaded<'a>,
    pub graph: Graph,
    pub logging: LoggingConfig,
    /// Errors and warnings, in source order.
    pub diags: Vec<Diagnostic>,
}

impl Analysis<'_> {
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }
}

/// Analyses `file`. `exports_of` supplies what each component exports for the purpose of
/// evaluating its dependants: initial exports for `check`, live exports on reload.
pub(crate) fn analyze<'a>(
    source: &Source,
    file: &'a File,
    registry: &Registry,
    base: &Scope,
    exports_of: &dyn Fn(&ComponentDecl<'_>) -> Value,
) -> Analysis<'a> {
    let mut loaded = loader::load(source, &file.body, registry);
    let mut diags = std::mem::take(&mut loaded.diags);

    let nodes: Vec<GraphNode> = loaded
        .components
        .iter()
        .map(|d| GraphNode {
            id: &d.id,
            body: &d.block.body,
            span: d.block.header_span(),
        })
        .collect();
    let is_scope_name = |name: &str| base.get(name).is_some();
    let resolver = Resolver::new(&nodes, &loaded.broken_ids, &is_scope_name);
    let (graph, graph_diags) = graph::build(&nodes, &resolver);
    diags.extend(graph_diags);

    let mut logging = LoggingConfig::default();
    if let Some(block) = loaded.logging {
        let (refs, incomplete) = resolver.references(&block.body, &mut diags);
        if !refs.is_empty() {
            diags.push(Diagnostic::error(
                block.header_span(),
                "the logging block cannot reference components",
            ));
        }
        if refs.is_empty() && !incomplete {
            diags.extend(eval::deprecation_warnings(&block.body, base));
            match eval::eval_body(&block.body, base)
                .and_then(|body| logging::decode_logging(block, &body))
            {
                Ok(config) => logging = config,
                Err(errs) => diags.extend(errs),
            }
        }
    }

    for (i, decl) in loaded.components.iter().enumerate() {
        if graph.unresolved[i] {
            continue;
        }
        let scope = scope_for(
            base,
            graph.deps[i].iter().map(|&j| {
                let dep = &loaded.components[j];
                (dep.path.as_slice(), exports_of(dep))
            }),
        );
        diags.extend(eval::deprecation_warnings(&decl.block.body, &scope));
        match eval::eval_body(&decl.block.body, &scope) {
            Ok(body) => {
                if let Err(e) = decl.registration.validate(&body, decl.block.header_span()) {
                    diags.extend(args_diagnostics(e, decl.block.header_span()));
                }
            }
            Err(errs) => diags.extend(errs),
        }
    }

    // Stable: diagnostics at the same position keep the order they were found in.
    diags.sort_by_key(|d| d.span.map_or(u32::MAX, |s| s.start));
    Analysis {
        loaded,
        graph,
        logging,
        diags,
    }
}

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

/// Turns an arguments error into diagnostics: decode errors carry their own positions, the rest
/// point at the block header.
pub(crate) fn args_diagnostics(err: ArgsError, header: Span) -> Vec<Diagnostic> {
    match err {
        ArgsError::Decode(diags) => diags,
        other => vec![Diagnostic::error(header, other.to_string())],
    }
}
