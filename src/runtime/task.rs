//! Spawning with a name: every long-lived task and blocking job runs inside a `task` span named
//! for what it does, a child of the span it was spawned from (the component's, for work a
//! component starts). Log lines from inside carry both, so a line says which component and
//! which of its tasks wrote it, and a stuck task can be found by name in a tracing dump.
//! Tokio's own task names need `tokio_unstable`; a span needs nothing.
//!
//! Every task spawned here is also counted by name while it lives ([`live`]): what
//! `/debug/pprof/goroutine` shows of scraper, the nearest true thing to Go's goroutine profile.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;

use tokio::task::JoinHandle;
use tracing::Instrument as _;

fn span(name: &'static str) -> tracing::Span {
    let span = tracing::debug_span!("task", task = name);
    // At a level that leaves debug spans off (the default, `info`), the task span does not
    // exist and would not link the task to where it was spawned from: the task runs in that
    // span instead, so its log lines still say which component wrote them.
    if span.is_disabled() {
        tracing::Span::current()
    } else {
        span
    }
}

/// Whether a counted task is a future on the runtime or a job on the blocking pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Async,
    Blocking,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Async => "async",
            Kind::Blocking => "blocking",
        }
    }
}

/// Live tasks by name and kind. Process-wide like the tasks themselves (a task spawned by one
/// component outlives no registry handed to it); one lock per spawn and per end, never per poll.
static LIVE: Mutex<BTreeMap<(&'static str, Kind), usize>> = Mutex::new(BTreeMap::new());

/// Counts a task while it is alive: dropped when the task ends, is aborted or panics.
struct Census(&'static str, Kind);

impl Census {
    fn enter(name: &'static str, kind: Kind) -> Census {
        *crate::sync::lock(&LIVE).entry((name, kind)).or_default() += 1;
        Census(name, kind)
    }
}

impl Drop for Census {
    fn drop(&mut self) {
        let mut live = crate::sync::lock(&LIVE);
        if let Some(n) = live.get_mut(&(self.0, self.1)) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                live.remove(&(self.0, self.1));
            }
        }
    }
}

/// The tasks alive now: `(name, kind, count)`, by name.
pub fn live() -> Vec<(&'static str, Kind, usize)> {
    crate::sync::lock(&LIVE)
        .iter()
        .map(|(&(name, kind), &n)| (name, kind, n))
        .collect()
}

fn counted<F: Future>(name: &'static str, future: F) -> impl Future<Output = F::Output> {
    let census = Census::enter(name, Kind::Async);
    async move {
        let _census = census;
        future.await
    }
}

/// `tokio::spawn` on the current runtime, inside a span named `name`.
pub fn spawn<F>(name: &'static str, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(counted(name, future).instrument(span(name)))
}

/// [`spawn`] on a given runtime (for code that may run outside one, holding its handle).
pub fn spawn_on<F>(
    runtime: &tokio::runtime::Handle,
    name: &'static str,
    future: F,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime.spawn(counted(name, future).instrument(span(name)))
}

/// `tokio::task::spawn_blocking`, inside a span named `name`.
pub fn spawn_blocking<F, R>(name: &'static str, f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let span = span(name);
    let census = Census::enter(name, Kind::Blocking);
    tokio::task::spawn_blocking(move || {
        let _census = census;
        span.in_scope(f)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::Subscriber;
    use tracing::span::{Attributes, Id};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
    use tracing_subscriber::registry::LookupSpan;

    /// Records the `task` field of every span opened.
    #[derive(Clone, Default)]
    struct Names(Arc<Mutex<Vec<String>>>);

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Names {
        fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
            struct Visit<'a>(&'a mut Vec<String>);
            impl tracing::field::Visit for Visit<'_> {
                fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                    if f.name() == "task" {
                        self.0.push(format!("{v:?}"));
                    }
                }
                fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
                    if f.name() == "task" {
                        self.0.push(v.to_string());
                    }
                }
            }
            let mut names = crate::sync::lock(&self.0);
            attrs.record(&mut Visit(&mut names));
        }
    }

    fn count(name: &str, kind: super::Kind) -> usize {
        super::live()
            .into_iter()
            .find(|(n, k, _)| *n == name && *k == kind)
            .map_or(0, |(_, _, c)| c)
    }

    #[test]
    fn live_tasks_are_counted_until_they_end() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let task = super::spawn("test.census", async move {
                let _ = rx.await;
            });
            let parked = super::spawn("test.census", std::future::pending::<()>());
            assert_eq!(count("test.census", super::Kind::Async), 2);
            let _ = tx.send(());
            task.await.expect("joined");
            assert_eq!(count("test.census", super::Kind::Async), 1);
            parked.abort();
            let _ = parked.await;
            assert_eq!(count("test.census", super::Kind::Async), 0);
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let job = super::spawn_blocking("test.census", move || {
                let _ = rx.recv();
            });
            assert_eq!(count("test.census", super::Kind::Blocking), 1);
            let _ = tx.send(());
            job.await.expect("joined");
            assert_eq!(count("test.census", super::Kind::Blocking), 0);
        });
    }

    #[test]
    fn tasks_run_inside_a_span_named_for_them() {
        let names = Names::default();
        let subscriber = tracing_subscriber::registry()
            .with(names.clone())
            .with(tracing_subscriber::filter::LevelFilter::DEBUG);
        let _guard = tracing::subscriber::set_default(subscriber);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            super::spawn("test.async", async {}).await.expect("joined");
            super::spawn_blocking("test.blocking", || {})
                .await
                .expect("joined");
        });
        let names = crate::sync::lock(&names.0).clone();
        assert_eq!(names, ["test.async", "test.blocking"]);
    }

    /// Records the span each event happened in.
    #[derive(Clone, Default)]
    struct EventSpans(Arc<Mutex<Vec<String>>>);

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for EventSpans {
        fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
            let span = ctx.event_span(event).map(|s| s.name().to_string());
            crate::sync::lock(&self.0).push(span.unwrap_or_default());
        }
    }

    #[test]
    fn without_task_spans_a_task_logs_in_the_span_it_was_spawned_from() {
        use tracing::Instrument as _;
        let spans = EventSpans::default();
        let subscriber = tracing_subscriber::registry()
            .with(spans.clone())
            .with(tracing_subscriber::filter::LevelFilter::INFO);
        let _guard = tracing::subscriber::set_default(subscriber);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        // Spawned tasks are polled by the scheduler, outside the spawning future's span.
        rt.block_on(
            async {
                super::spawn("test.async", async { tracing::info!("from a task") })
                    .await
                    .expect("joined");
            }
            .instrument(tracing::info_span!("component")),
        );
        let spans = crate::sync::lock(&spans.0).clone();
        assert_eq!(spans, ["component"]);
    }
}
