//! What one endpoint is going through, told to the operator: an outage (one warning when it
//! starts, one line when it ends, with what happened in between), drops (logged at most once
//! per reason per [`REPORT_INTERVAL`], each line summing what it stands for), the component's
//! health, and which sender probes an endpoint that is down.
//!
//! * **Outage.** It starts with the first failed attempt that will be retried, and ends with a
//!   successful push once no delivery is still being retried. Waiting for the last retried
//!   delivery keeps one bad profile (a 500 for that profile only, retried while others go
//!   through) from making the endpoint flap between failing and recovered at every push.
//! * **Drops.** Counted per profile in the metrics as they happen; logged per key (reason,
//!   and for errors the code and HTTP status, so a new kind of rejection is not hidden behind
//!   an old one): the first drop after a quiet [`REPORT_INTERVAL`] at once, later ones summed
//!   into the next line, which comes with the next drop after the interval, from the
//!   component's periodic flush, or at exit.
//! * **Health.** Unhealthy while the endpoint is failing, and for [`REPORT_INTERVAL`] after
//!   its last drop (reload and shutdown drops are the operator's doing, not a fault).
//! * **Probing.** One sender at a time, the prober, retries an unavailable endpoint every
//!   [`PROBE_INTERVAL`] instead of waiting out its backoff, so that delivery resumes within
//!   seconds of the backend's return; a success wakes the others (see `endpoint`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::metrics::Reason;
use crate::protocols::pyroscope::wire::{Code, PushError};
use crate::sync::lock;

/// The longest an endpoint's drops of one kind go without a log line, and how long a drop
/// keeps the component unhealthy.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(60);

/// How often the prober retries an unavailable endpoint (jittered by up to half either way,
/// so a fleet of scrapers does not probe in step). Short enough that delivery resumes well
/// within 10 s of the backend's return; one request every 2 s per endpoint is no load.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// Per reason, how many profiles (index: `Reason::ALL`'s order).
pub type PerReason = [u64; Reason::ALL.len()];

/// What an endpoint did during an outage, for the line that ends it.
#[derive(Clone, Debug)]
pub struct Recovery {
    pub outage: Duration,
    /// Profiles queued for the endpoint meanwhile (evicted later or not).
    pub queued: u64,
    /// Profiles sent meanwhile, the one ending the outage included.
    pub sent: u64,
    pub dropped: PerReason,
}

/// The outage in progress.
struct Outage {
    since: Instant,
    since_wall: SystemTime,
    err: String,
    at_start: Totals,
}

#[derive(Clone, Copy, Default)]
struct Totals {
    queued: u64,
    sent: u64,
    dropped: PerReason,
}

/// What tells two kinds of drop apart in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropKey {
    pub reason: Reason,
    pub code: Option<Code>,
    pub status: Option<u16>,
}

impl DropKey {
    pub fn reason(reason: Reason) -> Self {
        DropKey {
            reason,
            code: None,
            status: None,
        }
    }

    pub fn error(reason: Reason, err: &PushError) -> Self {
        DropKey {
            reason,
            code: Some(err.code),
            status: err.status,
        }
    }
}

/// One kind of drop, with what has not been logged yet.
struct DropLog {
    key: DropKey,
    message: &'static str,
    last_logged: Option<Instant>,
    last_drop: Instant,
    pending: u64,
    pending_bytes: u64,
    /// The latest error (or reason text) of this kind, shown in summaries and in health.
    detail: Option<String>,
}

/// A log line's worth of drops of one kind.
#[derive(Clone, Debug)]
pub struct DropReport {
    pub reason: Reason,
    pub message: &'static str,
    pub profiles: u64,
    pub bytes: u64,
    /// Time since the previous line of this kind; `None` for the first after a quiet spell.
    pub since_last: Option<Duration>,
    pub detail: Option<String>,
}

/// Profiles dropped together, as [`Drops::note`] takes them.
pub struct DropNote {
    pub key: DropKey,
    pub message: &'static str,
    pub detail: Option<String>,
    pub profiles: u64,
    pub bytes: u64,
}

/// The rate-limited drop log of one endpoint (or of a pipeline, for invalid labels).
#[derive(Default)]
pub struct Drops {
    logs: Vec<DropLog>,
}

