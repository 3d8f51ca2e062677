//! The `discovery.process` block: Alloy's attribute names and defaults.

use serde::Deserialize;

use crate::syntax::types::Duration;
use crate::targets::Shared;

/// The block's arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    /// External targets joined to the processes by container id.
    pub join: Vec<Shared>,
    /// How often `/proc` is walked again.
    pub refresh_interval: Duration,
    pub discover_config: DiscoverConfig,
}

impl Default for Arguments {
    fn default() -> Self {
        Arguments {
            join: Vec::new(),
            refresh_interval: default_refresh_interval(),
            discover_config: DiscoverConfig::default(),
        }
    }
}

/// The `discover_config` block: which labels to read for every process.
///
/// Attributes left out of the block keep their defaults, as in Alloy (which decodes the block
/// over the component's defaults rather than over zero values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct DiscoverConfig {
    pub exe: bool,
    pub cwd: bool,
    pub commandline: bool,
    pub uid: bool,
    pub username: bool,
    pub cgroup_path: bool,
    pub container_id: bool,
}

impl Default for DiscoverConfig {
    /// The documented defaults. Alloy's Go defaults leave `uid` and `username` off while its
    /// reference page says on; we follow the page (see the module docs).
    fn default() -> Self {
        DiscoverConfig {
            exe: true,
            cwd: true,
            commandline: true,
            uid: true,
            username: true,
            cgroup_path: false,
            container_id: true,
        }
    }
}

impl DiscoverConfig {
    /// True when the process status file has to be read.
    pub(crate) fn wants_uid(&self) -> bool {
        self.uid || self.username
    }

    /// True when `/proc/<pid>/cgroup` has to be read.
    pub(crate) fn wants_cgroup(&self) -> bool {
        self.container_id || self.cgroup_path
    }
}

fn default_refresh_interval() -> Duration {
    Duration::from_secs(60)
}

// The name is what the decoder shows for unknown attributes.
#[derive(Deserialize)]
#[serde(rename = "discovery.process")]
struct RawArguments {
    #[serde(default)]
    join: Vec<Shared>,
    #[serde(default = "default_refresh_interval")]
    refresh_interval: Duration,
    #[serde(default)]
    discover_config: DiscoverConfig,
}

impl TryFrom<RawArguments> for Arguments {
    type Error = String;

    fn try_from(r: RawArguments) -> Result<Self, String> {
        // Alloy hands the interval to time.NewTicker, which panics on zero; refusing the
        // config is the useful version of that.
        if r.refresh_interval.is_zero() {
            return Err("refresh_interval must be greater than 0".into());
        }
        Ok(Arguments {
            join: r.join,
            refresh_interval: r.refresh_interval,
            discover_config: r.discover_config,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelSet;
    use crate::syntax::decode;

    /// Errors without their `line:col: ` prefix.
    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src).map_err(|es: Vec<String>| {
            es.into_iter()
                .map(|e| e.splitn(3, ": ").last().map(str::to_string).unwrap_or(e))
                .collect()
        })
    }

    #[test]
    fn empty_block_has_the_documented_defaults() {
        let a = decode_args("").expect("valid");
        assert_eq!(a, Arguments::default());
        assert_eq!(a.refresh_interval, Duration::from_secs(60));
        assert!(a.join.is_empty());
        let d = a.discover_config;
        assert!(d.exe && d.cwd && d.commandline && d.uid && d.username && d.container_id);
        assert!(!d.cgroup_path);
    }

    #[test]
    fn discover_config_attributes_left_out_keep_their_defaults() {
        let a = decode_args(
            "refresh_interval = \"1s\"\ndiscover_config {\n  cgroup_path = true\n  cwd = false\n}\n",
        )
        .expect("valid");
        assert_eq!(a.refresh_interval, Duration::from_secs(1));
        assert_eq!(
            a.discover_config,
            DiscoverConfig {
                cgroup_path: true,
                cwd: false,
                ..DiscoverConfig::default()
            }
        );
    }

    #[test]
    fn join_decodes_targets() {
        let a = decode_args(
            r#"join = [{"__container_id__" = "abc", "pod" = "p"}, {"__address__" = "x:1"}]"#,
        )
        .expect("valid");
        let expected: Vec<Shared> = vec![
            [("__container_id__", "abc"), ("pod", "p")]
                .into_iter()
                .collect::<LabelSet>()
                .into(),
            [("__address__", "x:1")]
                .into_iter()
                .collect::<LabelSet>()
                .into(),
        ];
        assert_eq!(a.join, expected);
    }

    #[test]
    fn invalid_arguments_are_rejected() {
        let errs = decode_args("refresh_interval = \"0s\"").expect_err("zero interval");
        assert_eq!(errs, ["refresh_interval must be greater than 0"]);
        let errs = decode_args("discover_config {\n  pid = true\n}").expect_err("unknown");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("pid"), "{errs:?}");
        assert!(decode_args("cgroup_id_regex = \"x\"").is_err());
        assert!(decode_args("refresh_interval = \"-1s\"").is_err());
    }
}
