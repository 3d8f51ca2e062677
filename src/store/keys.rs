//! The on-disk layout: table definitions, and how labels and times become bytes.
//!
//! | table | key | value |
//! |---|---|---|
//! | `series` | series id | labels, length-prefixed (see [`encode_labels`]) |
//! | `chunks` | (series id, time ns, chunk index) | up to [`CHUNK`] bytes of the stored profile |
//! | `by_time` | (time ns, series id) | the stored profile's length in bytes |
//! | `marks` | (time ns, name) | nothing |
//! | `meta` | name | `version`, and the running totals `profiles`, `bytes`, `pages` |
//!
//! Profiles are split into chunks because redb keeps every value inside one B-tree leaf and
//! gives a leaf whose value is larger than a page a power-of-two run of pages: a 33 KiB
//! profile would occupy 64 KiB. A chunk of [`CHUNK`] bytes plus its key and the leaf header
//! fills exactly one 4 KiB page, so only each profile's last chunk wastes space (half a page on
//! average). `chunks` is ordered by series then time, which is the order `select` reads;
//! `by_time` orders everything by time, which is what retention and `count` walk.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redb::TableDefinition;

use super::error::StoreError;
use crate::profiles::Label;

/// Bumped whenever the layout changes; a store with another version is refused.
pub(crate) const VERSION: u64 = 1;

/// redb's page size (not configurable in redb 3).
pub(crate) const PAGE: u64 = 4096;

/// Leaf header (4) + one value-end offset (4) + the fixed 20-byte key: what remains of a page.
pub(crate) const CHUNK: usize = 4096 - 4 - 4 - 20;

pub(crate) const SERIES: TableDefinition<u64, &[u8]> = TableDefinition::new("series");
pub(crate) const CHUNKS: TableDefinition<(u64, u64, u32), &[u8]> = TableDefinition::new("chunks");
pub(crate) const BY_TIME: TableDefinition<(u64, u64), u32> = TableDefinition::new("by_time");
pub(crate) const MARKS: TableDefinition<(u64, &str), ()> = TableDefinition::new("marks");
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

pub(crate) const META_VERSION: &str = "version";
pub(crate) const META_PROFILES: &str = "profiles";
pub(crate) const META_BYTES: &str = "bytes";
pub(crate) const META_PAGES: &str = "pages";

/// Chunks (hence pages) a stored profile of `len` bytes occupies.
pub(crate) fn chunks_of(len: u64) -> u64 {
    len.div_ceil(CHUNK as u64)
}

/// Nanoseconds since the Unix epoch; times before it are stored as the epoch, times past
/// year 2554 as the last representable instant.
pub(crate) fn to_nanos(t: SystemTime) -> u64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        Err(_) => 0,
    }
}

pub(crate) fn from_nanos(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

/// `[u32 count] ([u32 len] name [u32 len] value)*`, little-endian. Labels are already sorted
/// and unique (`write::labels::prepare`), so equal label sets encode to equal bytes and the
/// encoding can key the in-memory series index.
pub(crate) fn encode_labels(labels: &[Label]) -> Vec<u8> {
    let size = 4 + labels
        .iter()
        .map(|(n, v)| 8 + n.len() + v.len())
        .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&len32(labels.len()).to_le_bytes());
    for (n, v) in labels {
        for s in [n, v] {
            out.extend_from_slice(&len32(s.len()).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

/// Label names and values are far below 4 GiB; saturating keeps the encoder total and the
/// decoder rejects the result rather than misreading it.
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Inverse of [`encode_labels`]; the bytes come from disk, so every length is checked.
pub(crate) fn decode_labels(path: &Path, id: u64, mut b: &[u8]) -> Result<Vec<Label>, StoreError> {
    let bad = |what: &str| StoreError::corrupt(path, format!("series {id}: {what}"));
    let mut take = |n: usize| -> Result<&[u8], StoreError> {
        if b.len() < n {
            return Err(bad("labels truncated"));
        }
        let (head, rest) = b.split_at(n);
        b = rest;
        Ok(head)
    };
    let read_u32 = |bytes: &[u8]| -> usize {
        let mut a = [0u8; 4];
        a.copy_from_slice(bytes);
        u32::from_le_bytes(a) as usize
    };
    let count = read_u32(take(4)?);
    let mut labels = Vec::with_capacity(count.min(256));
    for _ in 0..count {
        let mut pair = [String::new(), String::new()];
        for s in &mut pair {
            let n = read_u32(take(4)?);
            *s = std::str::from_utf8(take(n)?)
                .map_err(|_| bad("label is not UTF-8"))?
                .to_string();
        }
        let [n, v] = pair;
        labels.push((n, v));
    }
    if !b.is_empty() {
        return Err(bad("trailing bytes after labels"));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_garbage_is_refused() {
        let labels: Vec<Label> = vec![
            ("__name__".into(), "process_cpu".into()),
            ("service_name".into(), "ünïcode".into()),
            ("z".into(), String::new()),
        ];
        let enc = encode_labels(&labels);
        let p = Path::new("/x");
        assert_eq!(decode_labels(p, 1, &enc).expect("decodes"), labels);
        assert_eq!(decode_labels(p, 1, &encode_labels(&[])).expect("empty"), []);
        for cut in 0..enc.len() {
            assert!(decode_labels(p, 1, &enc[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = enc.clone();
        extra.push(0);
        assert!(decode_labels(p, 1, &extra).is_err());
        assert!(decode_labels(p, 1, &[255, 255, 255, 255]).is_err());
    }

    #[test]
    fn times_clamp_instead_of_failing() {
        assert_eq!(to_nanos(UNIX_EPOCH - Duration::from_secs(1)), 0);
        let t = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
        assert_eq!(from_nanos(to_nanos(t)), t);
        assert_eq!(chunks_of(0), 0);
        assert_eq!(chunks_of(1), 1);
        assert_eq!(chunks_of(CHUNK as u64), 1);
        assert_eq!(chunks_of(CHUNK as u64 + 1), 2);
    }
}
