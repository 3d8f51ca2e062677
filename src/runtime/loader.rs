//! Sorts the statements of a config into component blocks and config blocks, expanding custom
//! components (`declare`, `import.*`: see `runtime::module`) into the blocks they stand for,
//! and reports what cannot be loaded: unknown components, duplicate IDs, missing labels,
//! unsupported blocks.
//!
//! The result is flat: every block of every custom component instance is one entry with a
//! global ID (`profiling.feature/pyroscope.ebpf.ebpf_pods`, Alloy's `module/local` style), the
//! resolution scope its references are looked up in, and the scope it is visible in.

use std::collections::{HashMap, HashSet};

use super::module::defs::Defs;
use super::module::imports::{ImportCache, Watch};
use super::module::instance::Instance;
use super::module::lastgood::LastGood;
use super::registry::{Registration, Registry};
use crate::syntax::ast::{Block, Body, Span, Stmt};
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::suggest;
use crate::syntax::value::Value;

/// What a graph node is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// A registered (built-in) component.
    Component(Registration),
    /// `argument "x"` of a custom component instance: its value (the instance's attribute, or
    /// the default), exported as `{ value = ... }` under `argument.x` inside the module.
    Argument,
    /// `export "x"` of a custom component instance: its `value`, visible to the instance's
    /// parent as `<instance>.x`.
    Export,
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Component(r) => r.name(),
            Kind::Argument => "argument",
            Kind::Export => "export",
        }
    }

    pub fn initial_exports(&self) -> Value {
        match self {
            Kind::Component(r) => r.initial_exports(),
            Kind::Argument => argument_exports(Value::Null),
            Kind::Export => Value::Null,
        }
    }

    /// What dependants can be checked against before the node is built: its initial exports,
    /// or `None` when those would stand for data only the built component has (see
    /// `Component::EXPORTS_KNOWN_BEFORE_BUILD`).
    pub fn exports_before_build(&self) -> Option<Value> {
        match self {
            Kind::Component(r) if !r.exports_known_before_build() => None,
            kind => Some(kind.initial_exports()),
        }
    }
}

/// `argument.x`'s exports for a value.
pub(crate) fn argument_exports(value: Value) -> Value {
    Value::Object([("value".to_string(), value)].into_iter().collect())
}

/// One node of the flat graph.
#[derive(Clone, Debug)]
pub(crate) struct ComponentDecl {
    /// Global and unique: `discovery.relabel.otel`, or inside a custom component instance
    /// `profiling.feature/discovery.relabel.otel` (nested instances add a `/` each).
    pub id: String,
    /// How blocks of the scope it is visible in name it: `discovery.relabel.otel`,
    /// `argument.targets`, or for an export the instance and the export: `profiling.feature.out`.
    pub key: String,
    /// `key` split at dots: where the exports go in the evaluation scope.
    pub path: Vec<String>,
    pub label: String,
    pub block: Block,
    pub kind: Kind,
    /// The resolution scope (0: the config itself, then one per custom component instance)
    /// where `key` names this node.
    pub visible_in: usize,
    /// The resolution scope the block's own references are looked up in.
    pub resolves_in: usize,
    /// Alloy's `module_path` for the block's expressions: the directory of the file the
    /// scope `resolves_in` was read from.
    pub module_path: String,
    /// The instance this node belongs to (`profiling.feature`), empty at the top level.
    pub module_id: String,
}

#[derive(Debug)]
pub(crate) struct Loaded {
    /// The config's files followed by every imported module file, so that positions inside
    /// imported files render with their own names.
    pub source: Source,
    /// In file order, instances' blocks where the instance is.
    pub components: Vec<ComponentDecl>,
    pub logging: Option<Block>,
    /// Per resolution scope, keys of blocks that failed to load (unknown name, duplicate):
    /// references to them are not reported again.
    pub broken: Vec<HashSet<String>>,
    /// Per resolution scope, its `module_path`.
    pub module_paths: Vec<String>,
    pub diags: Vec<Diagnostic>,
    /// Imported files and URLs to poll for changes.
    pub watches: Vec<Watch>,
}

