//! Profiles whose frames are plain names (no addresses, files or lines): what Pyroscope's
//! `Tree.Pprof` builds from folded text (`pyroscope.receive_http`), and what scraper serves about
//! itself where a name is all there is (its tasks, its memory by owner: `/debug/pprof/`).
//!
//! One fake mapping, one location and one function per distinct name, one sample per stack.

use std::collections::HashMap;

use super::proto::{Function, Line, Location, Mapping, Profile, Sample, ValueType};

/// Builds a profile stack by stack.
pub struct NamedProfile {
    profile: Profile,
    strings: HashMap<String, i64>,
    locations: HashMap<String, u64>,
}

impl Default for NamedProfile {
    fn default() -> Self {
        Self::new()
    }
}

impl NamedProfile {
    pub fn new() -> NamedProfile {
        let mut strings = HashMap::new();
        strings.insert(String::new(), 0);
        NamedProfile {
            profile: Profile {
                string_table: vec![String::new()],
                mapping: vec![Mapping {
                    id: 1,
                    ..Default::default()
                }],
                ..Default::default()
            },
            strings,
            locations: HashMap::new(),
        }
    }

    /// The index of `s` in the string table, adding it when new.
    pub fn intern(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    /// Adds a sample type (`type`/`unit`), in the order values are given.
    pub fn sample_type(&mut self, ty: &str, unit: &str) -> &mut Self {
        let vt = ValueType {
            r#type: self.intern(ty),
            unit: self.intern(unit),
        };
        self.profile.sample_type.push(vt);
        self
    }

    /// The profile under construction, for the fields this builder does not set (period,
    /// time, duration, comments).
    pub fn profile_mut(&mut self) -> &mut Profile {
        &mut self.profile
    }

    fn location(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.locations.get(name) {
            return id;
        }
        let id = self.profile.location.len() as u64 + 1;
        let name_index = self.intern(name);
        self.profile.function.push(Function {
            id,
            name: name_index,
            system_name: name_index,
            ..Default::default()
        });
        self.profile.location.push(Location {
            id,
            mapping_id: 1,
            line: vec![Line {
                function_id: id,
                ..Default::default()
            }],
            ..Default::default()
        });
        self.locations.insert(name.to_string(), id);
        id
    }

    /// Adds one sample; `root_first` names the frames from the root down to the leaf.
    pub fn add<'a, I>(&mut self, root_first: I, values: Vec<i64>)
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: DoubleEndedIterator,
    {
        let location_id = root_first
            .into_iter()
            .rev()
            .map(|name| self.location(name))
            .collect();
        self.profile.sample.push(Sample {
            location_id,
            value: values,
            label: Vec::new(),
        });
    }

    pub fn finish(self) -> Profile {
        self.profile
    }

    /// Finishes with period type `ty`/`unit`, and a period of 1 unless one was set.
    pub fn finish_with_period(mut self, ty: &str, unit: &str) -> Profile {
        let period_type = ValueType {
            r#type: self.intern(ty),
            unit: self.intern(unit),
        };
        self.profile.period_type = Some(period_type);
        if self.profile.period == 0 {
            self.profile.period = 1;
        }
        self.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_shared_and_stored_leaf_first() {
        let mut b = NamedProfile::new();
        b.sample_type("goroutine", "count");
        b.add(["main", "work"], vec![3]);
        b.add(["main", "idle"], vec![1]);
        let p = b.finish();
        assert_eq!(p.location.len(), 3, "main is one location");
        let name = |id: &u64| p.string_table[p.function[*id as usize - 1].name as usize].as_str();
        let leaf_first = |i: usize| p.sample[i].location_id.iter().map(name).collect::<Vec<_>>();
        assert_eq!(leaf_first(0), ["work", "main"]);
        assert_eq!(leaf_first(1), ["idle", "main"]);
        assert_eq!(
            p.string_table[p.sample_type[0].r#type as usize],
            "goroutine"
        );
        crate::pprof::validate(&p).expect("valid");
    }
}
