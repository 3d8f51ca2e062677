//! `scraper discover --config FILE --component discovery.kubernetes.NAME [--relabel
//! discovery.relabel.X]`: lists what a `discovery.kubernetes` block finds right now and prints
//! the targets as JSON, for debugging RBAC, namespaces and selectors against a real cluster.
//!
//! * The block is evaluated on its own (stdlib only: `env()`, `sys.env`, `constants`...), with
//!   the same decoding and validation as `scraper run`.
//! * Every watch the block needs does its initial list; if one does not complete within
//!   `--timeout`, the command fails with the API server's last error (a 403 names the missing
//!   RBAC verb and resource).
//! * `--relabel` applies a `discovery.relabel` block's rules of the same file (its `targets`
//!   attribute is ignored), so the output is what the scrape component would receive.
//! * Targets go to standard output (a JSON array of objects, keys sorted); a summary goes to
//!   standard error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;

use crate::components::discovery::kubernetes::{self, Arguments};
use crate::components::discovery::relabel as relabel_component;
use crate::syntax::decode;
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::{Scope, eval_body};

const COMPONENT: &str = "discovery.kubernetes";
const RELABEL: &str = "discovery.relabel";

#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// The config file.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The discovery.kubernetes block, e.g. discovery.kubernetes.pods.
    #[arg(long, value_name = "ID")]
    component: String,
    /// Also apply this discovery.relabel block's rules, e.g. discovery.relabel.otel.
    #[arg(long, value_name = "ID")]
    relabel: Option<String>,
    /// How long to wait for the initial lists, in seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
}

fn label_of<'a>(id: &'a str, component: &str, flag: &str) -> anyhow::Result<&'a str> {
    match id.strip_prefix(component).and_then(|s| s.strip_prefix('.')) {
        Some(label) if !label.is_empty() => Ok(label),
        _ => bail!("{flag} must name a {component} block, e.g. {component}.NAME (got {id:?})"),
    }
}

pub(super) fn discover(args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    let label = label_of(&args.component, COMPONENT, "--component")?;
    let super::LoadedConfig {
        name,
        src: _,
        source,
        file,
    } = super::load_config(&args.config)?;
    let block = super::find_component(&file.body.stmts, COMPONENT, label)
        .ok_or_else(|| anyhow::anyhow!("{name} has no block {COMPONENT}.{label}"))?;
    let fail = |diags: Vec<Diagnostic>| {
        eprint!("{}", source.render_all(&diags));
        anyhow::anyhow!("{COMPONENT}.{label} is not valid")
    };
    let evaluated = eval_body(&block.body, &Scope::stdlib()).map_err(fail)?;
    let arguments: Arguments =
        decode::from_body_at(&evaluated, block.header_span()).map_err(fail)?;

    let relabeler = match &args.relabel {
        None => None,
        Some(id) => {
            let rl = label_of(id, RELABEL, "--relabel")?;
            let rblock = super::find_component(&file.body.stmts, RELABEL, rl)
                .ok_or_else(|| anyhow::anyhow!("{name} has no block {RELABEL}.{rl}"))?;
            let rules = super::relabel::decode_rules(&source, rblock)?;
            Some(
                relabel_component::compile(&rules.rule_configs())
                    .map_err(|e| anyhow::anyhow!(e))?,
            )
        }
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let snapshot = runtime
        .block_on(kubernetes::snapshot(
            &arguments,
            Duration::from_secs(args.timeout),
        ))
        .map_err(|e| anyhow::anyhow!("{COMPONENT}.{label}: {e}"))?;
    let found = snapshot.targets.len();
    let targets = match &relabeler {
        Some(r) => relabel_component::relabel_targets(r, snapshot.targets),
        None => snapshot.targets,
    };
    let maps: Vec<_> = targets.iter().map(|t| t.to_map()).collect();
    let json = serde_json::to_string_pretty(&maps).context("encoding targets")?;
    println!("{json}");
    eprintln!(
        "{COMPONENT}.{label}: {found} targets via {} ({})",
        snapshot.server,
        snapshot.watches.join(", ")
    );
    if let Some(id) = &args.relabel {
        eprintln!("{id}: kept {} of {found}", targets.len());
    }
    Ok(ExitCode::SUCCESS)
}
