//! Shared services: what the process hands every component besides its own arguments, such as
//! the memory budget or the registry of open stores.
//!
//! A type map rather than named fields: the runtime is the lower layer and must not know the
//! services' types (the budget, the store engine). Whoever creates the controller puts them in
//! with [`Services::with`]; a component takes what it uses with [`Services::get`] at build
//! time and passes it on explicitly, so no component reaches for a process-wide global, and a
//! test can give each component its own.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::sync::Arc;

/// A map from type to one shared value of that type. Cheap to clone (one `Arc`); built once,
/// before the controller starts, and read-only afterwards.
#[derive(Clone, Default)]
pub struct Services {
    map: Arc<HashMap<TypeId, Entry>>,
}

#[derive(Clone)]
struct Entry {
    /// For `Debug`: a `TypeId` prints as an opaque number.
    name: &'static str,
    value: Arc<dyn Any + Send + Sync>,
}

impl Services {
    /// `self` with `value` added, replacing any earlier value of the same type.
    pub fn with<T: Clone + Send + Sync + 'static>(self, value: T) -> Self {
        // Copied only if another clone shares the map, which a builder chain never does.
        let mut map = Arc::unwrap_or_clone(self.map);
        map.insert(
            TypeId::of::<T>(),
            Entry {
                name: type_name::<T>(),
                value: Arc::new(value),
            },
        );
        Services { map: Arc::new(map) }
    }

    /// A clone of the value of type `T`, if one was added. Services are handles (an `Arc`
    /// inside), so the clone shares the service.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.map
            .get(&TypeId::of::<T>())?
            .value
            .downcast_ref::<T>()
            .cloned()
    }

    /// Whether no service was added.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.map.values().map(|e| e.name).collect();
        names.sort_unstable();
        f.debug_set().entries(names).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Limit(u64);

    #[derive(Clone, Default)]
    struct Counter(Arc<AtomicU64>);

    #[test]
    fn values_are_found_by_type() {
        let s = Services::default().with(Limit(7)).with(String::from("x"));
        assert_eq!(s.get::<Limit>(), Some(Limit(7)));
        assert_eq!(s.get::<String>().as_deref(), Some("x"));
        assert_eq!(s.get::<u32>(), None);
        assert!(Services::default().get::<Limit>().is_none());
        assert!(Services::default().is_empty() && !s.is_empty());
    }

    #[test]
    fn a_later_value_of_the_same_type_replaces_the_earlier() {
        let s = Services::default().with(Limit(1)).with(Limit(2));
        assert_eq!(s.get::<Limit>(), Some(Limit(2)));
    }

    #[test]
    fn clones_share_the_service() {
        let counter = Counter::default();
        let s = Services::default().with(counter.clone());
        let copy = s.clone();
        if let Some(c) = copy.get::<Counter>() {
            c.0.fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(counter.0.load(Ordering::Relaxed), 1);
        assert!(
            s.get::<Counter>()
                .is_some_and(|c| Arc::ptr_eq(&c.0, &counter.0))
        );
    }

    #[test]
    fn adding_to_a_clone_leaves_the_original_alone() {
        let base = Services::default().with(Limit(1));
        let more = base.clone().with(String::from("y"));
        assert!(base.get::<String>().is_none());
        assert_eq!(more.get::<Limit>(), Some(Limit(1)));
    }

    #[test]
    fn debug_lists_the_types() {
        let s = Services::default().with(Limit(1));
        assert!(format!("{s:?}").contains("Limit"), "{s:?}");
    }
}
