//! The `profiling_config` block: which `/debug/pprof/*` endpoints are scraped, with Alloy's
//! defaults per profile type.
//!
//! Alloy applies defaults per block (`profile.mutex { enabled = false }` keeps the mutex path), so
//! each standard block is its own type, distinguished by a marker that carries its defaults.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::Deserialize;

/// The defaults of one standard `profile.*` block.
pub trait ProfileDefaults {
    /// The profile name sent as `__name__` (before the godeltaprof renaming).
    const NAME: &'static str;
    const PATH: &'static str;
    const ENABLED: bool;
    const DELTA: bool;
}

macro_rules! profile_kind {
    ($ty:ident, $name:literal, $path:literal, $enabled:literal, $delta:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty;
        impl ProfileDefaults for $ty {
            const NAME: &'static str = $name;
            const PATH: &'static str = $path;
            const ENABLED: bool = $enabled;
            const DELTA: bool = $delta;
        }
    };
}

profile_kind!(Memory, "memory", "/debug/pprof/allocs", true, false);
profile_kind!(Block, "block", "/debug/pprof/block", true, false);
profile_kind!(
    Goroutine,
    "goroutine",
    "/debug/pprof/goroutine",
    true,
    false
);
profile_kind!(Mutex, "mutex", "/debug/pprof/mutex", true, false);
profile_kind!(
    ProcessCpu,
    "process_cpu",
    "/debug/pprof/profile",
    true,
    true
);
profile_kind!(Fgprof, "fgprof", "/debug/fgprof", false, true);
profile_kind!(
    GodeltaprofMemory,
    "godeltaprof_memory",
    "/debug/pprof/delta_heap",
    false,
    false
);
profile_kind!(
    GodeltaprofMutex,
    "godeltaprof_mutex",
    "/debug/pprof/delta_mutex",
    false,
    false
);
profile_kind!(
    GodeltaprofBlock,
    "godeltaprof_block",
    "/debug/pprof/delta_block",
    false,
    false
);

/// A standard `profile.<type> { enabled, path, delta }` block.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, bound = "")]
pub struct ProfileBlock<K: ProfileDefaults> {
    pub enabled: bool,
    pub path: String,
    pub delta: bool,
    #[serde(skip)]
    _kind: PhantomData<K>,
}

impl<K: ProfileDefaults> Default for ProfileBlock<K> {
    fn default() -> Self {
        ProfileBlock {
            enabled: K::ENABLED,
            path: K::PATH.to_string(),
            delta: K::DELTA,
            _kind: PhantomData,
        }
    }
}

/// `profile.custom "name" { enabled, path, delta }`: enabled and path are required.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CustomProfileBlock {
    #[serde(rename = "$label")]
    pub name: String,
    pub enabled: bool,
    pub path: String,
    #[serde(default)]
    pub delta: bool,
}

/// The `profiling_config` block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct ProfilingConfig {
    pub path_prefix: String,
    #[serde(rename = "profile.memory")]
    pub memory: ProfileBlock<Memory>,
    #[serde(rename = "profile.block")]
    pub block: ProfileBlock<Block>,
    #[serde(rename = "profile.goroutine")]
    pub goroutine: ProfileBlock<Goroutine>,
    #[serde(rename = "profile.mutex")]
    pub mutex: ProfileBlock<Mutex>,
    #[serde(rename = "profile.process_cpu")]
    pub process_cpu: ProfileBlock<ProcessCpu>,
    #[serde(rename = "profile.fgprof")]
    pub fgprof: ProfileBlock<Fgprof>,
    #[serde(rename = "profile.godeltaprof_memory")]
    pub godeltaprof_memory: ProfileBlock<GodeltaprofMemory>,
    #[serde(rename = "profile.godeltaprof_mutex")]
    pub godeltaprof_mutex: ProfileBlock<GodeltaprofMutex>,
    #[serde(rename = "profile.godeltaprof_block")]
    pub godeltaprof_block: ProfileBlock<GodeltaprofBlock>,
    #[serde(rename = "profile.custom")]
    pub custom: Vec<CustomProfileBlock>,
}

