//! Test-only components and helpers shared by the `runtime_*` integration tests.
//!
//! `test.pass` is a passthrough: `input` (a string) is exported as `output`, plus an `extra`
//! field that nothing has to read. Special inputs make it misbehave on purpose:
//! `fail-build` / `fail-update` make build / update fail, `drop-output` exports no `output`
//! field so that blocks reading it fail to evaluate, `exit` makes `run` return an error at once,
//! `invalid` is refused by the component's validation.

#![allow(dead_code)] // each test binary uses a different subset

pub mod module_server;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use scraper::runtime::{
    BoxError, Component, ComponentOptions, Controller, ControllerOptions, ExportsHandle,
    Registration, Registry,
};
use scraper::syntax::decode::Invalid;
use scraper::syntax::types::SecretString;
use scraper::syntax::value::{Secret, Value};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// Orders builds across all instances (and tests) of this process.
static BUILD_SEQ: AtomicU64 = AtomicU64::new(0);
/// Orders stops likewise (0: not stopped yet).
static STOP_SEQ: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Deserialize)]
pub struct PassArgs {
    pub input: String,
}

pub struct Pass {
    exports: ExportsHandle,
    pub built_seq: u64,
    /// Inputs applied: the one it was built with, then one per update.
    pub history: Mutex<Vec<String>>,
    pub updates: AtomicUsize,
    pub extra: Mutex<String>,
    pub stopped: AtomicBool,
    /// When `run` returned, in [`STOP_SEQ`] order; 0 while running.
    pub stop_seq: AtomicU64,
}

impl Pass {
    fn exports_for(input: &str, extra: &str) -> Value {
        let mut m = BTreeMap::new();
        if input != "drop-output" {
            m.insert("output".to_string(), Value::String(input.to_string()));
        }
        m.insert("extra".to_string(), Value::String(extra.to_string()));
        Value::Object(m)
    }

    fn publish(&self) -> bool {
        let input = self.last_input();
        let extra = self.extra.lock().expect("lock").clone();
        self.exports.publish(Self::exports_for(&input, &extra))
    }

    pub fn last_input(&self) -> String {
        self.history
            .lock()
            .expect("lock")
            .last()
            .cloned()
            .unwrap_or_default()
    }

    /// Changes the exports from outside, the way a discovery component reacts to the world.
    pub fn set_output(&self, input: &str) -> bool {
        self.history.lock().expect("lock").push(input.to_string());
        self.publish()
    }

    /// Changes only the `extra` export field.
    pub fn set_extra(&self, extra: &str) -> bool {
        *self.extra.lock().expect("lock") = extra.to_string();
        self.publish()
    }

    pub fn updates(&self) -> usize {
        self.updates.load(Ordering::SeqCst)
    }
}

impl Component for Pass {
    type Arguments = PassArgs;

    fn initial_exports() -> Value {
        Self::exports_for("", "")
    }

    fn validate(args: &PassArgs) -> Vec<Invalid> {
        if args.input == "invalid" {
            vec![Invalid::new("input \"invalid\" is refused").attr("input")]
        } else {
            Vec::new()
        }
    }

    fn build(opts: ComponentOptions, args: PassArgs) -> Result<Self, BoxError> {
        if args.input == "fail-build" {
            return Err("refused to build".into());
        }
        let c = Pass {
            exports: opts.exports,
            built_seq: BUILD_SEQ.fetch_add(1, Ordering::SeqCst),
            history: Mutex::new(vec![args.input]),
            updates: AtomicUsize::new(0),
            extra: Mutex::new(String::new()),
            stopped: AtomicBool::new(false),
            stop_seq: AtomicU64::new(0),
        };
        c.publish();
        Ok(c)
    }

    fn update(&self, args: PassArgs) -> Result<(), BoxError> {
        if args.input == "fail-update" {
            return Err("refused to update".into());
        }
        self.updates.fetch_add(1, Ordering::SeqCst);
        self.history.lock().expect("lock").push(args.input);
        self.publish();
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        if self.last_input() == "exit" {
            return Err("asked to exit".into());
        }
        shutdown.cancelled().await;
        self.stopped.store(true, Ordering::SeqCst);
        self.stop_seq
            .store(STOP_SEQ.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
        Ok(())
    }
}

/// `test.secret` takes a secret argument and exports it as a secret, so tests can check that
/// no view of the runtime (API, UI, health, errors, metrics) ever shows the text.
#[derive(Debug, Deserialize)]
pub struct SecretArgs {
    pub password: SecretString,
}

pub struct SecretHolder;

impl Component for SecretHolder {
    type Arguments = SecretArgs;

    fn initial_exports() -> Value {
        let mut m = BTreeMap::new();
        m.insert("token".to_string(), Value::Secret(Secret::new("")));
        Value::Object(m)
    }

    fn build(opts: ComponentOptions, args: SecretArgs) -> Result<Self, BoxError> {
        let mut m = BTreeMap::new();
        m.insert(
            "token".to_string(),
            Value::Secret(Secret::new(args.password.expose())),
        );
        opts.exports.publish(Value::Object(m));
        Ok(SecretHolder)
    }

    fn update(&self, _args: SecretArgs) -> Result<(), BoxError> {
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        shutdown.cancelled().await;
        Ok(())
    }
}

pub fn registry() -> Registry {
    Registry::new()
        .with(Registration::new::<Pass>("test.pass"))
        .with(Registration::new::<SecretHolder>("test.secret"))
}

pub fn controller(storage: &std::path::Path) -> Controller {
    let mut opts = ControllerOptions::new(registry());
    opts.storage_path = storage.to_path_buf();
    Controller::new(opts)
}

pub async fn pass(c: &Controller, id: &str) -> Arc<Pass> {
    c.instance::<Pass>(id)
        .await
        .unwrap_or_else(|| panic!("{id} is not a built test.pass"))
}

pub async fn evaluations(c: &Controller, id: &str) -> u64 {
    c.component(id)
        .await
        .unwrap_or_else(|| panic!("no component {id}"))
        .evaluations
}
