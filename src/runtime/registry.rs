//! The table from component names (`pyroscope.scrape`) to their implementations.
//!
//! The product's table is built in exactly one place, `crate::components::builtin()`; tests build
//! their own with [`Registry::with`] to inject test-only components.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use super::component::{self, ArgsError, Component, ComponentOptions, ErasedComponent};
use crate::syntax::ast::Span;
use crate::syntax::eval::EvaluatedBody;
use crate::syntax::value::Value;

type BuildFn =
    fn(ComponentOptions, &EvaluatedBody, Span) -> Result<Arc<dyn ErasedComponent>, ArgsError>;
type ValidateFn = fn(&EvaluatedBody, Span, &HashSet<Span>) -> Result<(), ArgsError>;

/// One component type: its name and the monomorphised entry points the controller needs.
#[derive(Clone, Copy)]
pub struct Registration {
    name: &'static str,
    build: BuildFn,
    validate: ValidateFn,
    initial_exports: fn() -> Value,
    exports_known_before_build: bool,
}

impl Registration {
    /// Registers `C` under `name`, a dot-separated block name such as `discovery.relabel`.
    pub fn new<C: Component>(name: &'static str) -> Self {
        debug_assert!(
            !name.is_empty() && name.split('.').all(|p| !p.is_empty()),
            "invalid component name {name:?}"
        );
        Registration {
            name,
            build: component::build_erased::<C>,
            validate: component::check_args::<C>,
            initial_exports: C::initial_exports,
            exports_known_before_build: C::EXPORTS_KNOWN_BEFORE_BUILD,
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn build(
        &self,
        opts: ComponentOptions,
        body: &EvaluatedBody,
        span: Span,
    ) -> Result<Arc<dyn ErasedComponent>, ArgsError> {
        (self.build)(opts, body, span)
    }

    /// Decodes and validates the arguments without building anything (`scraper check`,
    /// reload dry runs). `unevaluated`: statement spans of attributes that could not be
    /// evaluated (see `component::check_args`).
    pub(crate) fn validate(
        &self,
        body: &EvaluatedBody,
        span: Span,
        unevaluated: &HashSet<Span>,
    ) -> Result<(), ArgsError> {
        (self.validate)(body, span, unevaluated)
    }

    pub(crate) fn initial_exports(&self) -> Value {
        (self.initial_exports)()
    }

    /// See [`Component::EXPORTS_KNOWN_BEFORE_BUILD`].
    pub(crate) fn exports_known_before_build(&self) -> bool {
        self.exports_known_before_build
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, Default)]
pub struct Registry {
    components: BTreeMap<&'static str, Registration>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a component type. Registering the same name twice is a programming error.
    pub fn with(mut self, registration: Registration) -> Self {
        let previous = self.components.insert(registration.name, registration);
        assert!(
            previous.is_none(),
            "component {:?} registered twice",
            registration.name
        );
        self
    }

    pub fn get(&self, name: &str) -> Option<&Registration> {
        self.components.get(name)
    }

    /// Registered names, sorted (used in "unknown component" errors).
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.components.keys().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }
}
