//! The memory budget (`scraper run --memory.limit`), one per process, shared by every
//! component through its build options.
//!
//! Memory that grows with load is accounted here before it is taken: scraped bodies while
//! they download, the working memory of decoding and subtracting a profile, the delta state
//! each cumulative series keeps, what waits in the write and store queues, the request
//! bodies `pyroscope.receive_http` converts, and `pyroscope.ebpf`'s unwind tables, Python code
//! objects and off-CPU stacks waiting for their block to end. Each of those is a [`Reservation`] that gives its
//! bytes back when dropped, so the accounted total is always what is live.
//!
//! The policy when the budget is short (docs/PERFORMANCE.md, "Memory budget"):
//!
//! * Work has a [`Priority`]. High-priority work may fill 90 % of the budget, normal work
//!   80 % and low-priority work 70 %, so as memory tightens the lowest priority is shed first
//!   and the most valuable profiles keep headroom. The last 10 % is never reserved: it absorbs
//!   what the estimates of working memory and the RSS sampler's lag miss. Scrapes take their priority from
//!   the profile type: CPU (no delta state, the profile users act on) is high; memory and
//!   goroutines normal; mutex, block and everything else low. Queued profiles are normal.
//! * A scrape that cannot reserve its memory is skipped (shed) and counted. A cumulative
//!   profile's first scrape (a baseline, which sends nothing yet) is low priority whatever its
//!   type, so loops that already hold a baseline go first. Delta state is given up only when
//!   accounted memory exceeds the whole budget; that loop's next scrape is a new baseline.
//!   Queues drop their oldest profile to make room, counted like any other drop. A profile
//!   that must be decoded to fit a backend's limits is dropped (counted) when its decoding has
//!   no room. Idle decoders are kept only while their buffers fit (low priority). A request to
//!   `pyroscope.receive_http` whose conversion has no room (normal priority) is answered
//!   429 (`resource_exhausted`) and counted: the client keeps the profiles and retries.
//! * `pyroscope.ebpf`'s unwind tables (the call-frame information of sampled binaries) are a
//!   cache at low priority: the component drops its least recently used tables to fit, and a
//!   table that still does not fit is not loaded (counted as shed); that binary's frames are
//!   then walked by frame pointers. Its Python code-object cache is low priority too (it starts
//!   over when refused); off-CPU stacks waiting for their block to end are normal priority
//!   (data not yet sent, as queued profiles), the oldest dropped and counted when refused.
//! * Memory the accounting cannot see (connections, tasks, discovery, the allocator's slack) is
//!   measured: a sampler reads the process's RSS and takes what RSS exceeds the accounted
//!   total off the budget, so the whole process, not only the accounted part, stays within
//!   the limit.
//!
//! Without a limit every reservation succeeds and nothing is shed; the accounting still runs
//! so that `scraper_memory_accounted_bytes` shows where memory goes.

mod limit;
mod metrics;
mod refusals;
pub mod rss;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use limit::{LimitError, parse_limit};
pub use metrics::BudgetMetrics;
pub use refusals::Refusals;

/// What a reservation holds memory for; each is a value of `scraper_memory_accounted_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Use {
    /// A scraped body being downloaded, and the work of decoding and subtracting it.
    Scrape,
    /// Delta state kept between scrapes of a cumulative profile.
    DeltaState,
    /// Profiles waiting in a `pyroscope.write` queue.
    WriteQueue,
    /// Profiles waiting for a `pyroscope.store` writer.
    StoreQueue,
    /// Idle decoders' buffers, kept for the next profile.
    ProcessingPool,
    /// Profiles being decoded to check and trim them to a backend's limits.
    WriteTrim,
    /// Request bodies `pyroscope.receive_http` is converting to profiles.
    Receive,
    /// `pyroscope.ebpf`'s unwind tables (call-frame information of the sampled binaries), its
    /// Python code-object cache and its off-CPU stacks waiting for their block to end.
    Ebpf,
}

impl Use {
    pub const ALL: [Use; 8] = [
        Use::Scrape,
        Use::DeltaState,
        Use::WriteQueue,
        Use::StoreQueue,
        Use::ProcessingPool,
        Use::WriteTrim,
        Use::Receive,
        Use::Ebpf,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Use::Scrape => "scrape",
            Use::DeltaState => "delta_state",
            Use::WriteQueue => "write_queue",
            Use::StoreQueue => "store_queue",
            Use::ProcessingPool => "processing_pool",
            Use::WriteTrim => "write_trim",
            Use::Receive => "receive",
            Use::Ebpf => "ebpf",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How much of the budget a reservation may fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Up to 70 % of the budget.
    Low,
    /// Up to 80 %.
    Normal,
    /// Up to 90 %.
    High,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
        }
    }

    /// The share of the budget this priority may fill, in percent.
    fn percent(self) -> u64 {
        match self {
            Priority::Low => 70,
            Priority::Normal => 80,
            Priority::High => 90,
        }
    }
}

