//! The names an expression can see. Component exports are stored as nested objects under their
//! dotted names, so adding and removing one must merge into and prune what other components and
//! the standard library already put there.

use std::collections::{BTreeMap, HashMap};

use crate::syntax::stdlib;
use crate::syntax::value::Value;

/// The variables visible to expressions: the standard library plus whatever the runtime adds
/// (component exports as nested objects).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    vars: HashMap<String, Value>,
}

impl Scope {
    /// An empty scope: not even the standard library.
    pub fn new() -> Self {
        Scope::default()
    }

    /// The standard library: `sys`, `constants`, `string`, `encoding`, `array`, `convert`, `file`,
    /// `coalesce`, and the deprecated top-level aliases (`env`, `concat`, ...).
    pub fn stdlib() -> Self {
        Scope {
            vars: stdlib::identifiers()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// Adds or replaces a top-level name.
    pub fn set(&mut self, name: &str, value: Value) {
        self.vars.insert(name.to_string(), value);
    }

    /// Removes a top-level name, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.vars.remove(name)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.vars.get(name)
    }

    /// Follows a path of object keys from a top-level name (`["discovery", "relabel", "x"]`).
    pub fn lookup_path(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut cur = self.vars.get(*first)?;
        for key in rest {
            match cur {
                Value::Object(m) => cur = m.get(*key)?,
                _ => return None,
            }
        }
        Some(cur)
    }

    /// Stores `value` under a dotted path, creating or merging nested objects on the way:
    /// `insert_path(&["discovery", "relabel", "otel"], exports)` makes
    /// `discovery.relabel.otel` resolve to `exports` while keeping `discovery.relabel.other` and
    /// anything else already under `discovery`. A non-object found on the way (a stdlib
    /// function, say) is replaced by an object: a component named like a stdlib namespace wins.
    /// An empty path does nothing.
    pub fn insert_path(&mut self, path: &[&str], value: Value) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.vars.insert((*first).to_string(), value);
            return;
        }
        let slot = self
            .vars
            .entry((*first).to_string())
            .or_insert_with(|| Value::Object(BTreeMap::new()));
        insert_nested(slot, rest, value);
    }

    /// Removes the value stored by [`Scope::insert_path`] at `path`, pruning objects left empty
    /// (so a deleted component does not leave `discovery = {}` behind to shadow nothing).
    pub fn remove_path(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.vars.remove(*first);
            return;
        }
        let now_empty = match self.vars.get_mut(*first) {
            Some(v) => remove_nested(v, rest),
            None => false,
        };
        if now_empty {
            self.vars.remove(*first);
            // Restore a stdlib namespace the component had shadowed.
            if let Some(std) = stdlib::identifiers().get(*first) {
                self.vars.insert((*first).to_string(), std.clone());
            }
        }
    }
}

fn insert_nested(slot: &mut Value, path: &[&str], value: Value) {
    if !matches!(slot, Value::Object(_)) {
        *slot = Value::Object(BTreeMap::new());
    }
    let Value::Object(map) = slot else {
        return;
    };
    match path {
        [] => {}
        [last] => {
            map.insert((*last).to_string(), value);
        }
        [first, rest @ ..] => {
            let next = map
                .entry((*first).to_string())
                .or_insert_with(|| Value::Object(BTreeMap::new()));
            insert_nested(next, rest, value);
        }
    }
}

/// Returns whether `slot` is an empty object after the removal.
fn remove_nested(slot: &mut Value, path: &[&str]) -> bool {
    let Value::Object(map) = slot else {
        return false;
    };
    match path {
        [] => {}
        [last] => {
            map.remove(*last);
        }
        [first, rest @ ..] => {
            if let Some(next) = map.get_mut(*first)
                && remove_nested(next, rest)
            {
                map.remove(*first);
            }
        }
    }
    map.is_empty()
}
