//! From a fetched body to what is forwarded.
//!
//! * Cumulative types (memory, mutex, block, unless the target already sends deltas) go through
//!   the pprof core's delta engine: the first scrape of a loop is only its baseline, later ones
//!   give the gzipped delta since the previous scrape. A baseline reset (the target restarted:
//!   counters went down, another build id...) gives nothing, like a first scrape. What is
//!   finally sent is the loop's decision (`delta_mode`: a target whose counters keep going
//!   down serves deltas, and is forwarded as received).
//! * Everything else is forwarded byte for byte, after a full decode (`pprof::validate_raw`)
//!   so that a truncated or corrupt profile is never sent.
//!
//! The per-series state ([`SeriesState`]) lives in each scrape loop; the engines (scratch
//! buffers only, sized by the largest profile seen) are pooled and shared by all loops of a
//! component, so memory does not grow with the number of targets.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, mpsc};

use bytes::Bytes;

use super::error::{Reason, ScrapeError};
use crate::budget::{Budget, Priority, Reservation, Use};
use crate::pprof::codec::Inflater;
use crate::pprof::{
    DeltaEngine, DeltaOptions, DeltaOutcome, PprofError, ResetReason, SeriesState, validate_raw,
};

/// What to do after processing a scrape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// Forward these bytes: the profile as received, fully checked (a type that is not
    /// cumulative, or a target that sends deltas itself).
    Send(Bytes),
    /// The gzipped delta since the previous scrape, with this many samples (0: nothing grew).
    Delta { profile: Bytes, samples: usize },
    /// The first scrape of a cumulative profile: kept as the baseline, nothing sent.
    Baseline,
    /// The baseline was replaced (the target restarted or changed); nothing sent.
    Reset(ResetReason),
}

struct Worker {
    engine: DeltaEngine,
    inflater: Inflater,
    scratch: Vec<u8>,
}

/// Pooled delta engines and decompressors.
///
/// Small profiles are processed where they arrive, with pooled workers. Large ones go to a
/// few dedicated threads (one per CPU: processing is CPU-bound, so more at once would only
/// multiply the memory in use), each owning one worker for good. A worker's buffers are then
/// allocated and freed by the same thread, which the allocator gives back to the system at
/// once; freed from other threads (as tokio's blocking pool would), they lingered until the
/// allocating thread ran again, hundreds of MB that no budget could see.
pub struct Processor {
    options: DeltaOptions,
    /// What pooled and kept workers' buffers are reserved against.
    budget: Budget,
    /// Idle workers for small profiles, each with its buffers reserved against the budget.
    pool: Mutex<Vec<(Worker, Reservation)>>,
    /// The dedicated threads' queue, started on first use.
    jobs: OnceLock<Mutex<mpsc::Sender<Job>>>,
}

/// A large profile for a processing thread.
struct Job {
    client_delta: bool,
    body: Bytes,
    state: Option<SeriesState>,
    reply: tokio::sync::oneshot::Sender<(Result<Processed, ScrapeError>, Option<SeriesState>, u64)>,
}

/// Idle workers kept for small profiles at most.
///
/// Computed once: `available_parallelism` reads the cgroup's CPU quota on every call (three
/// files opened, stat'ed, read and closed, plus `sched_getaffinity`), and this is asked after
/// every scrape: at 1,000 targets that was ~17 of the ~38 system calls a scrape cost (strace -c).
fn pool_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| std::thread::available_parallelism().map_or(4, |n| n.get() * 2))
}

fn new_worker(options: &DeltaOptions) -> Worker {
    Worker {
        engine: DeltaEngine::new(options.clone()),
        inflater: Inflater::default(),
        scratch: Vec::new(),
    }
}

/// Heap bytes a worker keeps for the next profile.
fn retained(w: &Worker) -> u64 {
    (w.engine.retained_bytes() + w.scratch.capacity()) as u64
}

/// Default delta options and an unlimited budget.
impl Default for Processor {
    fn default() -> Self {
        Processor::new(DeltaOptions::default(), Budget::default())
    }
}

