//! One scrape loop: a (target, profile type) pair scraped on schedule, with its delta state and
//! health.
//!
//! # Schedule
//!
//! Each loop fires at a fixed phase of the wall clock: the times `t` with
//! `t mod interval == hash mod interval` (Prometheus' rule), so loops of many targets, and the
//! different profile types of one target (different URLs, different hashes), are spread over the
//! interval, and a restart keeps each loop's phase. The first scrape is the first such time
//! (Alloy waits one more interval after it). A scrape that takes longer than the interval makes
//! the loop skip the ticks it missed: scrapes of one loop never overlap and never catch up in a
//! burst.
//!
//! # Settings
//!
//! The settings shared by every loop of a component (HTTP client, interval, timeout, limits,
//! receivers) arrive through a watch channel. A change applies from the next scrape on and keeps
//! the delta state (Alloy restarts every loop and loses it); a new interval re-phases the loop.

use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use super::delta_mode::{DeltaMode, Step};
use super::error::{Reason, ScrapeError};
use super::events::{DeltaModeChanged, ScrapeFailed, ScrapeShed, TargetRestarted};
use super::fetch::{FetchRequest, fetch};
use super::health::{Board, Class};
use super::metrics::ComponentMetrics;
use super::process::{Processed, Processor};
use super::target::ScrapeTarget;
use crate::budget::{Budget, Priority, Reservation, Use};
use crate::httpclient::HttpClient;
use crate::labels::LabelSet;
use crate::pprof::SeriesState;
use crate::profiles::{Appendable as _, FanOut, Profile};
use crate::runtime::event::emit;

/// Bodies larger than this are processed on the processor's own threads rather than on a
/// runtime worker.
const INLINE_PROCESSING_LIMIT: usize = 256 << 10;
/// Working memory reserved for a scrape before its size is known (the first scrape of a loop).
const FIRST_SCRAPE_RESERVATION: u64 = 1 << 20;
/// Before a loop has processed a profile, its working memory is guessed from the uncompressed
/// size: 4.5 times for real Go heap profiles (docs/PERFORMANCE.md: a 2.66 MB profile peaks at
/// 15–18 MB), up to 12 times for many short samples. After that, the worker's buffers say what
/// it took, and the next scrape reserves that.
const PROCESSING_FACTOR: u64 = 12;

/// Settings shared by all loops of a component.
pub struct Env {
    pub client: Arc<HttpClient>,
    pub fanout: Arc<FanOut>,
    pub processor: Arc<Processor>,
    /// The component's memory budget: scrapes and delta state are reserved against it.
    pub budget: Budget,
    pub metrics: ComponentMetrics,
    /// The component's health, which loops tell when their class changes.
    pub board: Arc<Board>,
    pub interval: Duration,
    pub scrape_timeout: Duration,
    pub body_size_limit: u64,
}

/// A scrape target as a loop uses it.
pub struct LoopTarget {
    pub scrape: ScrapeTarget,
    pub url: reqwest::Url,
    /// What every forwarded profile is labelled with: built once per target, shared by every
    /// profile (a clone per scrape copies no label string).
    pub labels: LabelSet,
    pub metrics_key: super::metrics::SeriesKey,
    /// Set when the target breaks a label limit: it is not scraped.
    pub blocked: Option<ScrapeError>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetHealth {
    Unknown,
    Up,
    Down,
}

impl TargetHealth {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetHealth::Unknown => "unknown",
            TargetHealth::Up => "up",
            TargetHealth::Down => "down",
        }
    }
}

