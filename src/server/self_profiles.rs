//! What `/debug/pprof/goroutine` and `/debug/pprof/heap` truthfully say about scraper, a Rust
//! process with neither goroutines nor a sampling heap profiler:
//!
//! * `goroutine`: the tasks alive now, counted by name (`runtime::task::live`): a pprof profile
//!   of `goroutine/count` whose stacks are `async` or `blocking` then the task's name, or with
//!   `?debug=1` the same as text;
//! * `heap`: resident memory broken down by the memory budget's accounts
//!   (`scraper_memory_accounted_bytes{use}`) plus what no account covers: `inuse_space/bytes`,
//!   or text with `?debug=1`. Not per allocation site: mimalloc does not sample allocations.

use std::fmt::Write as _;

use crate::budget::{Budget, Use};
use crate::pprof::named::NamedProfile;
use crate::pprof::proto::Profile;
use crate::runtime::task::{self, Kind};

/// Frames under which the accounted and unaccounted parts of the heap profile sit.
const ACCOUNTED: &str = "accounted (memory budget)";
const UNACCOUNTED: &str = "unaccounted";

/// The live tasks as a `goroutine/count` profile.
pub(super) fn tasks_profile(now_nanos: i64) -> Profile {
    let mut b = NamedProfile::new();
    b.sample_type("goroutine", "count");
    for (name, kind, n) in task::live() {
        b.add([kind.as_str(), name], vec![count(n)]);
    }
    b.profile_mut().time_nanos = now_nanos;
    b.finish_with_period("goroutine", "count")
}

/// The live tasks as text, most numerous first.
pub(super) fn tasks_text() -> String {
    let mut live = task::live();
    live.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    let total: usize = live.iter().map(|t| t.2).sum();
    let blocking: usize = live
        .iter()
        .filter(|t| t.1 == Kind::Blocking)
        .map(|t| t.2)
        .sum();
    let mut out = format!(
        "task profile: total {total} ({} async, {blocking} blocking)\n\
         scraper is a Rust program: these are its tokio tasks and blocking jobs, by name.\n\n",
        total - blocking
    );
    for (name, kind, n) in live {
        let _ = writeln!(out, "{n} @ {name} ({})", kind.as_str());
    }
    out
}

/// Resident memory by account: `(stack, bytes)`.
fn memory(budget: &Budget, resident: Option<u64>) -> Vec<(Vec<&'static str>, u64)> {
    let mut parts: Vec<(Vec<&'static str>, u64)> = Use::ALL
        .iter()
        .map(|&u| (vec![ACCOUNTED, u.as_str()], budget.used_by(u)))
        .filter(|(_, bytes)| *bytes > 0)
        .collect();
    let accounted: u64 = parts.iter().map(|p| p.1).sum();
    if let Some(rss) = resident {
        parts.push((vec![UNACCOUNTED], rss.saturating_sub(accounted)));
    }
    parts
}

/// Resident memory by account as an `inuse_space/bytes` profile.
pub(super) fn heap_profile(budget: &Budget, now_nanos: i64) -> Profile {
    let mut b = NamedProfile::new();
    b.sample_type("inuse_space", "bytes");
    for (stack, bytes) in memory(budget, crate::budget::rss::current()) {
        b.add(stack, vec![i64::try_from(bytes).unwrap_or(i64::MAX)]);
    }
    b.profile_mut().time_nanos = now_nanos;
    b.finish_with_period("space", "bytes")
}

/// The same breakdown as text.
pub(super) fn heap_text(budget: &Budget) -> String {
    let resident = crate::budget::rss::current();
    let mut out = String::from(
        "heap profile of scraper (a Rust program using mimalloc, which does not sample \
         allocations):\nresident memory by memory-budget account, and what no account covers.\n\n",
    );
    match resident {
        Some(rss) => {
            let _ = writeln!(
                out,
                "resident       {rss:>14} bytes (process_resident_memory_bytes)"
            );
        }
        None => out.push_str("resident       unknown (no /proc/self/statm)\n"),
    }
    for (stack, bytes) in memory(budget, resident) {
        let _ = writeln!(out, "{:<14} {bytes:>14} bytes", stack[stack.len() - 1]);
    }
    let limit = budget.limit();
    if limit > 0 {
        let _ = writeln!(out, "\nbudget limit   {limit:>14} bytes (--memory.limit)");
    } else {
        out.push_str("\nno budget limit (--memory.limit)\n");
    }
    out
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Use;

    fn frames(p: &Profile, sample: usize) -> Vec<String> {
        p.sample[sample]
            .location_id
            .iter()
            .rev()
            .map(|id| {
                let f = &p.function[*id as usize - 1];
                p.string_table[f.name as usize].clone()
            })
            .collect()
    }

    #[test]
    fn heap_is_resident_memory_by_account() {
        let budget = Budget::new(1 << 30);
        let _r = budget.reserve(Use::WriteQueue, 3000);
        let parts = memory(&budget, Some(10_000));
        assert_eq!(
            parts,
            vec![
                (vec![ACCOUNTED, "write_queue"], 3000),
                (vec![UNACCOUNTED], 7000)
            ]
        );
        let p = heap_profile(&budget, 1);
        crate::pprof::validate(&p).expect("valid");
        assert_eq!(frames(&p, 0), [ACCOUNTED, "write_queue"]);
        assert!(heap_text(&budget).contains("write_queue"));
    }

    #[test]
    fn tasks_are_listed_by_name() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let t = task::spawn("test.self_profiles", std::future::pending::<()>());
            let p = tasks_profile(1);
            crate::pprof::validate(&p).expect("valid");
            let i = (0..p.sample.len())
                .find(|&i| frames(&p, i) == ["async", "test.self_profiles"])
                .expect("the task is listed");
            assert_eq!(p.sample[i].value, vec![1]);
            assert!(tasks_text().contains("1 @ test.self_profiles (async)"));
            t.abort();
        });
    }
}
