//! One endpoint's bounded in-memory queue.
//!
//! * Bounded by bytes (profile bytes plus encoded label bytes). When a new profile does not
//!   fit, the **oldest** queued profiles are evicted and handed back to the caller to count.
//! * Feeds several senders while keeping **per-series order**: a sender takes the oldest
//!   profile whose series has nothing in flight, so two profiles of one series are never sent
//!   concurrently and a profile being retried holds back the later ones of its series only.
//! * Never blocks a producer on a sender: the lock is only held to push or pick an entry.
//! * Its bytes are reserved against the process's memory budget (`crate::budget`): when the
//!   budget refuses a new profile, the oldest are evicted to make room, as when the queue is
//!   full, and counted apart. With several endpoints each queue reserves the bytes it holds,
//!   though the profiles themselves are shared: the budget then counts them more than once,
//!   erring on the safe side.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;

use crate::budget::{Budget, Priority, Reservation, Use};
use crate::profiles::Label;

/// A profile ready to push: labels already processed and encoded.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Hash of the pushed labels: what "same series" means for ordering.
    pub series: u64,
    /// `RawProfileSeries.labels`, encoded (see `wire::encode_labels`). Shared by all endpoints.
    pub labels: Bytes,
    /// The same labels as a list, for protocols that encode them differently (OTLP).
    pub series_labels: Arc<[Label]>,
    pub raw: Bytes,
    pub received_at: SystemTime,
    /// When it was first queued (for the `queue` latency).
    pub enqueued: Instant,
}

impl Entry {
    /// What the entry costs against the queue's byte budget.
    pub fn size(&self) -> usize {
        self.raw.len() + self.labels.len()
    }
}

struct State {
    entries: VecDeque<Entry>,
    bytes: usize,
    max_bytes: usize,
    in_flight: HashSet<u64>,
    /// `bytes`, reserved against the memory budget.
    memory: Reservation,
}

impl State {
    /// Brings the reservation back in line with `bytes` after entries left.
    fn sync_memory(&mut self) {
        self.memory.resize(self.bytes as u64);
    }
}

/// Why [`Queue::push`] evicted an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// The queue's `max_bytes` is reached.
    QueueFull,
    /// The process's memory budget refused the bytes.
    MemoryBudget,
}

/// Gauges kept equal to the queue's depth.
#[derive(Clone, Default)]
pub struct DepthGauges {
    pub profiles: Gauge,
    pub bytes: Gauge,
}

pub struct Queue {
    state: Mutex<State>,
    /// An entry may have become takeable: wakes one waiting sender (one new entry, or one
    /// series freed, makes at most one entry takeable).
    takeable: Notify,
    /// Something was taken or finished: wakes every `idle()` waiter.
    progressed: Notify,
    gauges: DepthGauges,
}