/// A loop's health, as the debug info shows it.
#[derive(Clone, Debug)]
pub struct Status {
    pub health: TargetHealth,
    pub last_error: Option<ScrapeError>,
    /// When `last_error` happened (the component's health names the most recent one).
    pub last_error_at: Option<SystemTime>,
    /// Failed (or shed) scrapes since the last successful one.
    pub consecutive_failures: u32,
    /// Not scraped at all: the target is over a label limit.
    pub blocked: bool,
    /// `subtracted` or `as_received` (the target serves deltas; see `delta_mode`).
    pub delta_mode: &'static str,
    /// Start of the last scrape.
    pub last_scrape: Option<SystemTime>,
    pub last_duration: Option<Duration>,
    /// What the last successful scrape led to.
    pub last_outcome: &'static str,
    pub scrapes: u64,
    pub failures: u64,
    pub forwarded: u64,
    pub state_bytes: usize,
    /// Scrapes skipped (or abandoned mid-body) because the memory budget had no room.
    pub shed: u64,
    /// Of those, the ones shed after the request was sent (the body did not fit).
    pub shed_after_request: u64,
    /// Scheduled scrapes skipped because the previous one was still running.
    pub missed: u64,
    /// Whether the last scheduled scrape was shed (logs the start and end of shedding once).
    pub shedding: bool,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            health: TargetHealth::Unknown,
            last_error: None,
            last_error_at: None,
            consecutive_failures: 0,
            blocked: false,
            delta_mode: "subtracted",
            last_scrape: None,
            last_duration: None,
            last_outcome: "",
            scrapes: 0,
            failures: 0,
            forwarded: 0,
            state_bytes: 0,
            shed: 0,
            shed_after_request: 0,
            missed: 0,
            shedding: false,
        }
    }
}

/// What a loop shares with its manager (debug info, target updates).
pub struct LoopShared {
    pub hash: u64,
    target: RwLock<Arc<LoopTarget>>,
    status: Mutex<Status>,
}

impl LoopShared {
    pub fn new(target: Arc<LoopTarget>) -> Self {
        LoopShared {
            hash: target.scrape.hash,
            target: RwLock::new(target),
            status: Mutex::new(Status::default()),
        }
    }

    pub fn target(&self) -> Arc<LoopTarget> {
        crate::sync::read(&self.target).clone()
    }

    /// Replaces the target (same identity; private labels or limits may differ).
    pub fn set_target(&self, target: Arc<LoopTarget>) {
        *crate::sync::write(&self.target) = target;
    }

    pub fn status(&self) -> Status {
        self.lock_status().clone()
    }

    /// Where the loop stands for the component's health, without copying its status.
    pub fn class(&self) -> Class {
        self.lock_status().class()
    }

    fn lock_status(&self) -> MutexGuard<'_, Status> {
        crate::sync::lock(&self.status)
    }

    /// Marks the target down without scraping it (a label limit).
    pub fn block(&self, error: ScrapeError) {
        let mut s = self.lock_status();
        s.health = TargetHealth::Down;
        if s.last_error.as_ref() != Some(&error) {
            s.last_error_at = Some(SystemTime::now());
        }
        s.last_error = Some(error);
        s.blocked = true;
    }

    /// Back to "not scraped yet" (a blocked target that became valid).
    pub fn unblock(&self) {
        let mut s = self.lock_status();
        s.health = TargetHealth::Unknown;
        s.last_error = None;
        s.last_error_at = None;
        s.consecutive_failures = 0;
        s.blocked = false;
    }
}

/// How long to wait from `now` (since the epoch) until the loop's phase: the next time `t` with
/// `t mod interval == hash mod interval` (zero if that is now).
pub fn first_delay(hash: u64, interval: Duration, now: Duration) -> Duration {
    let i = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
    if i == 0 {
        return Duration::ZERO;
    }
    let phase = hash % i;
    let now = (now.as_nanos() % u128::from(i)) as u64;
    Duration::from_nanos((phase + (i - now)) % i)
}

