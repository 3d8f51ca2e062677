//! [`LabelValue`]: a label value stored inside the label set when it is short.
//!
//! Copying a target copies every value. As `Arc<str>`, each copy was an atomic increment on the
//! value's own allocation and each drop a decrement: on a 60-label pod that is 60 scattered
//! cache lines touched twice, which the relabel benchmark measured as the larger half of
//! copying a kept target. Most values of discovered targets are short (`true`, ports, phases,
//! namespaces, IPs, most pod-label values), so a value of up to [`INLINE`] bytes is kept in the
//! pair itself (copied with it, nothing to count or free), and only longer ones are shared.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Longest value kept inline: what fits with its length and the variant's tag in the 24 bytes
/// of the type (16 for an `Arc<str>`, rounded up to its alignment).
pub const INLINE: usize = 22;

/// A label value: short ones inline, longer ones shared. Compares, orders and hashes as its
/// text.
#[derive(Clone)]
pub struct LabelValue(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]` is a whole `&str`'s bytes (the only way one is made: [`LabelValue::new`]).
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap(Arc<str>),
}

const _: () = assert!(std::mem::size_of::<LabelValue>() == 24);

impl LabelValue {
    /// A value with the text `s` (inline when short, else in a new shared allocation).
    pub fn new(s: &str) -> Self {
        match Self::inline(s) {
            Some(v) => v,
            None => LabelValue(Repr::Heap(Arc::from(s))),
        }
    }

    fn inline(s: &str) -> Option<Self> {
        if s.len() > INLINE {
            return None;
        }
        let mut bytes = [0u8; INLINE];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        Some(LabelValue(Repr::Inline {
            len: s.len() as u8,
            bytes,
        }))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                let b = &bytes[..usize::from(*len)];
                // SAFETY: an inline value is only made by `inline`, which copies all the bytes
                // of one `&str` to the start of `bytes` and records their count in `len`; the
                // fields are private and never changed afterwards, so `b` is that `&str`.
                unsafe { std::str::from_utf8_unchecked(b) }
            }
            Repr::Heap(s) => s,
        }
    }

    /// True when the text is held inline (tests and docs of the layout).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
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
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Heap(a), Repr::Heap(b)) if Arc::ptr_eq(a, b) => true,
            _ => self.as_str() == other.as_str(),
        }
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
        match Self::inline(&s) {
            Some(v) => v,
            None => LabelValue(Repr::Heap(Arc::from(s))),
        }
    }
}

impl From<Arc<str>> for LabelValue {
    /// Keeps sharing `s` when it is long (no copy of its bytes).
    fn from(s: Arc<str>) -> Self {
        match Self::inline(&s) {
            Some(v) => v,
            None => LabelValue(Repr::Heap(s)),
        }
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
