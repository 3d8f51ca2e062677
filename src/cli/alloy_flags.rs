//! Alloy's `alloy run` flags that `scraper run` has no use for, accepted so that Alloy's own
//! command lines (its Helm chart's `--stability.level=...`, `--disable-reporting`,
//! `--server.http.ui-path-prefix=/`) start `scraper` unchanged. Each is either already true
//! here (scraper never reports usage), or has no effect here and says so once at startup; only
//! `--config.format` with another format than Alloy's is refused, since the file would be
//! misread. docs/ALLOY-COMPAT.md lists them with what each does here.
//!
//! Flags we implement ourselves (`--server.http.listen-addr`, `--storage.path`, the
//! `--cluster.*` of docs/CLUSTERING.md) are declared with `RunArgs`. Booleans take Go's flag
//! forms, `--flag` and `--flag=VALUE` with any value Go's `strconv.ParseBool` takes (`1`, `t`,
//! `TRUE`, `False`, ...; the `=` is required, as in Go, so that the config path after a
//! boolean flag is not read as its value).

use clap::Args;

/// Go's `flag` package reads boolean flags with `strconv.ParseBool`; so does every boolean
/// flag of `scraper run` (`--cluster.enabled` too).
pub(crate) fn go_bool(s: &str) -> Result<bool, String> {
    crate::gocompat::strconv::parse_bool(s)
}

const HEADING: &str = "Accepted for Alloy compatibility (docs/ALLOY-COMPAT.md)";

#[derive(Debug, Args, Clone, Default)]
pub(crate) struct AlloyFlags {
    /// Alloy's minimum stability level; scraper does not gate features by stability.
    #[arg(long = "stability.level", value_name = "LEVEL", help_heading = HEADING,
          value_parser = ["generally-available", "public-preview", "experimental"])]
    stability_level: Option<String>,
    /// Alloy's usage reporting switch; scraper never reports usage.
    #[arg(long = "disable-reporting", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    disable_reporting: Option<bool>,
    /// Alloy's switch for /debug/pprof; scraper always serves its own profiles there.
    #[arg(long = "server.http.enable-pprof", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    enable_pprof: Option<bool>,
    /// Alloy's in-memory listener for its own components; not used here.
    #[arg(long = "server.http.memory-addr", value_name = "ADDR", help_heading = HEADING)]
    memory_addr: Option<String>,
    /// Alloy's UI path prefix; scraper's UI is at /.
    #[arg(long = "server.http.ui-path-prefix", value_name = "PATH", help_heading = HEADING)]
    ui_path_prefix: Option<String>,
    /// Alloy's /-/support switch; scraper serves no support bundle.
    #[arg(long = "server.http.disable-support-bundle", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    disable_support_bundle: Option<bool>,
    /// Alloy's go-discover peer discovery; use --cluster.kubernetes-service or
    /// --cluster.join-addresses.
    #[arg(long = "cluster.discover-peers", value_name = "TUPLES", help_heading = HEADING)]
    discover_peers: Option<String>,
    #[arg(long = "cluster.advertise-interfaces", value_name = "LIST", help_heading = HEADING, hide = true)]
    advertise_interfaces: Option<String>,
    #[arg(long = "cluster.rejoin-interval", value_name = "DURATION", help_heading = HEADING, hide = true)]
    rejoin_interval: Option<String>,
    #[arg(long = "cluster.max-join-peers", value_name = "N", help_heading = HEADING, hide = true)]
    max_join_peers: Option<String>,
    /// Alloy's memberlist cluster name; scraper's peers are whoever its peer source lists.
    #[arg(long = "cluster.name", value_name = "NAME", help_heading = HEADING)]
    cluster_name: Option<String>,
    #[arg(long = "cluster.enable-tls", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    cluster_tls: Option<bool>,
    #[arg(long = "cluster.tls-ca-path", value_name = "PATH", help_heading = HEADING, hide = true)]
    cluster_tls_ca: Option<String>,
    #[arg(long = "cluster.tls-cert-path", value_name = "PATH", help_heading = HEADING, hide = true)]
    cluster_tls_cert: Option<String>,
    #[arg(long = "cluster.tls-key-path", value_name = "PATH", help_heading = HEADING, hide = true)]
    cluster_tls_key: Option<String>,
    #[arg(long = "cluster.tls-server-name", value_name = "NAME", help_heading = HEADING, hide = true)]
    cluster_tls_server_name: Option<String>,
    #[arg(long = "cluster.use-discovery-v1", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    use_discovery_v1: Option<bool>,
    #[arg(long = "cluster.wait-for-size", value_name = "N", help_heading = HEADING, hide = true)]
    wait_for_size: Option<String>,
    #[arg(long = "cluster.wait-timeout", value_name = "DURATION", help_heading = HEADING, hide = true)]
    wait_timeout: Option<String>,
    /// Alloy's config conversion: only "alloy" is read here.
    #[arg(long = "config.format", value_name = "FORMAT", help_heading = HEADING)]
    config_format: Option<String>,
    #[arg(long = "config.bypass-conversion-errors", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    bypass_conversion_errors: Option<bool>,
    #[arg(long = "config.extra-args", value_name = "ARGS", help_heading = HEADING, hide = true)]
    config_extra_args: Option<String>,
    #[arg(long = "feature.community-components.enabled", help_heading = HEADING, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    community_components: Option<bool>,
    #[arg(long = "feature.prometheus.metric-validation-scheme", value_name = "SCHEME",
          help_heading = HEADING, hide = true)]
    metric_validation_scheme: Option<String>,
    #[arg(long = "windows.priority", value_name = "PRIORITY", help_heading = HEADING, hide = true)]
    windows_priority: Option<String>,
}