fn wall_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Runs a loop until `cancel`.
pub async fn run(
    shared: Arc<LoopShared>,
    mut env_rx: watch::Receiver<Arc<Env>>,
    cancel: CancellationToken,
) {
    let mut state: Option<SeriesState> = None;
    // The delta state's share of the memory budget, resized after every scrape.
    let mut state_memory: Option<Reservation> = None;
    let mut hints = Hints::default();
    let mut mode = DeltaMode::default();
    let mut reported_bytes = 0usize;
    'schedule: loop {
        let interval = env_rx.borrow_and_update().interval;
        let delay = first_delay(shared.hash, interval, wall_now());
        let start = tokio::time::Instant::now() + delay;
        let period = interval.max(Duration::from_millis(1));
        let mut ticker = tokio::time::interval_at(start, period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut last_tick: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break 'schedule,
                changed = env_rx.changed() => {
                    if changed.is_err() {
                        break 'schedule;
                    }
                    if env_rx.borrow_and_update().interval != interval {
                        continue 'schedule;
                    }
                    continue;
                }
                tick = ticker.tick() => {
                    let env = env_rx.borrow();
                    env.metrics.lateness.observe(tick.elapsed().as_secs_f64());
                    // Ticks skipped since the last one: the previous scrape overran them.
                    if let Some(last) = last_tick {
                        let gap = tick.saturating_duration_since(last).as_nanos();
                        let skipped = (gap / period.as_nanos()).saturating_sub(1);
                        if skipped > 0 {
                            env.metrics.missed.inc_by(u64::try_from(skipped).unwrap_or(u64::MAX));
                            shared.lock_status().missed += u64::try_from(skipped).unwrap_or(u64::MAX);
                        }
                    }
                    last_tick = Some(tick);
                }
            }
            let env = env_rx.borrow().clone();
            // Boxed: an idle loop (most of the time) then holds only a pointer, not the
            // request's whole state machine.
            let scrape = Box::pin(scrape_once(
                &shared,
                &env,
                &mut state,
                &mut state_memory,
                &mut hints,
                &mut mode,
            ));
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break 'schedule,
                _ = scrape => {}
            }
            let bytes = state.as_ref().map_or(0, SeriesState::bytes);
            match (&mut state_memory, bytes) {
                (_, 0) => state_memory = None,
                (Some(r), b) => r.resize(b as u64),
                (None, b) => state_memory = Some(env.budget.reserve(Use::DeltaState, b as u64)),
            }
            if bytes != reported_bytes {
                env.metrics
                    .state_bytes
                    .inc_by(bytes as i64 - reported_bytes as i64);
                reported_bytes = bytes;
                shared.lock_status().state_bytes = bytes;
            }
        }
    }
    if reported_bytes > 0 {
        env_rx
            .borrow()
            .metrics
            .state_bytes
            .dec_by(reported_bytes as i64);
    }
}

/// What a loop remembers of its last scrape to size the next one.
#[derive(Default)]
struct Hints {
    /// The last body's size: the buffer's size and the up-front reservation.
    body: usize,
    /// What processing the last body took, measured.
    processing: Option<u64>,
}

/// How much of the memory budget a profile type's scrapes may fill (see `crate::budget`):
/// CPU first, then memory and goroutines, then the rest. A baseline scrape of a cumulative
/// type is low whatever its type.
pub fn priority_of(profile_name: &str) -> Priority {
    match profile_name {
        "process_cpu" => Priority::High,
        "memory" | "goroutine" | "godeltaprof_memory" => Priority::Normal,
        _ => Priority::Low,
    }
}

