//! What [`ingest`](super::ingest::ingest) builds from a request, measured before any of it is
//! built, so that a receiver can refuse or reserve it: a request of a few kilobytes can
//! describe gigabytes of pprof.
//!
//! Two things expand:
//! * each sample gets its own copy of its stack's location ids and of its labels (the OTLP
//!   dictionary shares them): [`output_bytes`], per sample;
//! * each part of a profile (its samples split by `service.name`) is converted on its own, so
//!   every dictionary entry a part refers to (functions, their names and file names, mappings,
//!   locations, label strings) is copied once per part, and every part carries its own series
//!   labels (a copy of the resource's and the scope's). Per part this counts the smaller of a
//!   copy of the whole dictionary and the entries its samples refer to (each distinct
//!   location, attribute and link once), and its labels.
//!
//! An upper bound, in linear time: a function or string shared by several entries counts once
//! per entry, and the indexes a conversion keeps while it runs (freed when the part is done)
//! count as kept; past a budget of frames walked, a location shared by a part's stacks counts
//! once per stack. Out-of-range indices count as nothing (the conversion refuses them).
//! Saturates.

use std::collections::HashSet;
use std::mem::size_of;

use super::convert::SERVICE_NAME_ATTRIBUTE;
use super::ingest::{EXECUTABLE_NAME_ATTRIBUTE, Ingested, UNKNOWN_SERVICE, group_by_service};
use super::labels::value_text_bound;
use super::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use super::proto::common::v1::KeyValue;
use super::proto::profiles::v1development as otlp;
use super::to_pprof::output_bytes;
use crate::pprof::proto as pprof;

/// A hash-map entry of `bytes` (key and value) in the conversion's indexes: the entry and its
/// control byte, at the lowest load a map has (just after it doubled: 7/16).
const fn map_entry(bytes: usize) -> u64 {
    (bytes as u64 + 1) * 16 / 7 + 1
}

/// What a pushed element costs at most in a vector that doubles as it grows.
const fn pushed(bytes: usize) -> u64 {
    2 * bytes as u64
}

/// A string copied into a part's string table, besides its bytes: its header in the table and
/// its entries in the two indexes (`PprofStrings`, `Rebuild::strings`).
pub(super) const STRING: u64 =
    pushed(size_of::<String>()) + map_entry(size_of::<(u64, i64)>()) + map_entry(16);
/// A function, mapping or location copied into a part, besides its strings and lines; a
/// mapping's build id may take an entry in `Rebuild::attribute_strings` too.
const FUNCTION: u64 = pushed(size_of::<pprof::Function>()) + map_entry(16);
const MAPPING: u64 =
    pushed(size_of::<pprof::Mapping>()) + map_entry(16) + map_entry(size_of::<(i32, i64)>());
const LOCATION: u64 = pushed(size_of::<pprof::Location>()) + map_entry(16);
/// A location's lines are allocated to length.
const LINE: u64 = size_of::<pprof::Line>() as u64;
/// An attribute resolved once per part (`Rebuild::labels`), besides its strings.
const ATTRIBUTE: u64 = map_entry(size_of::<(i32, pprof::Label)>() + 8);
/// A link resolved once per part: its two labels kept in `Rebuild::links` and its two hex ids
/// (see `link_labels`) with their keys.
const LINK: u64 = map_entry(size_of::<(i32, Vec<pprof::Label>)>())
    + 2 * size_of::<pprof::Label>() as u64
    + (16 + STRING)
    + (32 + STRING)
    + ("span_id".len() as u64 + STRING)
    + ("trace_id".len() as u64 + STRING);
/// A series label: its two strings' headers and its place in the list.
const SERIES_LABEL: u64 = pushed(2 * size_of::<String>());
/// One part, besides its entries and labels: the profile and its sample type, the three
/// fixed series labels and `__name__` (see `ingest`), the strings `cpu` and `nanoseconds`
/// that the CPU rewrite may add, the part's place in the grouping and in the output, and the
/// spare room of a service name formatted from an int (twice: key and label).
const PART: u64 = size_of::<pprof::Profile>() as u64
    + size_of::<pprof::ValueType>() as u64
    + 5 * SERIES_LABEL
    + ("__delta__false__otel__true__name__process_cpuservice_name".len() as u64)
    + 2 * ("nanoseconds".len() as u64 + STRING)
    + pushed(size_of::<Ingested>())
    + pushed(size_of::<(String, Vec<usize>)>())
    + map_entry(size_of::<(String, usize)>())
    + 2 * 32;

