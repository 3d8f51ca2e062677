//! Structural validation of a decoded [`Profile`] tree: what Go's `profile.CheckValid` and
//! Pyroscope's `ValidateProfile` require, so every profile we accept is one they accept.
//!
//! The zero-copy decoder (`view.rs`) applies the same rules while it reads; the fuzz target
//! checks that both accept exactly the same inputs.

use std::collections::HashSet;

use super::error::{PprofError, Result};
use super::proto::Profile;

/// Checks `profile`:
/// * `string_table[0]` is `""` and every string index is in range;
/// * mapping, function and location ids are non-zero and unique;
/// * every line names an existing function, every sample existing locations;
/// * every sample has one value per sample type.
///
/// A location's unknown `mapping_id` is accepted, as Go's decoder accepts it (it treats the
/// location as unmapped).
pub fn validate(p: &Profile) -> Result<()> {
    if p.string_table.first().map(String::as_str) != Some("") {
        return Err(PprofError::StringTableStart);
    }
    let n = p.string_table.len();
    let check = |field: &'static str, index: i64| -> Result<()> {
        if index < 0 || index as u64 >= n as u64 {
            return Err(PprofError::StringIndex {
                field,
                index,
                len: n,
            });
        }
        Ok(())
    };
    for t in &p.sample_type {
        check("sample_type.type", t.r#type)?;
        check("sample_type.unit", t.unit)?;
    }
    if let Some(t) = &p.period_type {
        check("period_type.type", t.r#type)?;
        check("period_type.unit", t.unit)?;
    }
    for &c in &p.comment {
        check("comment", c)?;
    }
    check("drop_frames", p.drop_frames)?;
    check("keep_frames", p.keep_frames)?;
    check("default_sample_type", p.default_sample_type)?;
    check("doc_url", p.doc_url)?;

    let mut mappings = HashSet::with_capacity(p.mapping.len());
    for m in &p.mapping {
        check("mapping.filename", m.filename)?;
        check("mapping.build_id", m.build_id)?;
        unique("mapping", m.id, &mut mappings)?;
    }
    let mut functions = HashSet::with_capacity(p.function.len());
    for f in &p.function {
        check("function.name", f.name)?;
        check("function.system_name", f.system_name)?;
        check("function.filename", f.filename)?;
        unique("function", f.id, &mut functions)?;
    }
    let mut locations = HashSet::with_capacity(p.location.len());
    for l in &p.location {
        unique("location", l.id, &mut locations)?;
        for line in &l.line {
            if !functions.contains(&line.function_id) {
                return Err(PprofError::UnknownFunction {
                    location: l.id,
                    id: line.function_id,
                });
            }
        }
    }
    let want = p.sample_type.len();
    if want == 0 && !p.sample.is_empty() {
        return Err(PprofError::NoSampleTypes);
    }
    for (i, s) in p.sample.iter().enumerate() {
        if s.value.len() != want {
            return Err(PprofError::ValueCount {
                sample: i,
                got: s.value.len(),
                want,
            });
        }
        for &id in &s.location_id {
            if !locations.contains(&id) {
                return Err(PprofError::UnknownLocation { sample: i, id });
            }
        }
        for l in &s.label {
            check("label.key", l.key)?;
            check("label.str", l.str)?;
            check("label.num_unit", l.num_unit)?;
        }
    }
    Ok(())
}

fn unique(kind: &'static str, id: u64, seen: &mut HashSet<u64>) -> Result<()> {
    if id == 0 {
        return Err(PprofError::ZeroId { kind });
    }
    if !seen.insert(id) {
        return Err(PprofError::DuplicateId { kind, id });
    }
    Ok(())
}