/// One scrape: fetch, check, delta, forward; records the outcome.
async fn scrape_once(
    shared: &LoopShared,
    env: &Env,
    state: &mut Option<SeriesState>,
    state_memory: &mut Option<Reservation>,
    hints: &mut Hints,
    mode: &mut DeltaMode,
) {
    let target = shared.target();
    if target.blocked.is_some() {
        return;
    }
    let budget = &env.budget;
    // A cumulative profile's first scrape only sets a baseline: it costs as much as a delta
    // but sends nothing yet, so it yields to loops that already hold one.
    let baseline = target.scrape.client_delta() && state.is_none();
    let priority = match priority_of(&target.scrape.profile_name) {
        Priority::High => Priority::High,
        _ if baseline => Priority::Low,
        p => p,
    };
    // Only the body is reserved up front: a target may take many seconds to answer (a CPU
    // profile takes `seconds`), and holding processing memory while waiting would starve
    // loops that are ready. Processing memory is reserved once the body is in.
    let up_front = if hints.body == 0 {
        FIRST_SCRAPE_RESERVATION
    } else {
        hints.body as u64
    };
    let Some(mut memory) = budget.try_reserve(Use::Scrape, priority, up_front) else {
        let error = ScrapeError::new(
            Reason::MemoryBudget,
            format!(
                "not scraped: the memory budget has no room for this scrape ({up_front} bytes; {} of {} bytes in use)",
                budget.used(),
                budget.limit()
            ),
        );
        let shed_at = Shed {
            priority,
            after_request: false,
            error,
        };
        shed(shared, &target, env, shed_at, state, state_memory);
        return;
    };
    let wall = SystemTime::now();
    let started = Instant::now();
    let timeout = target.scrape.timeout(env.scrape_timeout, env.interval);
    let result = async {
        let body = fetch(&mut FetchRequest {
            memory: &mut memory,
            priority,
            client: &env.client,
            url: &target.url,
            timeout,
            body_size_limit: env.body_size_limit,
            size_hint: hints.body,
        })
        .await?;
        hints.body = body.len();
        let work = body.len() as u64
            + hints.processing.unwrap_or_else(|| {
                crate::pprof::codec::declared_size(&body) as u64 * PROCESSING_FACTOR
            });
        if !memory.try_resize(priority, work.max(memory.bytes())) {
            return Err(ScrapeError::new(
                Reason::MemoryBudget,
                format!(
                    "the profile exceeds the memory budget: no room to process it ({work} bytes; {} of {} bytes in use)",
                    budget.used(),
                    budget.limit()
                ),
            ));
        }
        // Kept (a reference, not a copy) in case the loop forwards the body as received.
        let received = body.clone();
        let (result, used) = process(env, target.scrape.client_delta(), body, state).await;
        hints.processing = Some(used);
        result.map(|p| mode.step(p, received, target.scrape.delta_path))
    }
    .await;
    drop(memory);
    let result = match result {
        Err(e) if e.reason == Reason::MemoryBudget => {
            let shed_at = Shed {
                priority,
                after_request: true,
                error: e,
            };
            shed(shared, &target, env, shed_at, state, state_memory);
            return;
        }
        r => r,
    };
    let duration = started.elapsed();
    let outcome = result.map(|step| forward(env, &target, step));

    env.metrics.target_scraped(
        &target.metrics_key,
        outcome.is_ok(),
        Some(duration.as_secs_f64()),
    );
    let mut s = shared.lock_status();
    let class = s.class();
    s.scrapes += 1;
    s.delta_mode = mode.mode().as_str();
    if s.shedding {
        s.shedding = false;
        tracing::info!(url = %target.scrape.url, shed = s.shed, "scrapes resumed: the memory budget has room again");
    }
    s.last_scrape = Some(wall);
    s.last_duration = Some(duration);
    match outcome {
        Ok((forwarded, text)) => {
            // A target down for the budget's sake has its end logged as "scrapes resumed".
            let budget_down = s
                .last_error
                .as_ref()
                .is_some_and(|e| e.reason == Reason::MemoryBudget);
            if s.health == TargetHealth::Down && !budget_down {
                tracing::info!(url = %target.scrape.url, "target is up again");
            }
            s.forwarded += u64::from(forwarded);
            s.health = TargetHealth::Up;
            s.last_error = None;
            s.consecutive_failures = 0;
            s.last_outcome = text;
        }
        Err(e) => {
            let repeated = s.health == TargetHealth::Down
                && s.last_error.as_ref().is_some_and(|p| p.reason == e.reason);
            emit(ScrapeFailed {
                metrics: &env.metrics,
                url: &target.scrape.url,
                error: &e,
                repeated,
            });
            s.failures += 1;
            failed(&mut s, e);
        }
    }
    let changed = s.class() != class;
    drop(s);
    if changed {
        env.board.report(shared);
    }
}

/// Marks a loop down with `error` (the caller reported it).
fn failed(s: &mut Status, error: ScrapeError) {
    s.health = TargetHealth::Down;
    s.consecutive_failures = s.consecutive_failures.saturating_add(1);
    s.last_error_at = Some(SystemTime::now());
    s.last_error = Some(error);
}

