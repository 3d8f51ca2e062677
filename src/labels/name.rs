//! [`LabelName`]: a label name that copies without touching a reference count when it is one of
//! the process's shared names.
//!
//! Every copy of a target copies all its names (60 on a Kubernetes pod), and copies and drops
//! are most of what relabelling a kept target costs: with the names as `Arc<str>`, half of that
//! was one atomic increment and one decrement per name, on counts every thread shares. A shared
//! name (`intern`) lives as long as the process, so it is held as a plain `&'static str`;
//! only names kept out of the table (a network client's, or any past the table's cap) are
//! reference-counted.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// A label name: a shared name of the process (`&'static`) or one of its own (`Arc<str>`).
/// Compares, orders and hashes as its text, whichever it is.
#[derive(Clone)]
pub struct LabelName(Repr);

#[derive(Clone)]
enum Repr {
    Shared(&'static str),
    Own(Arc<str>),
}

impl LabelName {
    /// A name from the process-wide table (or a literal): copies are free.
    pub(super) const fn from_static(name: &'static str) -> Self {
        LabelName(Repr::Shared(name))
    }

    /// The name as `&'static str` if it is one of the shared ones.
    pub(super) fn as_static(&self) -> Option<&'static str> {
        match self.0 {
            Repr::Shared(s) => Some(s),
            Repr::Own(_) => None,
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Shared(s) => s,
            Repr::Own(s) => s,
        }
    }

    /// True when both are the same allocation (not only the same text).
    pub fn ptr_eq(a: &LabelName, b: &LabelName) -> bool {
        std::ptr::eq(a.as_str().as_ptr(), b.as_str().as_ptr()) && a.len() == b.len()
    }
}

impl Deref for LabelName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for LabelName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for LabelName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for LabelName {
    fn eq(&self, other: &Self) -> bool {
        LabelName::ptr_eq(self, other) || self.as_str() == other.as_str()
    }
}

impl Eq for LabelName {}

impl PartialEq<str> for LabelName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for LabelName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for LabelName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LabelName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for LabelName {
    /// As the text hashes, so maps keyed by names can be searched with a `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for LabelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for LabelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name of its own (not looked up in the shared table: see `shared_name` for that).
impl From<&str> for LabelName {
    fn from(s: &str) -> Self {
        LabelName(Repr::Own(Arc::from(s)))
    }
}

impl From<String> for LabelName {
    fn from(s: String) -> Self {
        LabelName(Repr::Own(Arc::from(s)))
    }
}

impl From<Arc<str>> for LabelName {
    fn from(s: Arc<str>) -> Self {
        LabelName(Repr::Own(s))
    }
}

impl serde::Serialize for LabelName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn both_kinds_behave_as_their_text() {
        let a = LabelName::from_static("job");
        let b = LabelName::from("job");
        let c = LabelName::from(String::from("pod"));
        assert_eq!(a, b);
        assert!(!LabelName::ptr_eq(&a, &b));
        assert!(LabelName::ptr_eq(&a, &a.clone()));
        assert!(a < c && b < c);
        assert_eq!(a.as_static(), Some("job"));
        assert_eq!(b.as_static(), None);
        assert_eq!(format!("{a} {b:?}"), "job \"job\"");
        let set: HashSet<LabelName> = [a, c].into_iter().collect();
        assert!(set.contains("job") && set.contains("pod") && !set.contains("x"));
        assert_eq!(serde_json::to_string(&b).ok().as_deref(), Some("\"job\""));
    }
}