impl Queue {
    /// A queue of at most `max_bytes`, its contents also reserved against `budget`.
    pub fn new(max_bytes: usize, gauges: DepthGauges, budget: &Budget) -> Self {
        Queue {
            state: Mutex::new(State {
                entries: VecDeque::new(),
                bytes: 0,
                max_bytes,
                in_flight: HashSet::new(),
                memory: budget.reserve(Use::WriteQueue, 0),
            }),
            takeable: Notify::new(),
            progressed: Notify::new(),
            gauges,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    fn publish(&self, s: &State) {
        self.gauges.profiles.set(s.entries.len() as i64);
        self.gauges.bytes.set(s.bytes as i64);
    }

    /// Appends `entry`, evicting the oldest entries until it fits the queue and the memory
    /// budget. Returns what was evicted and why (the entry itself when it cannot fit at all).
    #[must_use]
    pub fn push(&self, entry: Entry) -> Vec<(Entry, Eviction)> {
        let mut evicted = Vec::new();
        {
            let mut s = self.lock();
            let size = entry.size();
            if size > s.max_bytes {
                evicted.push((entry, Eviction::QueueFull));
                return evicted;
            }
            while s.bytes + size > s.max_bytes {
                let Some(old) = s.entries.pop_front() else {
                    break;
                };
                s.bytes -= old.size();
                evicted.push((old, Eviction::QueueFull));
            }
            let s = &mut *s;
            while !s
                .memory
                .try_resize(Priority::Normal, (s.bytes + size) as u64)
            {
                let Some(old) = s.entries.pop_front() else {
                    s.sync_memory();
                    self.publish(s);
                    evicted.push((entry, Eviction::MemoryBudget));
                    return evicted;
                };
                s.bytes -= old.size();
                evicted.push((old, Eviction::MemoryBudget));
            }
            s.bytes += size;
            s.entries.push_back(entry);
            self.publish(s);
        }
        self.takeable.notify_one();
        evicted
    }

    /// Changes the budget; returns the oldest entries evicted to fit it.
    #[must_use]
    pub fn set_max_bytes(&self, max_bytes: usize) -> Vec<Entry> {
        let mut evicted = Vec::new();
        let mut s = self.lock();
        s.max_bytes = max_bytes;
        while s.bytes > s.max_bytes {
            let Some(old) = s.entries.pop_front() else {
                break;
            };
            s.bytes -= old.size();
            evicted.push(old);
        }
        s.sync_memory();
        self.publish(&s);
        evicted
    }

    /// Takes the oldest entry whose series has nothing in flight, and marks its series in
    /// flight until [`Queue::done`] or [`Queue::requeue`].
    pub fn try_take(&self) -> Option<Entry> {
        let mut s = self.lock();
        let idx = if s.in_flight.is_empty() {
            if s.entries.is_empty() {
                return None;
            }
            0
        } else {
            let in_flight = &s.in_flight;
            s.entries
                .iter()
                .position(|e| !in_flight.contains(&e.series))?
        };
        let entry = s.entries.remove(idx)?;
        s.bytes -= entry.size();
        s.sync_memory();
        s.in_flight.insert(entry.series);
        self.publish(&s);
        Some(entry)
    }

    /// Waits for an entry (see [`Queue::try_take`]).
    pub async fn take(&self) -> Entry {
        loop {
            let changed = self.takeable.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(e) = self.try_take() {
                return e;
            }
            changed.await;
        }
    }

    /// The entry of `series` taken last is finished (sent or dropped).
    pub fn done(&self, series: u64) {
        self.lock().in_flight.remove(&series);
        self.takeable.notify_one();
        self.progressed.notify_waiters();
    }

    /// Puts a taken entry back at the head (a sender stopped before finishing it). It is
    /// older than anything queued for its series, so series order is kept.
    pub fn requeue(&self, entry: Entry) {
        {
            let mut s = self.lock();
            s.in_flight.remove(&entry.series);
            s.bytes += entry.size();
            s.sync_memory();
            s.entries.push_front(entry);
            self.publish(&s);
        }
        self.takeable.notify_one();
        self.progressed.notify_waiters();
    }

    /// Removes and returns every queued entry (not those in flight).
    pub fn drain(&self) -> Vec<Entry> {
        let mut s = self.lock();
        let out: Vec<Entry> = s.entries.drain(..).collect();
        s.bytes = 0;
        s.sync_memory();
        self.publish(&s);
        drop(s);
        self.progressed.notify_waiters();
        out
    }

    /// Queued profiles and bytes (not counting those in flight).
    pub fn depth(&self) -> (usize, usize) {
        let s = self.lock();
        (s.entries.len(), s.bytes)
    }

    /// Nothing queued and nothing in flight.
    pub fn is_idle(&self) -> bool {
        let s = self.lock();
        s.entries.is_empty() && s.in_flight.is_empty()
    }

    /// Waits until [`Queue::is_idle`].
    pub async fn idle(&self) {
        loop {
            let changed = self.progressed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.is_idle() {
                return;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(series: u64, size: usize, tag: u8) -> Entry {
        Entry {
            series,
            labels: Bytes::new(),
            series_labels: Arc::from(Vec::new()),
            raw: Bytes::from(vec![tag; size]),
            received_at: SystemTime::UNIX_EPOCH,
            enqueued: Instant::now(),
        }
    }

    fn tag(e: &Entry) -> u8 {
        e.raw[0]
    }

    #[test]
    fn evicts_oldest_first_and_tracks_bytes() {
        let g = DepthGauges::default();
        let q = Queue::new(100, g.clone(), &Budget::default());
        assert!(q.push(entry(1, 40, 1)).is_empty());
        assert!(q.push(entry(2, 40, 2)).is_empty());
        let ev = q.push(entry(3, 40, 3));
        assert_eq!(
            ev.iter().map(|(e, why)| (tag(e), *why)).collect::<Vec<_>>(),
            [(1, Eviction::QueueFull)]
        );
        assert_eq!(q.depth(), (2, 80));
        assert_eq!((g.profiles.get(), g.bytes.get()), (2, 80));
        // Too big to ever fit: refused, nothing else evicted.
        let ev = q.push(entry(4, 101, 4));
        assert_eq!(
            ev.iter().map(|(e, why)| (tag(e), *why)).collect::<Vec<_>>(),
            [(4, Eviction::QueueFull)]
        );
        assert_eq!(q.depth(), (2, 80));
        let ev = q.set_max_bytes(50);
        assert_eq!(ev.iter().map(tag).collect::<Vec<_>>(), [2]);
        assert_eq!(q.depth(), (1, 40));
    }

    #[test]
    fn one_in_flight_per_series_in_order() {
        let q = Queue::new(1000, DepthGauges::default(), &Budget::default());
        for (s, t) in [(1, 1), (1, 2), (2, 3), (1, 4), (2, 5)] {
            assert!(q.push(entry(s, 1, t)).is_empty());
        }
        let a = q.try_take().expect("a");
        let b = q.try_take().expect("b");
        assert_eq!((tag(&a), tag(&b)), (1, 3));
        // Both series busy.
        assert!(q.try_take().is_none());
        q.done(1);
        let c = q.try_take().expect("c");
        assert_eq!(tag(&c), 2);
        // A stopped sender puts its entry back in front: order within series 2 kept.
        q.requeue(b);
        let d = q.try_take().expect("d");
        assert_eq!(tag(&d), 3);
        assert!(!q.is_idle());
        q.done(1);
        q.done(2);
        assert_eq!(q.drain().iter().map(tag).collect::<Vec<_>>(), [4, 5]);
        assert!(q.is_idle());
    }

    #[test]
    fn the_memory_budget_evicts_oldest_first_and_says_so() {
        // Normal priority may fill 80 of 100 bytes; 20 are held elsewhere.
        let budget = Budget::new(100);
        let held = budget.reserve(Use::Scrape, 20);
        let q = Queue::new(1000, DepthGauges::default(), &budget);
        assert!(q.push(entry(1, 20, 1)).is_empty());
        assert!(q.push(entry(2, 20, 2)).is_empty());
        assert!(q.push(entry(3, 20, 3)).is_empty());
        assert_eq!(budget.used_by(Use::WriteQueue), 60);
        // 20 + 60 + 20 is over 80: the oldest goes.
        let ev = q.push(entry(4, 20, 4));
        assert_eq!(
            ev.iter().map(|(e, why)| (tag(e), *why)).collect::<Vec<_>>(),
            [(1, Eviction::MemoryBudget)]
        );
        assert_eq!(budget.used_by(Use::WriteQueue), 60);
        // Bigger than all the room there is: everything goes, the new one too.
        let ev = q.push(entry(5, 61, 5));
        assert_eq!(
            ev.iter().map(|(e, why)| (tag(e), *why)).collect::<Vec<_>>(),
            [
                (2, Eviction::MemoryBudget),
                (3, Eviction::MemoryBudget),
                (4, Eviction::MemoryBudget),
                (5, Eviction::MemoryBudget)
            ]
        );
        assert_eq!((q.depth(), budget.used_by(Use::WriteQueue)), ((0, 0), 0));
        // Taking and draining give the bytes back.
        drop(held);
        assert!(q.push(entry(6, 50, 6)).is_empty());
        let e = q.try_take().expect("entry");
        assert_eq!(budget.used_by(Use::WriteQueue), 0);
        q.requeue(e);
        assert_eq!(budget.used_by(Use::WriteQueue), 50);
        q.drain();
        assert_eq!(budget.used(), 0);
    }
}
