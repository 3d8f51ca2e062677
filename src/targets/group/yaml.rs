//! YAML target groups, decoded as Prometheus decodes them (`yaml.UnmarshalStrict` of
//! `targetgroup.Group` with gopkg.in/yaml.v2).
//!
//! yaml.v2 decodes straight into Go strings, so a scalar keeps the text it was written with
//! (`1.10`, `007`, `True`, `1e3` stay as they are), a null (`~`, `null`, nothing) is the empty
//! string, and only the first document of a stream is read (one with no document at all, such
//! as a file of comments, is an empty list). The visitors below do the same: every scalar is
//! read with `deserialize_str`, which serde_norway answers with the scalar's raw text, never
//! through a `Value` that would reformat numbers and booleans.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};

use super::{Group, GroupError};

/// Parses a YAML document (a file ending in `.yml` or `.yaml`).
pub fn from_yaml(bytes: &[u8]) -> Result<Vec<Group>, GroupError> {
    let mut docs = serde_norway::Deserializer::from_slice(bytes);
    // yaml.v2's Unmarshal reads the first document and ignores the rest.
    let Some(first) = docs.next() else {
        return Ok(Vec::new());
    };
    first
        .deserialize_option(Groups)
        .map_err(|e| GroupError(e.to_string()))
}

/// The document: a list of groups, or null (no groups).
struct Groups;

impl<'de> Visitor<'de> for Groups {
    type Value = Vec<Group>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of target groups")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut groups = Vec::new();
        while let Some(group) = seq.next_element_seed(GroupSeed(groups.len()))? {
            groups.push(group);
        }
        Ok(groups)
    }
}

/// Group number `.0` of the list (for error messages).
struct GroupSeed(usize);

impl<'de> DeserializeSeed<'de> for GroupSeed {
    type Value = Group;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Group, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for GroupSeed {
    type Value = Group;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "target group {} to be a map", self.0)
    }

    fn visit_none<E: de::Error>(self) -> Result<Group, E> {
        Err(E::custom("nil target group item found"))
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Group, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Group, A::Error> {
        let i = self.0;
        let mut group = Group::default();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key_seed(Text)? {
            // yaml.v2 is case-sensitive, and strict mode refuses a field given twice.
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!(
                    "target group {i}: field {key:?} given twice"
                )));
            }
            match key.as_str() {
                "targets" => group.targets = map.next_value_seed(Targets(i))?,
                "labels" => group.labels = map.next_value_seed(Labels(i))?,
                _ => {
                    return Err(de::Error::custom(format!(
                        "target group {i}: unknown field {key:?}"
                    )));
                }
            }
        }
        Ok(group)
    }
}

/// A scalar as yaml.v2 decodes it into a Go string: its text as written, or "" for null.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        Ok(String::new())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        // serde_norway hands a plain scalar's raw text to deserialize_str.
        d.deserialize_str(self)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
}

/// A group's `targets`: a list of strings, or null.
struct Targets(usize);

impl<'de> DeserializeSeed<'de> for Targets {
    type Value = Vec<String>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Targets {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "target group {}: targets to be a list of strings",
            self.0
        )
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(t) = seq.next_element_seed(Text)? {
            out.push(t);
        }
        Ok(out)
    }
}

/// A group's `labels`: a map of strings, or null.
struct Labels(usize);

impl<'de> DeserializeSeed<'de> for Labels {
    type Value = Vec<(String, String)>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Labels {
    type Value = Vec<(String, String)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "target group {}: labels to be a map of strings", self.0)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let i = self.0;
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        while let Some(name) = map.next_key_seed(Text)? {
            if name.is_empty() {
                return Err(de::Error::custom(format!(
                    "target group {i}: \"\" is not a valid label name"
                )));
            }
            // yaml.v2's strict mode refuses a key set twice in one map.
            if !seen.insert(name.clone()) {
                return Err(de::Error::custom(format!(
                    "target group {i}: duplicate label {name:?}"
                )));
            }
            let value = map.next_value_seed(Text)?;
            out.push((name, value));
        }
        Ok(out)
    }
}
