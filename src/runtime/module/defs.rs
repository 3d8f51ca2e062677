//! The custom component definitions visible at each level of a config: the `declare` blocks of
//! a body, the definitions of the modules it imports (`<import label>.<declare label>`), and
//! for a local `declare` whatever is visible around it.

use std::collections::HashMap;
use std::rc::Rc;

use crate::runtime::loader::Expander;
use crate::syntax::ast::{Block, Body, Stmt};

/// One `declare` block.
#[derive(Debug)]
pub(crate) struct Def {
    /// The declare's label, for cycle messages (`declare.a`).
    pub label: String,
    pub block: Rc<Block>,
    /// The definitions its body sees besides its own: the scope it was declared in.
    pub outer: usize,
}

#[derive(Debug, Default)]
struct DefScope {
    parent: Option<usize>,
    /// Alloy's `module_path`: the directory of the file the scope's blocks were read from,
    /// which import blocks can use to name files beside theirs.
    module_path: String,
    /// Name as used in a block (`a`, `module.a`) -> definition.
    names: HashMap<String, usize>,
    /// Labels of imports that failed (already reported): their definitions are unknown, and
    /// blocks using them are not reported again.
    failed: Vec<String>,
}

/// Arenas of definitions and of the scopes that name them.
#[derive(Debug, Default)]
pub(crate) struct Defs {
    defs: Vec<Def>,
    scopes: Vec<DefScope>,
}

impl Defs {
    pub fn new_scope(&mut self, parent: Option<usize>, module_path: String) -> usize {
        self.scopes.push(DefScope {
            parent,
            module_path,
            names: HashMap::new(),
            failed: Vec::new(),
        });
        self.scopes.len() - 1
    }

    pub fn module_path(&self, scope: usize) -> String {
        self.scopes
            .get(scope)
            .map(|s| s.module_path.clone())
            .unwrap_or_default()
    }

    pub fn get(&self, def: usize) -> &Def {
        &self.defs[def]
    }

    /// The definition `name` stands for in `scope`: the nearest one, so that a nested
    /// `declare "a"` hides an outer one.
    pub fn lookup(&self, mut scope: usize, name: &str) -> Option<usize> {
        loop {
            let s = self.scopes.get(scope)?;
            if let Some(&d) = s.names.get(name) {
                return Some(d);
            }
            scope = s.parent?;
        }
    }

    /// Whether `name` (`ns.a`) is in the namespace of an import that failed.
    pub fn in_failed_import(&self, mut scope: usize, name: &str) -> bool {
        let Some((ns, _)) = name.split_once('.') else {
            return false;
        };
        loop {
            let Some(s) = self.scopes.get(scope) else {
                return false;
            };
            if s.names
                .keys()
                .any(|n| n.split_once('.').is_some_and(|(p, _)| p == ns))
            {
                return false;
            }
            if s.failed.iter().any(|f| f == ns) {
                return true;
            }
            match s.parent {
                Some(p) => scope = p,
                None => return false,
            }
        }
    }

    /// Every name visible in `scope`, for "did you mean".
    pub fn visible_names(&self, mut scope: usize) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(s) = self.scopes.get(scope) {
            out.extend(s.names.keys().cloned());
            match s.parent {
                Some(p) => scope = p,
                None => break,
            }
        }
        out
    }

    /// The names defined in `scope` itself (not its parents), with their definitions.
    pub fn own(&self, scope: usize) -> Vec<(String, usize)> {
        self.scopes
            .get(scope)
            .map(|s| s.names.iter().map(|(n, &d)| (n.clone(), d)).collect())
            .unwrap_or_default()
    }

    fn define(&mut self, scope: usize, name: String, def: usize) -> bool {
        let names = &mut self.scopes[scope].names;
        if names.contains_key(&name) {
            return false;
        }
        names.insert(name, def);
        true
    }
}

