//! [`LabelValue`]: a label value stored inside the label set when it is short.
//!
//! Copying a target copies every value. As `Arc<str>`, each copy was an atomic increment on the
//! value's own allocation and each drop a decrement: on a 60-label pod that is 60 scattered
//! cache lines touched twice, which the relabel benchmark measured as the larger half of
//! copying a kept target. Most values of discovered targets are short (`true`, ports, phases,
//! namespaces, IPs, most pod-label values), so a value of up to 23 bytes is kept in the
//! pair itself (copied with it, nothing to count or free), and only longer ones are shared.
//! That is exactly `smol_str::SmolStr` (24 bytes, inline up to 23, `Arc<str>` beyond), so the
//! type is a thin wrapper over it that keeps the label-set API (it replaced a hand-written
//! inline string with its own `unsafe`). Measured against that hand-written type with callgrind
//! (`RELABEL_BENCH_PROFILE_ROUNDS=1 RELABEL_BENCH_ONLY=<scenario> valgrind --tool=callgrind
//! --toggle-collect='*profile_rounds*' <relabel bench binary> --bench`, 10,000 targets):
//! `chart` 316.1 M -> 317.0 M instructions (+0.3 %), `all_kept` 114.0 M -> 118.2 M (+3.6 %,
//! mostly `SmolStr::clone`'s heap check when a target's pairs are first copied).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use smol_str::SmolStr;

/// A label value: short ones inline, longer ones shared. Compares, orders and hashes as its
/// text.
#[derive(Clone)]
pub struct LabelValue(SmolStr);

const _: () = assert!(std::mem::size_of::<LabelValue>() == 24);

impl LabelValue {
    /// A value with the text `s` (inline when short, else in a new shared allocation).
    #[inline]
    pub fn new(s: &str) -> Self {
        LabelValue(SmolStr::new(s))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// True when the text is held inline (tests and docs of the layout).
    pub fn is_inline(&self) -> bool {
        !self.0.is_heap_allocated()
    }
}

impl Default for LabelValue {
    fn default() -> Self {
        LabelValue::new("")
    }
}

impl Deref for LabelValue {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for LabelValue {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for LabelValue {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for LabelValue {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        // Two handles of one shared allocation are equal without reading it.
        if self.0.is_heap_allocated()
            && other.0.is_heap_allocated()
            && std::ptr::eq(self.as_str().as_ptr(), other.as_str().as_ptr())
            && self.len() == other.len()
        {
            return true;
        }
        // As text, not `SmolStr`'s `==` (which compares two inline values' whole 23-byte
        // buffers): the lengths usually differ already, and callgrind counted 3 % more
        // instructions in the relabel bench's `all_kept` with the buffer comparison.
        self.as_str() == other.as_str()
    }
}

impl Eq for LabelValue {}

impl PartialEq<str> for LabelValue {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for LabelValue {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for LabelValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LabelValue {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for LabelValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for LabelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for LabelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for LabelValue {
    fn from(s: &str) -> Self {
        LabelValue::new(s)
    }
}

impl From<&String> for LabelValue {
    fn from(s: &String) -> Self {
        LabelValue::new(s)
    }
}

impl From<String> for LabelValue {
    fn from(s: String) -> Self {
        LabelValue(SmolStr::from(s))
    }
}

impl From<Arc<str>> for LabelValue {
    /// Keeps sharing `s` when it is long (no copy of its bytes).
    fn from(s: Arc<str>) -> Self {
        LabelValue(SmolStr::from(s))
    }
}

impl serde::Serialize for LabelValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INLINE: usize = SmolStr::INLINE_CAP;

    #[test]
    fn short_values_inline_long_ones_shared() {
        // (text, held inline)
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("true", true),
            ("é€😀", true),
            (&"x".repeat(INLINE), true),
            (&"x".repeat(INLINE + 1), false),
            ("containerd://0123456789abcdef0123456789abcdef", false),
        ];
        for (text, inline) in cases {
            for v in [
                LabelValue::new(text),
                LabelValue::from(text.to_string()),
                LabelValue::from(Arc::<str>::from(*text)),
            ] {
                assert_eq!(v.as_str(), *text);
                assert_eq!(v.is_inline(), *inline, "{text:?}");
                assert_eq!(v.clone(), v);
                assert_eq!(v, *text);
                assert_eq!(format!("{v:?}"), format!("{text:?}"));
            }
        }
        assert!(LabelValue::new("a") < LabelValue::new(&"b".repeat(30)));
        assert!(LabelValue::default().is_empty());
    }
}