impl Processor {
    pub fn new(options: DeltaOptions, budget: Budget) -> Self {
        Processor {
            options,
            budget,
            pool: Mutex::new(Vec::new()),
            jobs: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(Worker, Reservation)>> {
        crate::sync::lock(&self.pool)
    }

    /// Processes one scraped body. CPU-bound: about a millisecond per MiB of profile.
    /// `state` is the loop's delta state; it is replaced only on success.
    pub fn process(
        &self,
        client_delta: bool,
        body: Bytes,
        state: &mut Option<SeriesState>,
    ) -> Result<Processed, ScrapeError> {
        self.process_measured(client_delta, body, state).0
    }

    /// [`Processor::process`], also returning the working memory it took: the buffers of the
    /// worker that processed it, which grow to what the largest profile needed.
    pub fn process_measured(
        &self,
        client_delta: bool,
        body: Bytes,
        state: &mut Option<SeriesState>,
    ) -> (Result<Processed, ScrapeError>, u64) {
        let mut w = self
            .lock()
            .pop()
            .map(|(w, _)| w)
            .unwrap_or_else(|| new_worker(&self.options));
        let result = run(&mut w, &self.options, client_delta, body, state);
        let used = retained(&w);
        // Keep a worker whose scratch grew for a huge profile only if it is not huge (one
        // 64 MiB outlier must not stay resident), and only while the memory budget has room
        // for its buffers: they are the first memory to give back.
        if w.scratch.capacity() <= 16 << 20
            && self.lock().len() < pool_limit()
            && let Some(r) = self
                .budget
                .try_reserve(Use::ProcessingPool, Priority::Low, used)
        {
            self.lock().push((w, r));
        }
        if self.budget.over(Priority::Low) {
            self.lock().clear();
        }
        (result, used)
    }

    /// Processes a large body on a dedicated thread (see [`Processor`]); waits in line when
    /// every thread is busy.
    pub async fn process_large(
        &self,
        client_delta: bool,
        body: Bytes,
        state: &mut Option<SeriesState>,
    ) -> (Result<Processed, ScrapeError>, u64) {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job {
            client_delta,
            body,
            state: state.take(),
            reply,
        };
        let sent = {
            let jobs = self.jobs.get_or_init(|| Mutex::new(self.start_threads()));
            let jobs = crate::sync::lock(jobs);
            jobs.send(job)
        };
        if let Err(mpsc::SendError(job)) = sent {
            *state = job.state;
            return (Err(threads_gone()), 0);
        }
        match answer.await {
            Ok((result, new_state, used)) => {
                *state = new_state;
                (result, used)
            }
            Err(_) => (Err(threads_gone()), 0),
        }
    }

    /// Starts one processing thread per CPU; they stop when the processor is dropped.
    fn start_threads(&self) -> mpsc::Sender<Job> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        for i in 0..cpus {
            let rx = rx.clone();
            let options = self.options.clone();
            let budget = self.budget.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("pprof-process-{i}"))
                .spawn(move || processing_thread(&rx, &options, &budget));
            if let Err(e) = spawned {
                tracing::error!(err = %e, "could not start a profile processing thread");
            }
        }
        tx
    }

    /// Workers currently pooled (for tests).
    pub fn pooled(&self) -> usize {
        self.lock().len()
    }
}

fn threads_gone() -> ScrapeError {
    ScrapeError::new(
        Reason::InvalidProfile,
        "processing the profile failed: no processing thread is running".to_string(),
    )
}

/// A dedicated processing thread: one worker, kept while the budget has room for it.
fn processing_thread(rx: &Mutex<mpsc::Receiver<Job>>, options: &DeltaOptions, budget: &Budget) {
    let mut kept: Option<(Worker, Reservation)> = None;
    loop {
        let job = {
            let rx = crate::sync::lock(rx);
            rx.recv()
        };
        let Ok(mut job) = job else { return };
        let mut w = kept.take().map_or_else(|| new_worker(options), |(w, _)| w);
        let result = run(&mut w, options, job.client_delta, job.body, &mut job.state);
        let used = retained(&w);
        let _ = job.reply.send((result, job.state, used));
        // Dropped here, on the thread that allocated it, when there is no room to keep it.
        kept = budget
            .try_reserve(Use::ProcessingPool, Priority::Low, used)
            .map(|r| (w, r));
    }
}

fn run(
    w: &mut Worker,
    options: &DeltaOptions,
    client_delta: bool,
    body: Bytes,
    state: &mut Option<SeriesState>,
) -> Result<Processed, ScrapeError> {
    if client_delta {
        delta(w, body, state)
    } else {
        check(w, options, body)
    }
}