impl Expander<'_> {
    /// Registers the `declare` blocks of `body` and the definitions of the modules it imports
    /// in `scope`. `from_http`: the body came from `import.http` (which may not import files).
    pub(crate) fn register_definitions(&mut self, body: &Body, scope: usize, from_http: bool) {
        let mut first: HashMap<String, crate::syntax::ast::Span> = HashMap::new();
        for stmt in &body.stmts {
            let Stmt::Block(block) = stmt else { continue };
            let name = block.full_name();
            if name != "declare" && !name.starts_with("import.") {
                continue;
            }
            let Some(label) = block.label.as_ref().filter(|l| !l.value.is_empty()) else {
                self.error(
                    block.header_span(),
                    format!("{name} block must have a label"),
                );
                continue;
            };
            if name == "declare" && label.value == "declare" {
                self.error(
                    block.header_span(),
                    "'declare' is not a valid label for a declare block",
                );
                continue;
            }
            let id = if name == "declare" {
                format!("declare.{}", label.value)
            } else {
                label.value.clone()
            };
            if let Some(at) = first.get(&id) {
                let message = if name == "declare" {
                    format!("block {id} already declared at {}", self.position(*at))
                } else {
                    format!("import block redefined {id}")
                };
                self.error(block.header_span(), message);
                continue;
            }
            first.insert(id, block.span);
            if name == "declare" {
                self.defs.defs.push(Def {
                    label: label.value.clone(),
                    block: Rc::new(block.clone()),
                    outer: scope,
                });
                let def = self.defs.defs.len() - 1;
                self.defs.define(scope, label.value.clone(), def);
                continue;
            }
            let Some(module) = self.import(block, scope, from_http) else {
                self.defs.scopes[scope].failed.push(label.value.clone());
                continue;
            };
            for (def_name, def) in self.defs.own(module) {
                // Nested imports of the module are its own business (`ns.inner.x` is not
                // visible from outside), as in Alloy.
                if !def_name.contains('.') {
                    self.defs
                        .define(scope, format!("{}.{def_name}", label.value), def);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(defs: &mut Defs, scope: usize, name: &str) -> usize {
        let (file, _) = crate::syntax::parser::parse_file(&format!("declare {name:?} {{}}\n"));
        let Some(Stmt::Block(block)) = file.body.stmts.into_iter().next() else {
            panic!("parse");
        };
        defs.defs.push(Def {
            label: name.to_string(),
            block: Rc::new(block),
            outer: scope,
        });
        let d = defs.defs.len() - 1;
        assert!(defs.define(scope, name.to_string(), d));
        d
    }

    /// Lookups walk outwards from a scope; the nearest definition wins; a module's scope has
    /// no parent, so it sees nothing of its importer.
    #[test]
    fn lookup_shadowing_and_module_isolation() {
        let mut defs = Defs::default();
        let root = defs.new_scope(None, String::new());
        let outer_a = def(&mut defs, root, "a");
        let b = def(&mut defs, root, "b");
        let inner = defs.new_scope(Some(root), String::new());
        let inner_a = def(&mut defs, inner, "a");
        let module = defs.new_scope(None, "/m".to_string());
        def(&mut defs, module, "c");
        defs.scopes[root].failed.push("broken".to_string());

        let cases: &[(&str, usize, &str, Option<usize>)] = &[
            ("own definition", root, "a", Some(outer_a)),
            ("nearest wins", inner, "a", Some(inner_a)),
            ("outer visible", inner, "b", Some(b)),
            ("module sees nothing outside", module, "a", None),
            ("importer does not see the module's own", root, "c", None),
            ("unknown", inner, "zzz", None),
        ];
        for (name, scope, lookup, want) in cases {
            assert_eq!(defs.lookup(*scope, lookup), *want, "{name}");
        }
        assert!(defs.in_failed_import(inner, "broken.x"));
        assert!(!defs.in_failed_import(inner, "other.x"));
        assert!(!defs.in_failed_import(module, "broken.x"));
        assert_eq!(defs.module_path(module), "/m");
    }
}
