//! The one Prometheus registry of the process, shared by the controller and every component.
//!
//! prometheus-client cannot unregister metrics and writes one `# TYPE` block per registration, so
//! two instances of a component registering the same name would produce an invalid exposition.
//! Components therefore register their metric *families* once per component type, through
//! [`MetricsRegistry::get_or_register`], and tell instances apart with the `component_id` label
//! (see [`component_labels`]); an instance removes its own series when it exits.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use prometheus_client::encoding::text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The label set Alloy puts on component metrics: `component_id` plus `component_path`.
pub type Labels = Vec<(String, String)>;

/// Labels for the component with global ID `component_id`: as Alloy, the ID local to its
/// module and the module's path, `/` at the top level and `/<instance>` inside a custom
/// component instance (`app.one/pyroscope.scrape.app` -> `pyroscope.scrape.app`, `/app.one`).
pub fn component_labels(component_id: &str) -> Labels {
    let (path, local) = match component_id.rsplit_once('/') {
        Some((module, local)) => (format!("/{module}"), local),
        None => ("/".to_string(), component_id),
    };
    vec![
        ("component_id".to_string(), local.to_string()),
        ("component_path".to_string(), path),
    ]
}

/// A cheaply cloneable handle on the shared registry.
#[derive(Clone, Default)]
pub struct MetricsRegistry {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    registry: Mutex<Registry>,
    /// Metric sets already registered, by type, so each is registered exactly once.
    sets: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for MetricsRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsRegistry").finish_non_exhaustive()
    }
}

impl MetricsRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the process-wide instance of the metric set `T`, registering it with `init` the
    /// first time any component of that type asks for it.
    pub fn get_or_register<T, F>(&self, init: F) -> Arc<T>
    where
        T: Any + Send + Sync,
        F: FnOnce(&mut Registry) -> T,
    {
        let mut sets = lock(&self.inner.sets);
        if let Some(existing) = sets.get(&TypeId::of::<T>())
            && let Ok(set) = existing.clone().downcast::<T>()
        {
            return set;
        }
        let set = Arc::new(init(&mut lock(&self.inner.registry)));
        sets.insert(TypeId::of::<T>(), set.clone());
        set
    }

    /// Adds a collector asked for its metrics at each encoding (`process_*`, build info).
    pub fn register_collector(&self, collector: Box<dyn prometheus_client::collector::Collector>) {
        lock(&self.inner.registry).register_collector(collector);
    }

    /// The exposition in OpenMetrics text format (what `/metrics` serves).
    pub fn encode(&self) -> Result<String, fmt::Error> {
        let mut out = String::new();
        text::encode(&mut out, &lock(&self.inner.registry))?;
        Ok(out)
    }
}

/// A counter family: its name and help, registered once per process by [`InstanceCounter`].
pub trait CounterFamily: Send + Sync + 'static {
    const NAME: &'static str;
    const HELP: &'static str;
}

/// The registered family of `F` (keyed by type in [`MetricsRegistry::get_or_register`]).
struct Registered<F>(Family<Labels, Counter>, PhantomData<F>);

/// One component instance's series of a counter family: the shape of the failure counters of
/// the components that poll (created at 0, so an alert on its rate sees the first failure;
/// removed when the instance exits).
pub struct InstanceCounter {
    family: Family<Labels, Counter>,
    labels: Labels,
}

impl InstanceCounter {
    /// The series `labels` (usually [`component_labels`], plus any the family adds) of `F`.
    pub fn new<F: CounterFamily>(registry: &MetricsRegistry, labels: Labels) -> Self {
        let registered = registry.get_or_register(|r: &mut Registry| {
            let family = Family::default();
            r.register(F::NAME, F::HELP, family.clone());
            Registered::<F>(family, PhantomData)
        });
        let family = registered.0.clone();
        drop(family.get_or_create(&labels));
        InstanceCounter { family, labels }
    }

    pub fn inc(&self) {
        self.family.get_or_create(&self.labels).inc();
    }

    /// Removes this instance's series (the component exited).
    pub fn remove(&self) {
        self.family.remove(&self.labels);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Set {
        hits: Family<Labels, Counter>,
    }

    #[test]
    fn registers_a_set_once_and_labels_instances() {
        let reg = MetricsRegistry::new();
        let mk = |r: &mut Registry| {
            let hits = Family::<Labels, Counter>::default();
            r.register("test_hits", "Hits.", hits.clone());
            Set { hits }
        };
        let a = reg.get_or_register(mk);
        let b = reg.get_or_register(mk);
        assert!(Arc::ptr_eq(&a, &b));
        a.hits.get_or_create(&component_labels("test.a.x")).inc();
        b.hits
            .get_or_create(&component_labels("test.a.y"))
            .inc_by(2);
        let text = reg.encode().expect("encode");
        assert_eq!(
            text.matches("# TYPE test_hits counter").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(r#"test_hits_total{component_id="test.a.y",component_path="/"} 2"#),
            "{text}"
        );
        a.hits
            .get_or_create(&component_labels("app.one/inner.x/test.a.z"))
            .inc();
        let text = reg.encode().expect("encode");
        assert!(
            text.contains(
                r#"test_hits_total{component_id="test.a.z",component_path="/app.one/inner.x"} 1"#
            ),
            "{text}"
        );
    }

    struct Polls;
    impl CounterFamily for Polls {
        const NAME: &'static str = "test_poll_failures";
        const HELP: &'static str = "Failed polls.";
    }

    #[test]
    fn instance_counters_start_at_zero_share_one_family_and_go_with_their_instance() {
        let reg = MetricsRegistry::new();
        let a = InstanceCounter::new::<Polls>(&reg, component_labels("test.a.x"));
        let b = InstanceCounter::new::<Polls>(&reg, component_labels("test.a.y"));
        b.inc();
        b.inc();
        let text = reg.encode().expect("encode");
        assert_eq!(
            text.matches("# TYPE test_poll_failures counter").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(
                r#"test_poll_failures_total{component_id="test.a.x",component_path="/"} 0"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"test_poll_failures_total{component_id="test.a.y",component_path="/"} 2"#
            ),
            "{text}"
        );
        a.remove();
        let text = reg.encode().expect("encode");
        assert!(!text.contains(r#"component_id="test.a.x""#), "{text}");
    }
}
