//! Sorts the top-level statements of a file into component blocks and config blocks, and reports
//! what cannot be loaded: unknown components, duplicate IDs, missing labels, unsupported blocks.

use std::collections::{HashMap, HashSet};

use super::registry::{Registration, Registry};
use crate::syntax::ast::{Block, Body, Span, Stmt};
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::suggest;

/// A component block that names a registered component.
#[derive(Clone, Debug)]
pub(crate) struct ComponentDecl<'a> {
    /// `discovery.relabel.otel`
    pub id: String,
    /// `["discovery", "relabel", "otel"]`: where the exports go in the evaluation scope.
    pub path: Vec<String>,
    pub label: String,
    pub block: &'a Block,
    pub registration: Registration,
}

#[derive(Debug, Default)]
pub(crate) struct Loaded<'a> {
    /// In file order.
    pub components: Vec<ComponentDecl<'a>>,
    pub logging: Option<&'a Block>,
    /// IDs of blocks that look like components but failed to load (unknown name, duplicate):
    /// references to them are not reported again.
    pub broken_ids: HashSet<String>,
    pub diags: Vec<Diagnostic>,
}

/// Blocks Alloy knows that configure Alloy itself or build modules; none of them work here, and
/// silently ignoring e.g. `http { tls { ... } }` would leave a user believing TLS is on, or
/// ignoring a `declare` or `import` would leave its components out.
fn unsupported_reason(name: &str) -> Option<&'static str> {
    Some(match name {
        "declare" => "custom components (declare blocks) are not supported by scraper",
        "argument" | "export" => "module arguments and exports are not supported by scraper",
        "foreach" => "foreach blocks are not supported by scraper",
        "http" => {
            "the http block (TLS and authentication of the HTTP server) is not supported by scraper"
        }
        "remotecfg" => "remote configuration (remotecfg) is not supported by scraper",
        "cluster" | "clustering" => "clustering is not supported by scraper",
        _ if name.starts_with("import.") => "modules (import blocks) are not supported by scraper",
        _ => return None,
    })
}

/// Blocks Alloy knows that change only how Alloy observes itself, so a config keeps its
/// meaning without them: accepted with a warning, in `check` and `run` alike. (Alloy's own
/// continuous-profiling example has `livedebugging {}`.)
fn ignored_reason(name: &str) -> Option<&'static str> {
    Some(match name {
        "tracing" => "the tracing block is not supported by scraper and is ignored",
        "livedebugging" => {
            "live debugging is not supported by scraper; the livedebugging block is ignored"
        }
        _ => return None,
    })
}

/// Top-level names that are not components, for "did you mean" (`loging` -> `logging`).
const CONFIG_BLOCKS: &[&str] = &[
    "logging",
    "tracing",
    "livedebugging",
    "http",
    "remotecfg",
    "declare",
    "foreach",
    "import.file",
    "import.git",
    "import.http",
    "import.string",
];

pub(crate) fn load<'a>(source: &Source, body: &'a Body, registry: &Registry) -> Loaded<'a> {
    let mut out = Loaded::default();
    let mut seen: HashMap<String, Span> = HashMap::new();
    let mut check_duplicate = |id: &str, block: &Block, diags: &mut Vec<Diagnostic>| -> bool {
        if let Some(first) = seen.get(id) {
            diags.push(Diagnostic::error(
                block.header_span(),
                format!(
                    "block {id} already declared at {}",
                    source.position(first.start as usize)
                ),
            ));
            return false;
        }
        seen.insert(id.to_string(), block.span);
        true
    };

    for stmt in &body.stmts {
        let block = match stmt {
            Stmt::Block(b) => b,
            Stmt::Attribute(a) => {
                out.diags.push(Diagnostic::error(
                    a.name.span,
                    format!("unrecognized attribute {}", a.name.name),
                ));
                continue;
            }
        };
        let name = block.full_name();
        let name_span = name_span(block);

        if name == "logging" {
            if let Some(label) = &block.label {
                out.diags.push(Diagnostic::error(
                    label.span,
                    "the logging block does not take a label",
                ));
            }
            if check_duplicate("logging", block, &mut out.diags) {
                out.logging = Some(block);
            }
            continue;
        }
        if let Some(reason) = ignored_reason(&name) {
            out.diags.push(Diagnostic::warning(name_span, reason));
            continue;
        }
        if let Some(reason) = unsupported_reason(&name) {
            out.diags.push(Diagnostic::error(name_span, reason));
            continue;
        }

        let Some(registration) = registry.get(&name) else {
            if let Some(label) = &block.label {
                out.broken_ids.insert(format!("{name}.{}", label.value));
            }
            let error = Diagnostic::error(
                name_span,
                format!(
                    "cannot find the definition of component name {name:?} ({})",
                    supported_list(registry)
                ),
            );
            let known = registry.names().chain(CONFIG_BLOCKS.iter().copied());
            out.diags.push(match suggest::did_you_mean(&name, known) {
                Some(help) => error.with_help(help),
                None => error,
            });
            continue;
        };
        let label = match &block.label {
            Some(l) if !l.value.is_empty() => l.value.clone(),
            _ => {
                out.diags.push(Diagnostic::error(
                    block.header_span(),
                    format!("component {name:?} must have a label"),
                ));
                continue;
            }
        };
        let id = format!("{name}.{label}");
        if !check_duplicate(&id, block, &mut out.diags) {
            continue;
        }
        let mut path: Vec<String> = block.name.iter().map(|i| i.name.clone()).collect();
        path.push(label.clone());
        out.components.push(ComponentDecl {
            id,
            path,
            label,
            block,
            registration: *registration,
        });
    }
    out
}

fn name_span(block: &Block) -> Span {
    match (block.name.first(), block.name.last()) {
        (Some(first), Some(last)) => first.span.to(last.span),
        _ => block.header_span(),
    }
}

fn supported_list(registry: &Registry) -> String {
    if registry.is_empty() {
        return "this build of scraper has no components".to_string();
    }
    let names: Vec<&str> = registry.names().collect();
    format!("supported components: {}", names.join(", "))
}