/// Sends what `step` says to send and reports what it says happened; returns whether
/// something was forwarded and the outcome for the debug info.
fn forward(env: &Env, target: &LoopTarget, step: Step) -> (bool, &'static str) {
    let Step {
        send,
        outcome,
        restart,
        change,
    } = step;
    let url = &target.scrape.url;
    if let Some(change) = change {
        emit(DeltaModeChanged {
            metrics: &env.metrics,
            url,
            labels: &target.labels,
            profile_type: &target.scrape.profile_name,
            change,
        });
    }
    if let Some(reason) = &restart {
        emit(TargetRestarted {
            metrics: &env.metrics,
            url,
            labels: &target.labels,
            reason,
        });
    }
    let Some(raw) = send else {
        return (false, outcome);
    };
    let profile = Profile::with_labels(target.labels.clone(), raw);
    let t = Instant::now();
    env.fanout.append(vec![profile]);
    env.metrics
        .fanout_latency
        .observe(t.elapsed().as_secs_f64());
    env.metrics.forwarded.inc();
    (true, outcome)
}

/// Why a scrape was shed.
struct Shed {
    priority: Priority,
    /// After the request was sent: the body, or its processing, did not fit.
    after_request: bool,
    /// What the target's `last_error` says.
    error: ScrapeError,
}

/// A scrape the memory budget had no room for: counted, and the loop's delta state is given
/// up too while its priority is over budget, so that the memory it holds goes to others. The
/// target is down with the budget's error: nothing of it reaches the backend.
fn shed(
    shared: &LoopShared,
    target: &LoopTarget,
    env: &Env,
    what: Shed,
    state: &mut Option<SeriesState>,
    state_memory: &mut Option<Reservation>,
) {
    let Shed {
        priority,
        after_request,
        error,
    } = what;
    let budget = &env.budget;
    // Delta state is what lets a loop send at all, so it goes only when accounted memory is
    // beyond the whole budget, not merely beyond this priority's share.
    let dropped_state = state.is_some() && budget.over(Priority::High);
    if dropped_state {
        *state = None;
        *state_memory = None;
    }
    env.metrics.target_scraped(&target.metrics_key, false, None);
    let mut s = shared.lock_status();
    let class = s.class();
    s.shed += 1;
    s.shed_after_request += u64::from(after_request);
    s.last_outcome = if dropped_state {
        "shed: no room in the memory budget; delta state dropped, the next scrape is a new baseline"
    } else {
        "shed: no room in the memory budget"
    };
    let first = !s.shedding;
    s.shedding = true;
    emit(ScrapeShed {
        budget,
        url: &target.scrape.url,
        priority,
        dropped_state,
        first,
    });
    failed(&mut s, error);
    let changed = s.class() != class;
    drop(s);
    if changed {
        env.board.report(shared);
    }
}

/// Processes a body; also returns the working memory it took.
async fn process(
    env: &Env,
    client_delta: bool,
    body: bytes::Bytes,
    state: &mut Option<SeriesState>,
) -> (Result<Processed, ScrapeError>, u64) {
    if body.len() <= INLINE_PROCESSING_LIMIT {
        return env.processor.process_measured(client_delta, body, state);
    }
    env.processor.process_large(client_delta, body, state).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_delay_lands_on_the_hash_phase() {
        let s = Duration::from_secs;
        let interval = s(15);
        // Phase 5 s (hash 5e9 mod 15e9).
        let hash = 5_000_000_000u64;
        assert_eq!(
            first_delay(hash, interval, s(1_000_000_000)),
            s(15) - s(10) + s(5)
        );
        for now_ms in [0u64, 1, 4_999, 5_000, 5_001, 14_999, 123_456_789] {
            let now = Duration::from_millis(now_ms);
            let d = first_delay(hash, interval, now);
            assert!(d < interval, "{now_ms}: {d:?}");
            let fire = (now + d).as_nanos() % interval.as_nanos();
            assert_eq!(fire, 5_000_000_000, "{now_ms}");
        }
        // Another hash, another phase; the same target keeps its phase across restarts.
        assert_ne!(
            first_delay(hash, interval, s(100)),
            first_delay(hash + 3_000_000_000, interval, s(100))
        );
        assert_eq!(first_delay(7, Duration::ZERO, s(3)), Duration::ZERO);
    }
}
