//! Instantiating a custom component: the instance's attributes become the values of the
//! definition's `argument` blocks, its body is loaded as a level of its own, and its `export`
//! blocks become what the instance exports.

use std::collections::{HashMap, HashSet};

use crate::runtime::loader::{ComponentDecl, Expander, Kind, Level, name_span};
use crate::syntax::ast::{Attribute, Block, Body, Expr, Ident, Span, Stmt};
use crate::syntax::eval::{Scope, eval_expr};
use crate::syntax::value::Value;

/// How deeply instances may nest: a definition cannot instantiate itself (that is reported),
/// so this only bounds long chains of distinct definitions.
const MAX_DEPTH: usize = 64;

/// How many graph nodes (components, arguments, exports) and instances a config may expand
/// into: definitions instantiating the previous one twice grow as 2^n, which the depth bound
/// alone lets reach billions.
pub(crate) const MAX_NODES: usize = 10_000;

/// The instance whose definition a level is loading.
#[derive(Debug)]
pub(crate) struct Instance {
    /// The instance's attributes: argument name -> expression (in the parent's scope).
    pub attrs: HashMap<String, Expr>,
    /// The resolution scope the instance block itself is in.
    pub parent_scope: usize,
    /// The instance block's header, where missing arguments are reported.
    pub header: Span,
    /// How the parent names the instance (`profiling.feature`).
    pub local_id: String,
}