impl Drops {
    /// Records a drop; returns the line to log now, if one is due.
    pub fn note(&mut self, now: Instant, d: DropNote) -> Option<DropReport> {
        let i = match self.logs.iter().position(|l| l.key == d.key) {
            Some(i) => i,
            None => {
                // A handful of keys at most: reasons times the error codes an endpoint answers.
                self.logs.push(DropLog {
                    key: d.key,
                    message: d.message,
                    last_logged: None,
                    last_drop: now,
                    pending: 0,
                    pending_bytes: 0,
                    detail: None,
                });
                self.logs.len() - 1
            }
        };
        let log = &mut self.logs[i];
        log.message = d.message;
        log.last_drop = now;
        log.pending += d.profiles;
        log.pending_bytes += d.bytes;
        if d.detail.is_some() {
            log.detail = d.detail;
        }
        let due = log
            .last_logged
            .is_none_or(|t| now.duration_since(t) >= REPORT_INTERVAL);
        due.then(|| take(log, now))
    }

    /// Summaries whose interval has passed (`all`: every pending one, at exit).
    pub fn due(&mut self, now: Instant, all: bool) -> Vec<DropReport> {
        self.logs
            .iter_mut()
            .filter(|l| {
                l.pending > 0
                    && (all
                        || l.last_logged
                            .is_none_or(|t| now.duration_since(t) >= REPORT_INTERVAL))
            })
            .map(|l| take(l, now))
            .collect()
    }

    /// The drops of the last [`REPORT_INTERVAL`] that make the component unhealthy: the
    /// reasons (with the latest error when there is one) and when the last one happened.
    fn recent(&self, now: Instant) -> Option<(Instant, Vec<String>)> {
        let mut last = None::<Instant>;
        let mut what = Vec::new();
        for l in &self.logs {
            if matches!(l.key.reason, Reason::Reload | Reason::Shutdown)
                || now.duration_since(l.last_drop) >= REPORT_INTERVAL
            {
                continue;
            }
            last = Some(last.map_or(l.last_drop, |t| t.max(l.last_drop)));
            let reason = l.key.reason.as_str();
            what.push(match &l.detail {
                Some(d) => format!("{reason}: {}", shorten(d)),
                None => reason.to_string(),
            });
        }
        last.map(|t| (t, what))
    }

    /// Health for drops alone: why the component is unhealthy, if it is.
    pub fn health(&self, now: Instant, subject: &str) -> Option<(SystemTime, String)> {
        let (last, what) = self.recent(now)?;
        Some((
            wall_at(last, now),
            format!(
                "{subject} dropped profiles in the last {}s ({}); see pyroscope_write_dropped_profiles_total",
                REPORT_INTERVAL.as_secs(),
                what.join(", ")
            ),
        ))
    }
}

fn take(log: &mut DropLog, now: Instant) -> DropReport {
    let report = DropReport {
        reason: log.key.reason,
        message: log.message,
        profiles: log.pending,
        bytes: log.pending_bytes,
        since_last: log.last_logged.map(|t| now.duration_since(t)),
        detail: log.detail.clone(),
    };
    log.pending = 0;
    log.pending_bytes = 0;
    log.last_logged = Some(now);
    report
}