fn delta(
    w: &mut Worker,
    body: Bytes,
    state: &mut Option<SeriesState>,
) -> Result<Processed, ScrapeError> {
    let applied = w.engine.apply(state.as_ref(), &body).map_err(invalid)?;
    *state = applied.state;
    Ok(match applied.outcome {
        DeltaOutcome::Baseline { .. } => Processed::Baseline,
        DeltaOutcome::Reset(r) => Processed::Reset(r),
        DeltaOutcome::Delta { profile, stats } => Processed::Delta {
            profile: Bytes::from(profile),
            samples: stats.samples_out,
        },
        // No cumulative sample type (an unusual target): nothing to subtract, send as is.
        DeltaOutcome::NotCumulative => Processed::Send(body),
    })
}

fn check(w: &mut Worker, options: &DeltaOptions, body: Bytes) -> Result<Processed, ScrapeError> {
    let raw = w
        .inflater
        .raw(&body, &options.limits, &mut w.scratch)
        .map_err(invalid)?;
    validate_raw(raw).map_err(invalid)?;
    Ok(Processed::Send(body))
}

fn invalid(e: PprofError) -> ScrapeError {
    match e {
        PprofError::TooLarge { .. } => ScrapeError::new(Reason::BodyTooLarge, e.to_string()),
        e => ScrapeError::new(Reason::InvalidProfile, format!("invalid profile: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::testutil::B;
    use crate::pprof::{Limits, decode, gzip};

    /// A mutex-like profile, gzipped: one stack per (function, contentions, delay).
    fn profile(stacks: &[(&str, i64, i64)]) -> Vec<u8> {
        let b = B::new(&[("contentions", "count"), ("delay", "nanoseconds")]);
        let b = stacks
            .iter()
            .fold(b, |b, &(name, c, d)| b.sample(&[name], &[c, d]));
        gzip(&b.raw(), 1)
    }

    fn values(raw: &[u8]) -> Vec<Vec<i64>> {
        decode(raw, &Limits::default())
            .expect("decodes")
            .sample
            .into_iter()
            .map(|s| s.value)
            .collect()
    }

    #[test]
    fn cumulative_profiles_send_deltas_after_a_baseline() {
        let p = Processor::default();
        let mut state = None;
        let first = profile(&[("a", 1, 10), ("b", 2, 20)]);
        assert_eq!(
            p.process(true, first.into(), &mut state),
            Ok(Processed::Baseline)
        );
        assert!(state.is_some());
        let second = profile(&[("a", 4, 40), ("b", 2, 20)]);
        let Ok(Processed::Delta {
            profile: out,
            samples: 1,
        }) = p.process(true, second.into(), &mut state)
        else {
            panic!("no delta");
        };
        assert_eq!(values(&out), [[3, 30]]);
        // A restart: counters go down, the baseline is replaced and nothing is sent.
        let restarted = profile(&[("a", 1, 1)]);
        assert!(matches!(
            p.process(true, restarted.into(), &mut state),
            Ok(Processed::Reset(_))
        ));
        assert_eq!(p.pooled(), 1, "one worker, reused");
    }

    #[test]
    fn other_profiles_are_checked_and_forwarded_as_received() {
        let p = Processor::default();
        let mut state = None;
        let body = Bytes::from(profile(&[("a", 1, 10)]));
        assert_eq!(
            p.process(false, body.clone(), &mut state),
            Ok(Processed::Send(body.clone()))
        );
        assert!(state.is_none());
        let truncated = body.slice(..body.len() - 10);
        let err = p
            .process(false, truncated.clone(), &mut state)
            .expect_err("truncated");
        assert_eq!(err.reason, Reason::InvalidProfile);
        assert!(err.message.starts_with("invalid profile: "), "{err}");
        // The delta path rejects it too, and keeps its state.
        let err = p
            .process(true, truncated, &mut state)
            .expect_err("truncated");
        assert_eq!(err.reason, Reason::InvalidProfile);
        assert!(state.is_none());
        let garbage = Bytes::from_static(b"\x0a\x05hello\x12\xff\xff\xff");
        assert!(p.process(false, garbage, &mut state).is_err());
    }
}