impl Expander<'_> {
    /// Expands `block`, an instance of definition `def` named `local_id` in `level`.
    pub(crate) fn instantiate(&mut self, def: usize, block: &Block, level: &Level, local_id: &str) {
        if self.exhausted {
            // Reported once, where the bound was reached; the rest is not expanded at all.
            self.out.broken[level.scope].insert(local_id.to_string());
            return;
        }
        // One resolution scope per instance, plus the nodes so far.
        if self.out.broken.len() + self.out.components.len() >= MAX_NODES {
            self.exhausted = true;
            self.error(
                block.header_span(),
                format!(
                    "the config expands into more than {MAX_NODES} components and custom component instances"
                ),
            );
            self.out.broken[level.scope].insert(local_id.to_string());
            return;
        }
        if let Some(pos) = self.stack.iter().position(|&d| d == def) {
            let names: Vec<String> = self.stack[pos..]
                .iter()
                .map(|&d| format!("declare.{}", self.defs.get(d).label))
                .collect();
            let message = if names.len() == 1 {
                format!("self reference: {}", names[0])
            } else {
                format!("cycle: {}", names.join(", "))
            };
            let at = self.defs.get(def).block.header_span();
            self.error(at, message);
            self.out.broken[level.scope].insert(local_id.to_string());
            return;
        }
        if self.stack.len() >= MAX_DEPTH {
            self.error(
                block.header_span(),
                format!("custom components nest more than {MAX_DEPTH} levels deep"),
            );
            self.out.broken[level.scope].insert(local_id.to_string());
            return;
        }
        let definition = self.defs.get(def).block.clone();
        let outer = self.defs.get(def).outer;
        let arguments: HashSet<String> = definition
            .body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Block(b) if b.full_name() == "argument" => {
                    b.label.as_ref().map(|l| l.value.clone())
                }
                _ => None,
            })
            .collect();
        let mut attrs = HashMap::new();
        for stmt in &block.body.stmts {
            match stmt {
                Stmt::Attribute(a) if arguments.contains(&a.name.name) => {
                    attrs.insert(a.name.name.clone(), a.value.clone());
                }
                Stmt::Attribute(a) => self.error(
                    a.name.span,
                    format!(
                        "Provided argument {:?} is not defined in the module",
                        a.name.name
                    ),
                ),
                Stmt::Block(b) => self.error(
                    name_span(b),
                    format!(
                        "unrecognized block name {:?}: a custom component takes only attributes",
                        b.full_name()
                    ),
                ),
            }
        }
        let global = format!("{}{local_id}", level.prefix);
        self.out.broken.push(HashSet::new());
        self.out.module_paths.push(self.defs.module_path(outer));
        let scope = self.out.broken.len() - 1;
        let defs = self
            .defs
            .new_scope(Some(outer), self.defs.module_path(outer));
        let inner = Level {
            prefix: format!("{global}/"),
            module_id: global,
            scope,
            defs,
            instance: Some(Instance {
                attrs,
                parent_scope: level.scope,
                header: block.header_span(),
                local_id: local_id.to_string(),
            }),
        };
        self.stack.push(def);
        self.register_definitions(&definition.body, defs, false);
        self.walk(&definition.body, &inner);
        self.stack.pop();
    }

    /// `argument "name" { optional = ..., default = ..., comment = ... }` for one instance.
    pub(crate) fn argument(&mut self, block: &Block, level: &Level, instance: &Instance) {
        let Some(name) = block.label.as_ref().map(|l| l.value.clone()) else {
            return;
        };
        let mut optional = false;
        let mut default = None;
        for stmt in &block.body.stmts {
            match stmt {
                Stmt::Attribute(a) if a.name.name == "optional" => {
                    match eval_expr(&a.value, &Scope::stdlib()) {
                        Ok(Value::Bool(b)) => optional = b,
                        Ok(other) => self.error(
                            a.value.span,
                            format!("optional should be bool, got {}", other.ty().as_str()),
                        ),
                        Err(d) => self.out.diags.push(d),
                    }
                }
                Stmt::Attribute(a) if a.name.name == "default" => default = Some(a.value.clone()),
                Stmt::Attribute(a) if a.name.name == "comment" => {}
                Stmt::Attribute(a) => self.error(
                    a.name.span,
                    format!("unrecognized attribute name {:?}", a.name.name),
                ),
                Stmt::Block(b) => self.error(
                    name_span(b),
                    format!("unrecognized block name {:?}", b.full_name()),
                ),
            }
        }
        let key = format!("argument.{name}");
        let (value, resolves_in) = match instance.attrs.get(&name) {
            Some(expr) => (Some(expr.clone()), instance.parent_scope),
            None if optional => (default, level.scope),
            None => {
                self.error(
                    instance.header,
                    format!("missing required argument {name:?} to module"),
                );
                self.out.broken[level.scope].insert(key);
                return;
            }
        };
        let body = Body {
            stmts: value.map(value_stmt).into_iter().collect(),
        };
        self.out.components.push(ComponentDecl {
            id: format!("{}{key}", level.prefix),
            path: vec!["argument".to_string(), name.clone()],
            key,
            label: name,
            block: Block {
                body,
                ..block.clone()
            },
            kind: Kind::Argument,
            visible_in: level.scope,
            resolves_in,
            module_path: self.out.module_paths[resolves_in].clone(),
            module_id: level.module_id.clone(),
        });
    }

    /// `export "name" { value = ... }` for one instance: `<instance>.name` to its parent.
    pub(crate) fn export(&mut self, block: &Block, level: &Level, instance: &Instance) {
        let Some(name) = block.label.as_ref().map(|l| l.value.clone()) else {
            return;
        };
        let mut has_value = false;
        for stmt in &block.body.stmts {
            match stmt {
                Stmt::Attribute(a) if a.name.name == "value" => has_value = true,
                Stmt::Attribute(a) => self.error(
                    a.name.span,
                    format!("unrecognized attribute name {:?}", a.name.name),
                ),
                Stmt::Block(b) => self.error(
                    name_span(b),
                    format!("unrecognized block name {:?}", b.full_name()),
                ),
            }
        }
        if !has_value {
            self.error(block.header_span(), "missing required attribute \"value\"");
        }
        let key = format!("{}.{name}", instance.local_id);
        self.out.components.push(ComponentDecl {
            id: format!("{}export.{name}", level.prefix),
            path: key.split('.').map(str::to_string).collect(),
            key,
            label: name,
            block: block.clone(),
            kind: Kind::Export,
            visible_in: instance.parent_scope,
            resolves_in: level.scope,
            module_path: self.out.module_paths[level.scope].clone(),
            module_id: level.module_id.clone(),
        });
    }
}

/// `value = <expr>`, the body an argument node evaluates.
fn value_stmt(expr: Expr) -> Stmt {
    Stmt::Attribute(Attribute {
        name: Ident {
            name: "value".to_string(),
            span: expr.span,
        },
        span: expr.span,
        value: expr,
    })
}