/// Blocks Alloy knows that configure Alloy itself; none of them work here, and silently
/// ignoring e.g. `http { tls { ... } }` would leave a user believing TLS is on.
fn unsupported_reason(name: &str) -> Option<&'static str> {
    Some(match name {
        "foreach" => "foreach blocks are not supported by scraper",
        "http" => {
            "the http block (TLS and authentication of the HTTP server) is not supported by scraper"
        }
        "remotecfg" => "remote configuration (remotecfg) is not supported by scraper",
        "cluster" | "clustering" => "clustering is not supported by scraper",
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

/// Where a body is being loaded: the top level, or the definition of a custom component for
/// one instance.
pub(super) struct Level {
    /// Prepended to local IDs to make global ones: empty, or `<instance id>/`.
    pub prefix: String,
    pub module_id: String,
    /// Resolution scope of the body's blocks.
    pub scope: usize,
    /// The custom component definitions visible here (an index into [`Defs`]).
    pub defs: usize,
    pub instance: Option<Instance>,
}

/// Walks a config and the custom components it instantiates.
pub(super) struct Expander<'r> {
    pub registry: &'r Registry,
    /// The files of [`Loaded::source`], to which imported files are appended.
    pub files: Vec<(String, String)>,
    pub out: Loaded,
    pub defs: Defs,
    pub imports: ImportCache,
    /// Definitions being instantiated, outermost first: a definition found again on this
    /// stack instantiates itself.
    pub stack: Vec<usize>,
    /// What each imported file and URL held when last read, for when it cannot be read again.
    pub last_good: &'r LastGood,
    /// Set when the expansion reached its bound: nothing more is instantiated.
    pub exhausted: bool,
}

/// Loads a config with nothing to fall back to when an import cannot be read (`check`).
pub(crate) fn load(source: &Source, body: &Body, registry: &Registry) -> Loaded {
    load_with(source, body, registry, &LastGood::default())
}

/// Loads a config; an import that cannot be read again uses what `last_good` kept of it.
pub(crate) fn load_with(
    source: &Source,
    body: &Body,
    registry: &Registry,
    last_good: &LastGood,
) -> Loaded {
    let files = source
        .files()
        .map(|(name, range)| (name.to_string(), source.text[range].to_string()))
        .collect();
    let mut ex = Expander {
        registry,
        files,
        out: Loaded {
            source: source.clone(),
            components: Vec::new(),
            logging: None,
            broken: vec![HashSet::new()],
            module_paths: vec![config_dir(source)],
            diags: Vec::new(),
            watches: Vec::new(),
        },
        defs: Defs::default(),
        imports: ImportCache::default(),
        stack: Vec::new(),
        last_good,
        exhausted: false,
    };
    let root = ex.defs.new_scope(None, config_dir(source));
    ex.register_definitions(body, root, false);
    let level = Level {
        prefix: String::new(),
        module_id: String::new(),
        scope: 0,
        defs: root,
        instance: None,
    };
    ex.walk(body, &level);
    // A definition instantiated twice reports the problems of its body twice.
    let mut seen = HashSet::new();
    ex.out
        .diags
        .retain(|d| seen.insert((d.span, d.message.clone())));
    ex.out
}

impl Expander<'_> {
    /// Loads the blocks of `body` other than `declare` and `import.*` (see
    /// [`Expander::register_definitions`]).
    pub(super) fn walk(&mut self, body: &Body, level: &Level) {
        let mut seen: HashMap<String, Span> = HashMap::new();
        for stmt in &body.stmts {
            let block = match stmt {
                Stmt::Block(b) => b,
                Stmt::Attribute(a) => {
                    self.out.diags.push(Diagnostic::error(
                        a.name.span,
                        format!("unrecognized attribute {}", a.name.name),
                    ));
                    continue;
                }
            };
            let name = block.full_name();
            let name_span = name_span(block);
            if name == "declare" || name.starts_with("import.") {
                continue;
            }
            if name == "logging" {
                self.logging(block, level, &mut seen);
                continue;
            }
            if name == "argument" || name == "export" {
                match &level.instance {
                    Some(instance) => {
                        if self.labelled(block, &name, &mut seen).is_some() {
                            if name == "argument" {
                                self.argument(block, level, instance);
                            } else {
                                self.export(block, level, instance);
                            }
                        }
                    }
                    None => self.error(
                        name_span,
                        format!("{name} blocks only allowed inside a module"),
                    ),
                }
                continue;
            }
            if let Some(reason) = ignored_reason(&name) {
                self.out.diags.push(Diagnostic::warning(name_span, reason));
                continue;
            }
            if let Some(reason) = unsupported_reason(&name) {
                self.error(name_span, reason);
                continue;
            }
            if let Some(def) = self.defs.lookup(level.defs, &name) {
                if let Some(label) = self.labelled(block, &name, &mut seen) {
                    self.instantiate(def, block, level, &format!("{name}.{label}"));
                }
                continue;
            }
            let Some(registration) = self.registry.get(&name).copied() else {
                self.unknown(block, &name, level);
                continue;
            };
            let Some(label) = self.labelled(block, &name, &mut seen) else {
                continue;
            };
            let key = format!("{name}.{label}");
            let mut path: Vec<String> = block.name.iter().map(|i| i.name.clone()).collect();
            path.push(label.clone());
            self.out.components.push(ComponentDecl {
                id: format!("{}{key}", level.prefix),
                key,
                path,
                label,
                block: block.clone(),
                kind: Kind::Component(registration),
                visible_in: level.scope,
                resolves_in: level.scope,
                module_path: self.out.module_paths[level.scope].clone(),
                module_id: level.module_id.clone(),
            });
        }
    }

    pub(super) fn error(&mut self, span: Span, message: impl Into<String>) {
        self.out.diags.push(Diagnostic::error(span, message));
    }

    /// Where an earlier block sits, for "already declared" messages.
    pub(super) fn position(&self, span: Span) -> String {
        self.out.source.position(span.start as usize)
    }

    fn logging(&mut self, block: &Block, level: &Level, seen: &mut HashMap<String, Span>) {
        if level.instance.is_some() {
            self.error(
                name_span(block),
                "logging block not allowed inside a module",
            );
            return;
        }
        if let Some(label) = &block.label {
            self.error(label.span, "the logging block does not take a label");
        }
        if self.unique("logging", block, seen) {
            self.out.logging = Some(block.clone());
        }
    }

    /// The block's label, if it has one and its ID is not taken; reports otherwise.
    fn labelled(
        &mut self,
        block: &Block,
        name: &str,
        seen: &mut HashMap<String, Span>,
    ) -> Option<String> {
        let label = match &block.label {
            Some(l) if !l.value.is_empty() => l.value.clone(),
            _ => {
                self.error(
                    block.header_span(),
                    format!("component {name:?} must have a label"),
                );
                return None;
            }
        };
        self.unique(&format!("{name}.{label}"), block, seen)
            .then_some(label)
    }

    fn unique(&mut self, id: &str, block: &Block, seen: &mut HashMap<String, Span>) -> bool {
        if let Some(first) = seen.get(id) {
            let message = format!("block {id} already declared at {}", self.position(*first));
            self.error(block.header_span(), message);
            return false;
        }
        seen.insert(id.to_string(), block.span);
        true
    }

    fn unknown(&mut self, block: &Block, name: &str, level: &Level) {
        if let Some(label) = &block.label {
            self.out.broken[level.scope].insert(format!("{name}.{}", label.value));
        }
        if self.defs.in_failed_import(level.defs, name) {
            return;
        }
        let error = Diagnostic::error(
            name_span(block),
            format!(
                "cannot find the definition of component name {name:?} ({})",
                supported_list(self.registry)
            ),
        );
        let custom = self.defs.visible_names(level.defs);
        let mut known: Vec<&str> = self.registry.names().collect();
        known.extend(CONFIG_BLOCKS.iter().copied());
        known.extend(custom.iter().map(String::as_str));
        let error = match suggest::did_you_mean(name, known) {
            Some(help) => error.with_help(help),
            None => error,
        };
        self.out.diags.push(error);
    }
}

/// `module_path` at the top level: the config file's directory, or the config directory.
fn config_dir(source: &Source) -> String {
    let single = source.files().count() == 1 && source.files().any(|(n, _)| n == source.name);
    if !single {
        return source.name.clone();
    }
    super::module::imports::dir_of(std::path::Path::new(&source.name))
}

pub(super) fn name_span(block: &Block) -> Span {
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