/// A flag given that has no effect here: its name and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Ignored {
    pub flag: &'static str,
    pub reason: &'static str,
}

impl AlloyFlags {
    /// The flags given that change nothing here, each once; an error for a config format
    /// scraper cannot read.
    pub(crate) fn ignored(&self) -> Result<Vec<Ignored>, String> {
        if let Some(f) = self.config_format.as_deref()
            && f != "alloy"
        {
            return Err(format!(
                "--config.format={f}: scraper reads only Alloy configuration files; convert the file once with `alloy convert --source-format={f}`"
            ));
        }
        let given = |o: bool, flag: &'static str, reason: &'static str| {
            o.then_some(Ignored { flag, reason })
        };
        let on = |b: Option<bool>| b == Some(true);
        let list = [
            given(
                self.stability_level.is_some(),
                "--stability.level",
                "scraper does not gate features by stability level: everything it implements is available",
            ),
            given(
                self.disable_reporting == Some(false),
                "--disable-reporting=false",
                "scraper never sends usage reports",
            ),
            given(
                self.enable_pprof == Some(false),
                "--server.http.enable-pprof=false",
                "scraper always serves its own profiles under /debug/pprof/",
            ),
            given(
                self.memory_addr.is_some(),
                "--server.http.memory-addr",
                "scraper has no in-memory listener; components talk through exports",
            ),
            given(
                self.ui_path_prefix.as_deref().is_some_and(|p| p != "/"),
                "--server.http.ui-path-prefix",
                "scraper serves its UI at /",
            ),
            given(
                self.discover_peers.is_some(),
                "--cluster.discover-peers",
                "go-discover is not supported; peers come from --cluster.kubernetes-service or --cluster.join-addresses",
            ),
            given(
                self.advertise_interfaces.is_some(),
                "--cluster.advertise-interfaces",
                "the advertised address is --cluster.advertise-address, else $POD_IP or the listen address",
            ),
            given(
                self.rejoin_interval.is_some() || self.max_join_peers.is_some(),
                "--cluster.rejoin-interval/--cluster.max-join-peers",
                "every candidate peer is checked each second; there is no gossip to rejoin",
            ),
            given(
                self.cluster_name.is_some(),
                "--cluster.name",
                "peers are whoever the peer source lists; there is no memberlist cluster name",
            ),
            given(
                on(self.cluster_tls)
                    || self.cluster_tls_ca.is_some()
                    || self.cluster_tls_cert.is_some()
                    || self.cluster_tls_key.is_some()
                    || self.cluster_tls_server_name.is_some(),
                "--cluster.enable-tls/--cluster.tls-*",
                "peers check each other's /-/ready over plain HTTP",
            ),
            given(
                on(self.use_discovery_v1),
                "--cluster.use-discovery-v1",
                "there is one peer discovery: --cluster.kubernetes-service or --cluster.join-addresses",
            ),
            given(
                self.wait_for_size.as_deref().is_some_and(|n| n != "0")
                    || self.wait_timeout.is_some(),
                "--cluster.wait-for-size/--cluster.wait-timeout",
                "components start with the peers found so far and re-plan as peers come",
            ),
            given(
                self.bypass_conversion_errors.is_some() || self.config_extra_args.is_some(),
                "--config.bypass-conversion-errors/--config.extra-args",
                "scraper converts no config formats",
            ),
            given(
                on(self.community_components),
                "--feature.community-components.enabled",
                "scraper has no community components",
            ),
            given(
                self.metric_validation_scheme.is_some(),
                "--feature.prometheus.metric-validation-scheme",
                "scraper writes no Prometheus metrics but its own",
            ),
            given(
                self.windows_priority.is_some(),
                "--windows.priority",
                "scraper runs on Linux only",
            ),
        ];
        Ok(list.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        flags: AlloyFlags,
        path: String,
    }

    fn ignored(args: &[&str]) -> Result<Vec<&'static str>, String> {
        let cmd = Cmd::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        assert_eq!(
            cmd.path, "config.alloy",
            "the path is never taken as a flag value"
        );
        Ok(cmd.flags.ignored()?.into_iter().map(|i| i.flag).collect())
    }