/// One configured profile type, resolved from the blocks above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileType {
    /// The name the config uses (`memory`, `godeltaprof_memory`, a custom label).
    pub name: String,
    pub path: String,
    pub enabled: bool,
    /// The endpoint takes `seconds=N` and returns a profile over that window (CPU, fgprof).
    pub delta: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfilingConfigError {
    #[error("duplicate profile.custom label {0:?}")]
    DuplicateCustom(String),
    #[error("profile.custom {0:?}: path must not be empty")]
    EmptyCustomPath(String),
}

impl ProfilingConfig {
    /// Every configured type, enabled or not, keyed by name. Custom blocks may replace a
    /// standard type of the same name, as in Alloy (`AllTargets` puts custom ones last).
    pub fn all_types(&self) -> Result<BTreeMap<String, ProfileType>, ProfilingConfigError> {
        fn std_type<K: ProfileDefaults>(b: &ProfileBlock<K>) -> ProfileType {
            ProfileType {
                name: K::NAME.to_string(),
                path: b.path.clone(),
                enabled: b.enabled,
                delta: b.delta,
            }
        }
        let mut out = BTreeMap::new();
        for t in [
            std_type(&self.memory),
            std_type(&self.block),
            std_type(&self.goroutine),
            std_type(&self.mutex),
            std_type(&self.process_cpu),
            std_type(&self.fgprof),
            std_type(&self.godeltaprof_memory),
            std_type(&self.godeltaprof_mutex),
            std_type(&self.godeltaprof_block),
        ] {
            out.insert(t.name.clone(), t);
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &self.custom {
            if !seen.insert(c.name.clone()) {
                return Err(ProfilingConfigError::DuplicateCustom(c.name.clone()));
            }
            if c.path.is_empty() {
                return Err(ProfilingConfigError::EmptyCustomPath(c.name.clone()));
            }
            out.insert(
                c.name.clone(),
                ProfileType {
                    name: c.name.clone(),
                    path: c.path.clone(),
                    enabled: c.enabled,
                    delta: c.delta,
                },
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode::from_body;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    fn decode(src: &str) -> ProfilingConfig {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
        from_body(&body).expect("decodes")
    }

    #[test]
    fn defaults_match_alloy() {
        let types = ProfilingConfig::default().all_types().expect("valid");
        let enabled: Vec<(&str, &str, bool)> = types
            .values()
            .filter(|t| t.enabled)
            .map(|t| (t.name.as_str(), t.path.as_str(), t.delta))
            .collect();
        assert_eq!(
            enabled,
            [
                ("block", "/debug/pprof/block", false),
                ("goroutine", "/debug/pprof/goroutine", false),
                ("memory", "/debug/pprof/allocs", false),
                ("mutex", "/debug/pprof/mutex", false),
                ("process_cpu", "/debug/pprof/profile", true),
            ]
        );
        assert_eq!(types["fgprof"].path, "/debug/fgprof");
        assert!(types["fgprof"].delta && !types["fgprof"].enabled);
        assert_eq!(types["godeltaprof_memory"].path, "/debug/pprof/delta_heap");
    }

    #[test]
    fn defaults_apply_per_block() {
        let cfg = decode(
            "path_prefix = \"/x\"\nprofile.mutex { enabled = false }\nprofile.fgprof { enabled = true }\nprofile.custom \"heap\" {\n  enabled = true\n  path = \"/debug/pprof/heap\"\n}\n",
        );
        let types = cfg.all_types().expect("valid");
        assert_eq!(cfg.path_prefix, "/x");
        assert!(!types["mutex"].enabled);
        assert_eq!(types["mutex"].path, "/debug/pprof/mutex");
        assert!(types["fgprof"].enabled && types["fgprof"].delta);
        assert_eq!(types["heap"].path, "/debug/pprof/heap");
        assert!(types["memory"].enabled);
    }

    #[test]
    fn custom_blocks_are_validated() {
        let cfg = decode(
            "profile.custom \"a\" {\n  enabled = true\n  path = \"/a\"\n}\nprofile.custom \"a\" {\n  enabled = true\n  path = \"/b\"\n}\n",
        );
        assert_eq!(
            cfg.all_types(),
            Err(ProfilingConfigError::DuplicateCustom("a".into()))
        );
    }
}