/// Bytes what [`ingest`](super::ingest::ingest) builds from `req` takes at most: every
/// sample's copies ([`output_bytes`]) and every part's (see the module's documentation). A
/// caller reserves or refuses this before converting.
pub fn request_output_bytes(req: &ExportProfilesServiceRequest) -> u64 {
    let Some(dict) = req.dictionary.as_ref() else {
        return 0;
    };
    let samples = req
        .resource_profiles
        .iter()
        .flat_map(|rp| &rp.scope_profiles)
        .flat_map(|sp| &sp.profiles)
        .flat_map(|p| &p.samples);
    let mut total = output_bytes(dict, samples);
    let sizes = EntrySizes::new(dict);
    // Frames walked to tell a part's locations apart: linear in the request (see
    // `referenced`), enough to walk every stack a few times over.
    let mut walk = sizes.frames.saturating_mul(4).saturating_add(1 << 20);
    for rp in &req.resource_profiles {
        let resource = rp.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let resource_labels = series_labels_bytes(resource, &dict.string_table);
        let resource_service = resource_service_bytes(resource, &dict.string_table);
        for sp in &rp.scope_profiles {
            let scope = sp.scope.as_ref().map_or(&[][..], |s| &s.attributes[..]);
            let labels =
                resource_labels.saturating_add(series_labels_bytes(scope, &dict.string_table));
            for prof in &sp.profiles {
                let types = sizes.profile_types(prof);
                for (service, samples) in group_by_service(prof, dict) {
                    let entries = sizes.referenced(&samples, &mut walk).saturating_add(types);
                    // Held twice: the part's key while it is converted, and its label,
                    // which is the resource's name only for the samples that name none.
                    let service = if service.is_empty() {
                        resource_service
                    } else {
                        service.len() as u64
                    };
                    total = total
                        .saturating_add(PART)
                        .saturating_add(entries.min(sizes.dictionary))
                        // `__name__` is one of the type strings, copied again.
                        .saturating_add(types)
                        .saturating_add(labels)
                        .saturating_add(service.saturating_mul(2));
                }
            }
        }
    }
    total
}

/// What copying each dictionary entry into a part takes, with what it refers to.
struct EntrySizes<'d> {
    dict: &'d otlp::ProfilesDictionary,
    /// Per location: itself, its mapping and its lines' functions.
    locations: Vec<u64>,
    /// Per stack: its locations.
    stacks: Vec<u64>,
    /// Frames in the stack table: what walking every stack once takes.
    frames: u64,
    /// Per attribute: its key, its value's text and its place in the index.
    attributes: Vec<u64>,
    /// The whole dictionary, as one part could copy it at most.
    dictionary: u64,
}