/// The budget: a limit and the bytes accounted against it. Cheap to clone; clones share it.
///
/// `scraper run` creates one and puts it in the controller's services; each component takes it
/// from its build options (`opts.services.get::<Budget>()`) and passes it on to whatever
/// reserves memory. Where none was given (unit tests, the offline commands) the default,
/// unlimited, applies.
#[derive(Clone, Debug)]
pub struct Budget {
    inner: Arc<Inner>,
}

/// Unlimited: what a component uses when no budget was given to it.
impl Default for Budget {
    fn default() -> Self {
        Budget::unlimited()
    }
}

#[derive(Debug)]
struct Inner {
    /// Bytes; 0 means no limit.
    limit: u64,
    /// Accounted bytes.
    used: AtomicU64,
    by_use: [AtomicU64; Use::ALL.len()],
    /// RSS beyond the accounted bytes at the last sample: memory the accounting cannot see.
    unaccounted: AtomicU64,
    /// The resident floor (see [`Budget::observe`]); `u64::MAX` until first seen.
    floor: AtomicU64,
    metrics: OnceLock<Arc<BudgetMetrics>>,
}

impl Budget {
    /// A budget of `limit` bytes; 0 for none.
    pub fn new(limit: u64) -> Budget {
        Budget {
            inner: Arc::new(Inner {
                limit,
                used: AtomicU64::new(0),
                by_use: Default::default(),
                unaccounted: AtomicU64::new(0),
                floor: AtomicU64::new(u64::MAX),
                metrics: OnceLock::new(),
            }),
        }
    }

    /// No limit: every reservation succeeds.
    pub fn unlimited() -> Budget {
        Budget::new(0)
    }

    /// The configured limit in bytes (0 = none).
    pub fn limit(&self) -> u64 {
        self.inner.limit
    }

