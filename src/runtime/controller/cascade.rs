//! Re-evaluation cascades: when a component publishes different exports, the blocks that
//! reference it are evaluated again, and so on down the graph.

use std::collections::{BTreeSet, HashSet};
use std::sync::Weak;

use tokio::sync::mpsc;

use super::{Inner, State};
use crate::runtime::component::ExportsChanged;

/// A node waiting in a cascade, ordered by its position in the evaluation order so that a node
/// is evaluated after everything it depends on that is also waiting.
type Queued = (usize, String);

/// Runs until the controller is dropped. Notifications that arrive while a cascade is running
/// are folded into it, which batches bursts of changes into one evaluation per node.
pub(super) async fn worker(inner: Weak<Inner>, mut rx: mpsc::UnboundedReceiver<ExportsChanged>) {
    while let Some(first) = rx.recv().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let mut consumed = 1;
        {
            let mut state = inner.state.lock().await;
            inner.ctl.evaluating.set(1);
            state.cascade(&inner, first, &mut rx, &mut consumed);
            inner.ctl.evaluating.set(0);
            inner.ctl.evaluation_queue_size.set(0);
            state.update_running_metric(&inner.ctl);
        }
        inner.settle(consumed);
    }
}

impl State {
    /// Evaluates every queued node once, in dependency order. A change published during the
    /// cascade queues its dependants; if one of them was already evaluated in this round it is
    /// evaluated again in a following round, so no node ever keeps stale inputs.
    fn cascade(
        &mut self,
        inner: &Inner,
        first: ExportsChanged,
        rx: &mut mpsc::UnboundedReceiver<ExportsChanged>,
        consumed: &mut usize,
    ) {
        let mut done: HashSet<String> = HashSet::new();
        let mut queue: BTreeSet<Queued> = BTreeSet::new();
        let mut next_round: BTreeSet<Queued> = BTreeSet::new();
        self.enqueue_dependants(&first, &done, &mut queue, &mut next_round);
        loop {
            while let Ok(event) = rx.try_recv() {
                *consumed += 1;
                self.enqueue_dependants(&event, &done, &mut queue, &mut next_round);
            }
            inner.ctl.evaluation_queue_size.set(queue.len() as i64);
            let Some((_, id)) = queue.pop_first() else {
                if next_round.is_empty() {
                    return;
                }
                queue = std::mem::take(&mut next_round);
                done.clear();
                continue;
            };
            // Errors are recorded in the node's health and logged by `evaluate`.
            let _ = self.evaluate(inner, &id);
            done.insert(id);
        }
    }

    /// Queues the dependants of the node whose exports changed, ignoring notifications from
    /// instances that a reload has since removed or replaced.
    fn enqueue_dependants(
        &self,
        event: &ExportsChanged,
        done: &HashSet<String>,
        queue: &mut BTreeSet<Queued>,
        next_round: &mut BTreeSet<Queued>,
    ) {
        let Some(node) = self.nodes.get(&event.cell.id) else {
            return;
        };
        if !std::sync::Arc::ptr_eq(&node.exports, &event.cell) {
            return;
        }
        for dependant in &node.referenced_by {
            let Some(&pos) = self.position.get(dependant) else {
                continue;
            };
            let item = (pos, dependant.clone());
            if done.contains(dependant) {
                next_round.insert(item);
            } else {
                queue.insert(item);
            }
        }
    }
}