impl<'d> EntrySizes<'d> {
    fn new(dict: &'d otlp::ProfilesDictionary) -> Self {
        let string = |i: i32| -> u64 {
            usize::try_from(i)
                .ok()
                .and_then(|i| dict.string_table.get(i))
                .map_or(0, |s| s.len() as u64 + STRING)
        };
        let functions: Vec<u64> = dict
            .function_table
            .iter()
            .map(|f| {
                FUNCTION
                    .saturating_add(string(f.name_strindex))
                    .saturating_add(string(f.system_name_strindex))
                    .saturating_add(string(f.filename_strindex))
            })
            .collect();
        let attributes: Vec<u64> = dict
            .attribute_table
            .iter()
            .map(|kv| {
                let text = value_text_bound(kv.value.as_ref(), &dict.string_table);
                ATTRIBUTE
                    .saturating_add(string(kv.key_strindex))
                    .saturating_add(string(kv.unit_strindex))
                    .saturating_add(text.saturating_add(STRING))
            })
            .collect();
        let attribute = |i: i32| {
            usize::try_from(i)
                .ok()
                .and_then(|i| attributes.get(i))
                .copied()
                .unwrap_or(0)
        };
        let mappings: Vec<u64> = dict
            .mapping_table
            .iter()
            .map(|m| {
                // The build id is one of its attributes' text.
                m.attribute_indices.iter().fold(
                    MAPPING.saturating_add(string(m.filename_strindex)),
                    |acc, &a| acc.saturating_add(attribute(a)),
                )
            })
            .collect();
        let locations: Vec<u64> = dict
            .location_table
            .iter()
            .map(|l| {
                // Mapping 0 is "none": nothing is copied for it.
                let mapping = usize::try_from(l.mapping_index)
                    .ok()
                    .filter(|&m| m != 0)
                    .and_then(|m| mappings.get(m))
                    .copied()
                    .unwrap_or(0);
                l.lines
                    .iter()
                    .fold(LOCATION.saturating_add(mapping), |acc, ln| {
                        let function = usize::try_from(ln.function_index)
                            .ok()
                            .and_then(|f| functions.get(f))
                            .copied()
                            .unwrap_or(0);
                        acc.saturating_add(LINE).saturating_add(function)
                    })
            })
            .collect();
        let stacks = dict
            .stack_table
            .iter()
            .map(|st| {
                st.location_indices.iter().fold(0u64, |acc, &l| {
                    let location = usize::try_from(l)
                        .ok()
                        .and_then(|l| locations.get(l))
                        .copied()
                        .unwrap_or(0);
                    acc.saturating_add(location)
                })
            })
            .collect();
        let strings = dict
            .string_table
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(s.len() as u64 + STRING));
        let links = (dict.link_table.len() as u64).saturating_mul(LINK);
        // Functions, mappings, locations and attributes without the strings they refer to
        // (counted once in `strings`) but with the texts an attribute makes or holds itself.
        let dictionary = strings
            .saturating_add((dict.function_table.len() as u64).saturating_mul(FUNCTION))
            .saturating_add((dict.mapping_table.len() as u64).saturating_mul(MAPPING))
            .saturating_add(dict.location_table.iter().fold(0u64, |acc, l| {
                acc.saturating_add(LOCATION)
                    .saturating_add((l.lines.len() as u64).saturating_mul(LINE))
            }))
            .saturating_add(dict.attribute_table.iter().fold(0u64, |acc, kv| {
                let text = value_text_bound(kv.value.as_ref(), &dict.string_table);
                acc.saturating_add(ATTRIBUTE)
                    .saturating_add(text.saturating_add(STRING))
            }))
            .saturating_add(links);
        let frames = dict.stack_table.iter().fold(0u64, |acc, st| {
            acc.saturating_add(st.location_indices.len() as u64)
        });
        EntrySizes {
            dict,
            locations,
            stacks,
            frames,
            attributes,
            dictionary,
        }
    }

    /// The entries `samples` refer to: each distinct location, attribute and link once.
    ///
    /// Locations are told apart by walking each distinct stack, which `walk` (frames left to
    /// walk in the whole request) keeps linear: once it is spent, a stack counts as the sum of
    /// its locations (shared ones once per stack), which is cheap and bounds it too.
    fn referenced(&self, samples: &[&otlp::Sample], walk: &mut u64) -> u64 {
        let mut stacks: HashSet<i32> = HashSet::new();
        let mut locations: HashSet<i32> = HashSet::new();
        let mut attributes: HashSet<i32> = HashSet::new();
        let mut links: HashSet<i32> = HashSet::new();
        let at = |v: &[u64], i: i32| {
            usize::try_from(i)
                .ok()
                .and_then(|i| v.get(i))
                .copied()
                .unwrap_or(0)
        };
        let (mut by_stack, mut by_location, mut walked) = (0u64, 0u64, true);
        let mut total = 0u64;
        for s in samples {
            if stacks.insert(s.stack_index) {
                by_stack = by_stack.saturating_add(at(&self.stacks, s.stack_index));
                let frames = usize::try_from(s.stack_index)
                    .ok()
                    .and_then(|i| self.dict.stack_table.get(i))
                    .map_or(&[][..], |st| &st.location_indices[..]);
                if walked && (frames.len() as u64) <= *walk {
                    *walk -= frames.len() as u64;
                    for &l in frames {
                        if locations.insert(l) {
                            by_location = by_location.saturating_add(at(&self.locations, l));
                        }
                    }
                } else {
                    walked = false;
                }
            }
            for &a in &s.attribute_indices {
                if attributes.insert(a) {
                    total = total.saturating_add(at(&self.attributes, a));
                }
            }
            if s.link_index != 0 && links.insert(s.link_index) {
                total = total.saturating_add(LINK);
            }
        }
        total.saturating_add(if walked { by_location } else { by_stack })
    }

    /// The strings of a profile's sample and period types, copied into each of its parts.
    fn profile_types(&self, prof: &otlp::Profile) -> u64 {
        let string = |i: i32| -> u64 {
            usize::try_from(i)
                .ok()
                .and_then(|i| self.dict.string_table.get(i))
                .map_or(0, |s| s.len() as u64 + STRING)
        };
        [prof.sample_type.as_ref(), prof.period_type.as_ref()]
            .into_iter()
            .flatten()
            .fold(0u64, |acc, vt| {
                acc.saturating_add(string(vt.type_strindex))
                    .saturating_add(string(vt.unit_strindex))
            })
    }
}

/// The series labels an attribute list can give, each part holding its own copy: every
/// attribute's key and text (those left out or skipped count too).
fn series_labels_bytes(attrs: &[KeyValue], strings: &[String]) -> u64 {
    attrs.iter().fold(0u64, |acc, kv| {
        acc.saturating_add(SERIES_LABEL)
            .saturating_add(kv.key.len() as u64)
            .saturating_add(value_text_bound(kv.value.as_ref(), strings))
    })
}

/// The longest `service_name` the resource can give a part whose samples name no service:
/// its `service.name`, or `unknown_service` and `:` and every executable name (both counted,
/// which bounds either).
fn resource_service_bytes(attrs: &[KeyValue], strings: &[String]) -> u64 {
    attrs
        .iter()
        .filter(|kv| kv.key == SERVICE_NAME_ATTRIBUTE || kv.key == EXECUTABLE_NAME_ATTRIBUTE)
        .fold(UNKNOWN_SERVICE.len() as u64, |acc, kv| {
            acc.saturating_add(value_text_bound(kv.value.as_ref(), strings))
                .saturating_add(1)
        })
}

#[cfg(test)]
#[path = "estimate_tests.rs"]
mod tests;
