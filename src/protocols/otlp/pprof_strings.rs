//! A pprof string table built with each string once, as Pyroscope's OTLP conversion builds it
//! (`addstr` in `pkg/ingester/otlp/convert.go`). More than tidiness: Pyroscope's distributor
//! finds a label key by its last index in the table (`LabelKeysMapByString`), so a second copy
//! of `span_id` would leave the samples naming the first copy with an ordinary label, which
//! then becomes a series label.

use std::collections::HashMap;

/// The table, and where each string is. Looked up by a 64-bit hash of the content rather than
/// the content itself, so a long string is held once (in the table), not twice; strings whose
/// hash is taken by another string are looked up by content in `collisions`.
#[derive(Debug)]
pub(super) struct PprofStrings {
    table: Vec<String>,
    by_hash: HashMap<u64, i64>,
    collisions: HashMap<String, i64>,
}

impl PprofStrings {
    /// A table holding "" at index 0, as pprof requires.
    pub(super) fn new() -> Self {
        let mut s = PprofStrings {
            table: Vec::new(),
            by_hash: HashMap::new(),
            collisions: HashMap::new(),
        };
        s.intern("");
        s
    }

    /// The index of `text`, added if it is not in the table yet.
    pub(super) fn intern(&mut self, text: &str) -> i64 {
        let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        match self.by_hash.get(&hash) {
            Some(&i) if self.at(i) == Some(text) => i,
            Some(_) => {
                if let Some(&i) = self.collisions.get(text) {
                    return i;
                }
                let i = self.push(text);
                self.collisions.insert(text.to_owned(), i);
                i
            }
            None => {
                let i = self.push(text);
                self.by_hash.insert(hash, i);
                i
            }
        }
    }

    pub(super) fn into_table(self) -> Vec<String> {
        self.table
    }

    fn at(&self, i: i64) -> Option<&str> {
        usize::try_from(i)
            .ok()
            .and_then(|u| self.table.get(u))
            .map(String::as_str)
    }

    fn push(&mut self, text: &str) -> i64 {
        // A table is bounded by the request it is built from (< 2 GiB), far below i64::MAX.
        let i = i64::try_from(self.table.len()).unwrap_or(i64::MAX);
        self.table.push(text.to_owned());
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_string_is_held_once() {
        let mut s = PprofStrings::new();
        // (string, index it gets)
        for (text, want) in [
            ("", 0),
            ("span_id", 1),
            ("abc", 2),
            ("span_id", 1),
            ("", 0),
            ("abc", 2),
            ("trace_id", 3),
        ] {
            assert_eq!(s.intern(text), want, "{text:?}");
        }
        assert_eq!(s.into_table(), ["", "span_id", "abc", "trace_id"]);
    }

    #[test]
    fn strings_sharing_a_hash_are_told_apart() {
        let mut s = PprofStrings::new();
        assert_eq!(s.intern("a"), 1);
        // "b" made to collide with "a": its hash already names "a"'s index.
        s.by_hash.insert(xxhash_rust::xxh3::xxh3_64(b"b"), 1);
        // (string, index it gets)
        for (text, want) in [("b", 2), ("b", 2), ("a", 1), ("c", 3), ("b", 2)] {
            assert_eq!(s.intern(text), want, "{text:?}");
        }
        assert_eq!(s.collisions.len(), 1);
        assert_eq!(s.into_table(), ["", "a", "b", "c"]);
    }
}