    /// Alloy's Helm chart's arguments and the other run flags: accepted, and each that changes
    /// nothing here is named once.
    #[test]
    fn alloy_command_lines_are_accepted() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["config.alloy"], &[]),
            (&["--disable-reporting", "config.alloy"], &[]),
            (&["config.alloy", "--disable-reporting"], &[]),
            (
                &["--disable-reporting=false", "config.alloy"],
                &["--disable-reporting=false"],
            ),
            (&["--server.http.ui-path-prefix=/", "config.alloy"], &[]),
            (
                &["--server.http.ui-path-prefix=/alloy", "config.alloy"],
                &["--server.http.ui-path-prefix"],
            ),
            (
                &["--stability.level=generally-available", "config.alloy"],
                &["--stability.level"],
            ),
            (
                &["--stability.level", "experimental", "config.alloy"],
                &["--stability.level"],
            ),
            (
                &["--server.http.disable-support-bundle", "config.alloy"],
                &[],
            ),
            (&["--server.http.enable-pprof=true", "config.alloy"], &[]),
            (
                &["--server.http.enable-pprof=false", "config.alloy"],
                &["--server.http.enable-pprof=false"],
            ),
            (&["--config.format=alloy", "config.alloy"], &[]),
            (
                &[
                    "--cluster.name=prod",
                    "--cluster.enable-tls",
                    "--cluster.tls-ca-path=/ca",
                    "config.alloy",
                ],
                &["--cluster.name", "--cluster.enable-tls/--cluster.tls-*"],
            ),
            (&["--cluster.wait-for-size=0", "config.alloy"], &[]),
            (
                &["--cluster.wait-for-size=3", "config.alloy"],
                &["--cluster.wait-for-size/--cluster.wait-timeout"],
            ),
            (
                &[
                    "--feature.community-components.enabled=false",
                    "config.alloy",
                ],
                &[],
            ),
            // Go's strconv.ParseBool forms.
            (&["--disable-reporting=1", "config.alloy"], &[]),
            (&["--disable-reporting=T", "config.alloy"], &[]),
            (
                &["--disable-reporting=F", "config.alloy"],
                &["--disable-reporting=false"],
            ),
            (
                &["--disable-reporting=0", "config.alloy"],
                &["--disable-reporting=false"],
            ),
            (
                &["--server.http.enable-pprof=FALSE", "config.alloy"],
                &["--server.http.enable-pprof=false"],
            ),
            (
                &["--server.http.enable-pprof=False", "config.alloy"],
                &["--server.http.enable-pprof=false"],
            ),
            (&["--server.http.enable-pprof=True", "config.alloy"], &[]),
            (
                &["--cluster.enable-tls=TRUE", "config.alloy"],
                &["--cluster.enable-tls/--cluster.tls-*"],
            ),
            (
                &["--feature.community-components.enabled=t", "config.alloy"],
                &["--feature.community-components.enabled"],
            ),
            (
                &["--cluster.use-discovery-v1", "config.alloy"],
                &["--cluster.use-discovery-v1"],
            ),
            (&["--cluster.use-discovery-v1=f", "config.alloy"], &[]),
        ];
        for (args, want) in cases {
            assert_eq!(ignored(args).as_deref(), Ok(*want), "{args:?}");
        }
    }

    #[test]
    fn bad_values_and_other_formats_are_refused() {
        let e = ignored(&["--stability.level=beta", "config.alloy"]).expect_err("bad level");
        assert!(e.contains("generally-available"), "{e}");
        let e = ignored(&["--config.format=prometheus", "config.alloy"]).expect_err("format");
        assert!(
            e.contains("alloy convert --source-format=prometheus"),
            "{e}"
        );
        for bad in ["maybe", "yes", "tRUE", ""] {
            let e =
                ignored(&[&format!("--disable-reporting={bad}"), "config.alloy"]).expect_err(bad);
            assert!(e.contains("invalid syntax"), "{bad}: {e}");
        }
    }
}