/// Error texts can be long (a proxy's HTML page): health messages keep the start.
fn shorten(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The wall-clock time of `at`, an instant in the past.
fn wall_at(at: Instant, now: Instant) -> SystemTime {
    SystemTime::now() - now.duration_since(at)
}

struct State {
    outage: Option<Outage>,
    /// Deliveries with at least one failed attempt, not finished yet.
    retrying: usize,
    drops: Drops,
}

/// One endpoint's status; kept across configuration changes that keep the endpoint (like its
/// queue).
pub struct Status {
    state: Mutex<State>,
    /// A sender is probing (see [`Status::claim_probe`]).
    probing: AtomicBool,
    queued: AtomicU64,
    sent: AtomicU64,
    dropped: [AtomicU64; Reason::ALL.len()],
}

impl Default for Status {
    fn default() -> Self {
        Status {
            state: Mutex::new(State {
                outage: None,
                retrying: 0,
                drops: Drops::default(),
            }),
            probing: AtomicBool::new(false),
            queued: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl Status {
    fn totals(&self) -> Totals {
        Totals {
            queued: self.queued.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            dropped: std::array::from_fn(|i| self.dropped[i].load(Ordering::Relaxed)),
        }
    }

    /// A profile was queued.
    pub fn queued(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// Profiles were dropped; returns the line to log now, if one is due.
    pub fn dropped(&self, d: DropNote) -> Option<DropReport> {
        self.dropped[d.key.reason.index()].fetch_add(d.profiles, Ordering::Relaxed);
        lock(&self.state).drops.note(Instant::now(), d)
    }

    /// Drop summaries due now (`all`: every pending one).
    pub fn due_drop_reports(&self, all: bool) -> Vec<DropReport> {
        lock(&self.state).drops.due(Instant::now(), all)
    }

    /// Starts tracking one delivery (see [`Delivery`]).
    pub fn delivery(self: &Arc<Self>) -> Delivery {
        Delivery {
            status: self.clone(),
            retrying: false,
        }
    }

    /// Makes the caller the prober, unless another sender is.
    pub fn claim_probe(self: &Arc<Self>) -> Option<Probe> {
        self.probing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            .then(|| Probe(self.clone()))
    }

    /// Whether the endpoint is failing (an outage is in progress).
    pub fn failing(&self) -> bool {
        lock(&self.state).outage.is_some()
    }

    /// Why the endpoint makes its component unhealthy, if it does, and since when.
    pub fn health(&self, url: &str, queued: usize) -> Option<(SystemTime, String)> {
        let s = lock(&self.state);
        let subject = format!("endpoint {url}");
        let drops = s.drops.health(Instant::now(), &subject);
        let Some(o) = &s.outage else {
            return drops;
        };
        let mut message = format!(
            "{subject} failing for {}s: {}; {queued} profiles queued",
            o.since.elapsed().as_secs(),
            shorten(&o.err)
        );
        let mut since = o.since_wall;
        if let Some((at, dropping)) = drops {
            message = format!("{message}; {dropping}");
            since = since.max(at);
        }
        Some((since, message))
    }
}

/// The sender holding this probes; dropping it lets another.
pub struct Probe(Arc<Status>);

impl std::ops::Drop for Probe {
    fn drop(&mut self) {
        self.0.probing.store(false, Ordering::Release);
    }
}

/// One delivery's part in the outage: its failures start one, and its end may finish it.
/// Dropped unfinished (the sender stopped), it stops counting as retried.
pub struct Delivery {
    status: Arc<Status>,
    retrying: bool,
}

impl Delivery {
    /// An attempt failed and will be retried; returns `true` when this starts an outage.
    pub fn failed(&mut self, err: &PushError) -> bool {
        let mut s = lock(&self.status.state);
        if !self.retrying {
            self.retrying = true;
            s.retrying += 1;
        }
        if s.outage.is_some() {
            return false;
        }
        s.outage = Some(Outage {
            since: Instant::now(),
            since_wall: SystemTime::now(),
            err: err.to_string(),
            at_start: self.status.totals(),
        });
        true
    }

    /// The profile was sent; returns what the outage this ends saw, if it ends one.
    pub fn sent(mut self) -> Option<Recovery> {
        self.status.sent.fetch_add(1, Ordering::Relaxed);
        let mut s = lock(&self.status.state);
        if std::mem::take(&mut self.retrying) {
            s.retrying -= 1;
        }
        if s.retrying > 0 {
            return None;
        }
        let o = s.outage.take()?;
        let now = self.status.totals();
        Some(Recovery {
            outage: o.since.elapsed(),
            queued: now.queued - o.at_start.queued,
            sent: now.sent - o.at_start.sent,
            dropped: std::array::from_fn(|i| now.dropped[i] - o.at_start.dropped[i]),
        })
    }
}

impl std::ops::Drop for Delivery {
    fn drop(&mut self) {
        if self.retrying {
            lock(&self.status.state).retrying -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(reason: Reason) -> DropNote {
        DropNote {
            key: DropKey::reason(reason),
            message: "dropping",
            detail: None,
            profiles: 1,
            bytes: 10,
        }
    }

    fn unavailable() -> PushError {
        PushError {
            code: Code::Unavailable,
            message: "down".into(),
            status: Some(503),
            from_body: false,
            retry_after: None,
        }
    }

    #[test]
    fn drops_log_the_first_then_sum_the_rest_per_interval() {
        let mut d = Drops::default();
        let t0 = Instant::now();
        let first = d
            .note(t0, note(Reason::QueueFull))
            .expect("first is logged");
        assert_eq!(
            (first.profiles, first.bytes, first.since_last),
            (1, 10, None)
        );
        for i in 1..=5 {
            assert!(
                d.note(t0 + Duration::from_secs(i), note(Reason::QueueFull))
                    .is_none()
            );
        }
        // Another reason has its own line.
        assert!(d.note(t0, note(Reason::TooOld)).is_some());
        assert!(d.due(t0 + Duration::from_secs(30), false).is_empty());
        let later = t0 + REPORT_INTERVAL;
        let due = d.due(later, false);
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].reason, due[0].profiles, due[0].bytes),
            (Reason::QueueFull, 5, 50)
        );
        assert_eq!(due[0].since_last, Some(REPORT_INTERVAL));
        // Reported: nothing pending, and the next drop waits for the interval again.
        assert!(d.due(later, true).is_empty());
        assert!(d.note(later, note(Reason::QueueFull)).is_none());
        assert_eq!(d.due(later, true)[0].profiles, 1);
    }

    #[test]
    fn each_kind_of_error_gets_its_own_line() {
        let mut d = Drops::default();
        let t0 = Instant::now();
        let err = |status| PushError {
            code: Code::NotFound,
            message: "404 page not found".into(),
            status: Some(status),
            from_body: false,
            retry_after: None,
        };
        let rejected = |status| DropNote {
            key: DropKey::error(Reason::Rejected, &err(status)),
            message: "rejected",
            detail: Some(err(status).to_string()),
            profiles: 1,
            bytes: 1,
        };
        assert!(d.note(t0, rejected(404)).is_some());
        assert!(d.note(t0, rejected(404)).is_none());
        assert!(d.note(t0, rejected(410)).is_some());
        let (_, msg) = d.health(t0, "endpoint x").expect("unhealthy");
        assert!(msg.contains("rejected: not_found (HTTP 404)"), "{msg}");
        assert!(d.health(t0 + REPORT_INTERVAL, "endpoint x").is_none());
    }

    #[test]
    fn reload_and_shutdown_drops_leave_health_alone() {
        let mut d = Drops::default();
        let t0 = Instant::now();
        d.note(t0, note(Reason::Reload));
        d.note(t0, note(Reason::Shutdown));
        assert!(d.health(t0, "x").is_none());
        d.note(t0, note(Reason::QueueFull));
        assert!(d.health(t0, "x").is_some());
    }

    #[test]
    fn an_outage_ends_when_nothing_is_being_retried_and_a_push_succeeds() {
        let status = Arc::new(Status::default());
        let mut a = status.delivery();
        let mut b = status.delivery();
        assert!(a.failed(&unavailable()));
        assert!(!b.failed(&unavailable()));
        assert!(!a.failed(&unavailable()));
        status.queued();
        status.queued();
        status.dropped(note(Reason::QueueFull));
        assert!(status.failing());
        // b is still being retried: a's success does not end the outage.
        assert!(a.sent().is_none());
        // A delivery that never failed, finishing first, does not either.
        assert!(status.delivery().sent().is_none());
        let r = b.sent().expect("recovered");
        assert_eq!((r.queued, r.sent), (2, 3));
        assert_eq!(r.dropped[Reason::QueueFull.index()], 1);
        assert!(!status.failing());
        // A retried delivery that stops (dropped or retired) no longer holds recovery back.
        let mut c = status.delivery();
        assert!(c.failed(&unavailable()));
        drop(c);
        assert!(status.delivery().sent().is_some());
    }

    #[test]
    fn one_prober_at_a_time() {
        let status = Arc::new(Status::default());
        let p = status.claim_probe().expect("first");
        assert!(status.claim_probe().is_none());
        drop(p);
        assert!(status.claim_probe().is_some());
    }
}
