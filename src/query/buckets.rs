//! A window cut into time buckets, each merged on its own: the parts `scraper diff`'s
//! statistics compare (docs/DIFF-STATISTICS.md). Here, below the CLI and the server, so that
//! `scraper diff`, `scraper window` and the explorer's diff cut windows the same way.

use std::time::SystemTime;

use super::source::{Merged, ProfileSource, Query, QueryError};

/// One bucket: its merged profiles and its range.
pub type Bucket = (Merged, (SystemTime, SystemTime));

/// Cuts `query`'s range into at most `parts` buckets and merges each; `merged` is the whole
/// range's answer. There are at most as many buckets as each instance has profiles, so a
/// bucket is at least a scrape interval long and a profile ending in it started inside the
/// window (which is why only the first bucket leaves out straddling profiles, as the whole
/// window does). A bucket without profiles is no part. Sources that do not count profiles
/// (remote ones) get `parts` buckets. Fewer than 2 buckets is none: no spread to estimate.
pub fn buckets(
    source: &dyn ProfileSource,
    query: &Query,
    merged: &Merged,
    parts: usize,
) -> Result<Vec<Bucket>, QueryError> {
    let per_instance = if merged.profiles > 0 {
        merged.profiles / merged.series.max(1)
    } else {
        parts
    };
    let n = parts.min(per_instance);
    let length = query.to.duration_since(query.from).unwrap_or_default();
    if n < 2 || length.is_zero() {
        return Ok(Vec::new());
    }
    let step = length / n as u32;
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let from = query.from + step * k as u32;
        let to = if k + 1 == n { query.to } else { from + step };
        let bucket = Query {
            from,
            to,
            exclude_straddling: k == 0,
            ..query.clone()
        };
        if let Some(m) = source.select_merge(&bucket, &mut |_, _| {})? {
            out.push((m, (from, to)));
        }
    }
    Ok(out)
}