    /// Bytes accounted now.
    pub fn used(&self) -> u64 {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// Bytes accounted for one use.
    pub fn used_by(&self, what: Use) -> u64 {
        self.inner.by_use[what.index()].load(Ordering::Relaxed)
    }

    /// Memory beyond the accounted bytes at the last RSS sample.
    pub fn unaccounted(&self) -> u64 {
        self.inner.unaccounted.load(Ordering::Relaxed)
    }

    /// Attaches the metrics the budget updates (once; later calls are ignored).
    pub fn set_metrics(&self, metrics: Arc<BudgetMetrics>) {
        metrics
            .limit
            .set(i64::try_from(self.inner.limit).unwrap_or(i64::MAX));
        let _ = self.inner.metrics.set(metrics);
    }

    fn metrics(&self) -> Option<&BudgetMetrics> {
        self.inner.metrics.get().map(|m| m.as_ref())
    }

    /// How many accounted bytes `priority` may bring the total to.
    fn ceiling(&self, priority: Priority) -> u64 {
        let limit = self.inner.limit;
        // Never let measured overhead close the budget entirely: a tenth always remains for the
        // accounted work, or nothing could ever be scraped again.
        let room = limit.saturating_sub(self.unaccounted()).max(limit / 10);
        room / 100 * priority.percent()
    }

    /// Whether accounted memory is above what `priority` may fill: work of that priority
    /// should give memory back.
    pub fn over(&self, priority: Priority) -> bool {
        self.inner.limit > 0 && self.used() > self.ceiling(priority)
    }

    /// Reserves `bytes` for `what` if that keeps the total within `priority`'s share.
    pub fn try_reserve(&self, what: Use, priority: Priority, bytes: u64) -> Option<Reservation> {
        if !self.try_add(what, priority, bytes) {
            if let Some(m) = self.metrics() {
                m.refused(what, priority);
            }
            return None;
        }
        Some(Reservation {
            budget: self.clone(),
            what,
            bytes,
        })
    }

    /// Accounts `bytes` for `what` unconditionally: for memory that is already allocated (a
    /// delta state just computed), which refusing would not free.
    pub fn reserve(&self, what: Use, bytes: u64) -> Reservation {
        self.add(what, bytes);
        Reservation {
            budget: self.clone(),
            what,
            bytes,
        }
    }

    fn try_add(&self, what: Use, priority: Priority, bytes: u64) -> bool {
        if self.inner.limit == 0 {
            self.add(what, bytes);
            return true;
        }
        let ceiling = self.ceiling(priority);
        let admitted = self
            .inner
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let total = used.checked_add(bytes)?;
                (total <= ceiling).then_some(total)
            })
            .is_ok();
        if admitted {
            self.inner.by_use[what.index()].fetch_add(bytes, Ordering::Relaxed);
            self.publish(what);
        }
        admitted
    }

    fn add(&self, what: Use, bytes: u64) {
        self.inner.used.fetch_add(bytes, Ordering::AcqRel);
        self.inner.by_use[what.index()].fetch_add(bytes, Ordering::Relaxed);
        self.publish(what);
    }

    fn sub(&self, what: Use, bytes: u64) {
        self.inner.used.fetch_sub(bytes, Ordering::AcqRel);
        self.inner.by_use[what.index()].fetch_sub(bytes, Ordering::Relaxed);
        self.publish(what);
    }

    fn publish(&self, what: Use) {
        if let Some(m) = self.metrics() {
            m.accounted(what, self.used_by(what));
        }
    }

    /// Counts work shed for lack of memory: `scraper_memory_shed_total{use, priority}`.
    pub fn count_shed(&self, what: Use, priority: Priority) {
        if let Some(m) = self.metrics() {
            m.shed(what, priority);
        }
    }

    /// Starts the RSS sampler (a thread, every `every`) when there is a limit. Returns whether
    /// it started; without /proc (not Linux) the budget counts accounted bytes only.
    pub fn start_sampler(&self, every: Duration) -> bool {
        if self.inner.limit == 0 || rss::current().is_none() {
            return false;
        }
        let budget = self.clone();
        std::thread::Builder::new()
            .name("memory-budget".into())
            .spawn(move || {
                loop {
                    budget.sample();
                    std::thread::sleep(every);
                }
            })
            .is_ok()
    }

    /// Reads RSS once and updates the unaccounted share (see [`Budget::observe`]).
    pub fn sample(&self) {
        if let Some(rss) = rss::current() {
            self.observe(rss);
        }
    }

    /// Updates the unaccounted share from one RSS reading.
    ///
    /// A rise is taken at once; a fall only by 1 % of the limit per sample (10 % a second at
    /// the default rate), because RSS lags what was just reserved: a momentary low reading
    /// must not open the budget wide.
    ///
    /// It never falls below the resident floor: the least RSS beyond the accounted bytes seen
    /// while almost nothing was accounted (the binary, the runtime, the graph itself). Between
    /// bursts, reservations made but not yet touched (bodies reserved before a slow target
    /// answers) exceed what they occupy and hide that floor: RSS minus accounted reads 0. When
    /// every reservation then fills at once, RSS is the accounted bytes plus the floor, so a
    /// budget that forgot the floor overshot its limit by it (tests/memory_budget.rs: peaks of
    /// 250-293 MiB in a 256 MiB budget, with a ~45 MiB floor).
    pub fn observe(&self, rss: u64) {
        let used = self.used();
        let seen = rss.saturating_sub(used);
        if used <= self.inner.limit / 20 {
            self.inner.floor.fetch_min(seen, Ordering::Relaxed);
        }
        let floor = match self.inner.floor.load(Ordering::Relaxed) {
            u64::MAX => 0,
            f => f,
        };
        let previous = self.inner.unaccounted.load(Ordering::Relaxed);
        let unaccounted = seen
            .max(previous.saturating_sub(self.inner.limit / 100))
            .max(floor);
        self.inner.unaccounted.store(unaccounted, Ordering::Relaxed);
        if let Some(m) = self.metrics() {
            m.rss.set(i64::try_from(rss).unwrap_or(i64::MAX));
            m.unaccounted
                .set(i64::try_from(unaccounted).unwrap_or(i64::MAX));
        }
    }
}

/// Bytes held against a [`Budget`] until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Budget,
    what: Use,
    bytes: u64,
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The budget this reservation is held in (to count what its holder sheds).
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Grows (or shrinks) the reservation to `bytes` if the growth fits `priority`'s share;
    /// shrinking always succeeds.
    pub fn try_resize(&mut self, priority: Priority, bytes: u64) -> bool {
        if bytes <= self.bytes {
            self.resize(bytes);
            return true;
        }
        if !self.budget.try_add(self.what, priority, bytes - self.bytes) {
            if let Some(m) = self.budget.metrics() {
                m.refused(self.what, priority);
            }
            return false;
        }
        self.bytes = bytes;
        true
    }

    /// Sets the reservation to `bytes` unconditionally (memory already allocated).
    pub fn resize(&mut self, bytes: u64) {
        if bytes > self.bytes {
            self.budget.add(self.what, bytes - self.bytes);
        } else if bytes < self.bytes {
            self.budget.sub(self.what, self.bytes - bytes);
        }
        self.bytes = bytes;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.sub(self.what, self.bytes);
        }
    }
}

#[cfg(test)]
mod tests;
