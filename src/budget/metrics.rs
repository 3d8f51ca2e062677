//! The budget's metrics (process-wide, no component labels):
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `scraper_memory_limit_bytes` | | the budget (`--memory.limit`), 0 for none |
//! | `scraper_memory_accounted_bytes` | use | bytes reserved now: `scrape`, `delta_state`, `write_queue`, `store_queue`, `processing_pool`, `write_trim` |
//! | `scraper_memory_rss_bytes` | | resident memory at the last sample |
//! | `scraper_memory_unaccounted_bytes` | | RSS beyond the accounted bytes, taken off the budget |
//! | `scraper_memory_refused_total` | use, priority | reservations refused for lack of budget |
//! | `scraper_memory_shed_total` | use, priority | work given up for lack of budget: scrapes skipped, delta states dropped, queued profiles evicted |

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::{Priority, Use};
use crate::runtime::metrics::MetricsRegistry;

type Labels = Vec<(&'static str, &'static str)>;

#[derive(Debug)]
pub struct BudgetMetrics {
    pub(super) limit: Gauge,
    pub(super) rss: Gauge,
    pub(super) unaccounted: Gauge,
    accounted: Family<Labels, Gauge>,
    refused: Family<Labels, Counter>,
    shed: Family<Labels, Counter>,
}

impl BudgetMetrics {
    /// Registers the set in the process's registry (once).
    pub fn register(registry: &MetricsRegistry) -> std::sync::Arc<BudgetMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = BudgetMetrics {
                limit: Gauge::default(),
                rss: Gauge::default(),
                unaccounted: Gauge::default(),
                accounted: Family::default(),
                refused: Family::default(),
                shed: Family::default(),
            };
            r.register(
                "scraper_memory_limit_bytes",
                "The memory budget (--memory.limit); 0 means none.",
                m.limit.clone(),
            );
            r.register(
                "scraper_memory_rss_bytes",
                "Resident memory at the budget's last sample.",
                m.rss.clone(),
            );
            r.register(
                "scraper_memory_unaccounted_bytes",
                "Resident memory beyond the accounted bytes, taken off the budget.",
                m.unaccounted.clone(),
            );
            r.register(
                "scraper_memory_accounted_bytes",
                "Bytes reserved against the memory budget, by use.",
                m.accounted.clone(),
            );
            r.register(
                "scraper_memory_refused",
                "Reservations refused for lack of memory budget.",
                m.refused.clone(),
            );
            r.register(
                "scraper_memory_shed",
                "Work given up for lack of memory budget: scrapes skipped, delta states dropped, queued profiles evicted, received requests refused.",
                m.shed.clone(),
            );
            for u in Use::ALL {
                m.accounted.get_or_create(&vec![("use", u.as_str())]).set(0);
            }
            m
        })
    }

    pub(super) fn accounted(&self, what: Use, bytes: u64) {
        self.accounted
            .get_or_create(&vec![("use", what.as_str())])
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    pub(super) fn refused(&self, what: Use, priority: Priority) {
        self.refused
            .get_or_create(&vec![
                ("use", what.as_str()),
                ("priority", priority.as_str()),
            ])
            .inc();
    }

    pub(super) fn shed(&self, what: Use, priority: Priority) {
        self.shed
            .get_or_create(&vec![
                ("use", what.as_str()),
                ("priority", priority.as_str()),
            ])
            .inc();
    }
}
