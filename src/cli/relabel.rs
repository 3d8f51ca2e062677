//! `scraper relabel --config FILE --component discovery.relabel.NAME --targets FILE [--trace]`:
//! runs one `discovery.relabel` block of a config file over targets given as JSON, offline.
//!
//! * The config is checked like `scraper check` does (same analysis code): errors inside the
//!   chosen block fail the command; errors elsewhere in the file (a component scraper does not
//!   have, say) do not concern the block and are only counted in a note.
//! * The block's `targets` attribute is ignored in favour of `--targets` (a JSON array of
//!   objects of strings, `-` for standard input). For the check it is replaced by `[]` in a copy
//!   of the text with every other byte at the same offset, so that positions stay exact and a
//!   reference to an unsupported discovery component does not hide the rules from the check.
//! * The kept targets are printed on standard output as a JSON array of objects (keys sorted).
//! * `--trace` prints on standard error, for every input target, its labels one per line, then
//!   each rule that changed or dropped it: index, `file:line` of the `rule` block, action and
//!   only the labels it added, changed or removed. A rule that did nothing because a source
//!   label is missing is shown too, as that is the usual reason a rule "does not work", with a
//!   hint when the label comes from `discovery.kubernetes`' `attach_metadata`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;

use crate::components;
use crate::components::discovery::relabel::{self as component, Arguments};
use crate::gocompat::quote as go_quote;
use crate::relabel::{Action, LabelSet, RuleConfig, TraceStep};
use crate::runtime;
use crate::syntax::ast::{Block, Span, Stmt};
use crate::syntax::decode;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::{Scope, eval_body};

const COMPONENT: &str = "discovery.relabel";

#[derive(Debug, Args)]
pub(crate) struct RelabelArgs {
    /// The config file.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The component to run, e.g. discovery.relabel.otel.
    #[arg(long, value_name = "ID")]
    component: String,
    /// Input targets: a JSON array of objects of strings ("-": standard input). Replaces the
    /// block's `targets` attribute.
    #[arg(long, value_name = "FILE")]
    targets: String,
    /// Show on standard error, for every input target, each rule that changed or dropped it.
    #[arg(long)]
    trace: bool,
}

pub(super) fn relabel(args: RelabelArgs) -> anyhow::Result<ExitCode> {
    let label = match args
        .component
        .strip_prefix(COMPONENT)
        .and_then(|s| s.strip_prefix('.'))
    {
        Some(label) if !label.is_empty() => label.to_string(),
        _ => bail!(
            "--component must name a {COMPONENT} block, e.g. {COMPONENT}.otel (got {:?})",
            args.component
        ),
    };
    let super::LoadedConfig {
        name,
        src,
        source,
        file,
    } = super::load_config(&args.config)?;
    let block = find_block(&file.body.stmts, &label).ok_or_else(|| {
        let found: Vec<String> = file
            .body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Block(b) if b.full_name() == COMPONENT => {
                    b.label.as_ref().map(|l| format!("{COMPONENT}.{}", l.value))
                }
                _ => None,
            })
            .collect();
        let found = if found.is_empty() {
            format!("it has no {COMPONENT} block")
        } else {
            format!("it has {}", found.join(", "))
        };
        let nested = if nested_block(&file.body.stmts, &label) {
            " (only top-level blocks: scraper relabel does not look inside declare blocks)"
        } else {
            ""
        };
        anyhow::anyhow!("{name} has no block {COMPONENT}.{label}{nested}; {found}")
    })?;

    // The same checks as `scraper check`, on the text with the block's targets replaced by `[]`.
    let checked = without_targets(&src, block);
    let registry = components::builtin();
    let diags = runtime::check(&registry, &name, &checked);
    let (inside, elsewhere): (Vec<&Diagnostic>, Vec<&Diagnostic>) = diags
        .iter()
        .partition(|d| d.span.is_none_or(|s| within(s, block.span)));
    for d in &inside {
        eprint!("{}", source.render(d));
    }
    let errors = inside.iter().filter(|d| d.is_error()).count();
    if errors > 0 {
        bail!(
            "{errors} {} in {COMPONENT}.{label}",
            if errors == 1 { "error" } else { "errors" }
        );
    }
    let other = elsewhere.iter().filter(|d| d.is_error()).count();
    if other > 0 {
        eprintln!(
            "note: {other} {} elsewhere in {name} (not in {COMPONENT}.{label}); see `scraper check`",
            if other == 1 { "error" } else { "errors" }
        );
    }

    let rules = decode_rules(&source, block)?;
    let rule_lines: Vec<usize> = block
        .body
        .stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Block(b) if b.full_name() == "rule" => {
                Some(source.line_col(b.header_span().start as usize).0)
            }
            _ => None,
        })
        .collect();
    let relabeler = component::compile(&rules.rule_configs()).map_err(|e| anyhow::anyhow!(e))?;

    let targets = read_targets(&args.targets)?;
    let mut kept: Vec<LabelSet> = Vec::new();
    let mut trace = String::new();
    for (i, target) in targets.iter().enumerate() {
        let mut labels = LabelSet::from(target);
        if !args.trace {
            if relabeler.process(&mut labels) {
                kept.push(labels);
            }
            continue;
        }
        let _ = writeln!(trace, "target[{i}]");
        for (label, value) in labels.iter() {
            let _ = writeln!(trace, "    {label}={}", go_quote(value));
        }
        let input = labels.clone();
        let (keep, steps) = relabeler.process_traced(&mut labels);
        let configs: Vec<&RuleConfig> = rules.rule.iter().map(|r| r.config()).collect();
        write_steps(&mut trace, &input, &steps, &configs, &name, &rule_lines);
        if keep {
            let _ = writeln!(trace, "  => output[{}]", kept.len());
            kept.push(labels);
        } else {
            trace.push_str("  => dropped\n");
        }
    }
    eprint!("{trace}");
    let json = serde_json::to_string_pretty(&kept).context("encoding output")?;
    println!("{json}");
    Ok(ExitCode::SUCCESS)
}

/// The top-level `discovery.relabel "<label>"` block.
fn find_block<'a>(stmts: &'a [Stmt], label: &str) -> Option<&'a Block> {
    super::find_component(stmts, COMPONENT, label)
}

fn nested_block(stmts: &[Stmt], label: &str) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Block(b) => {
            find_block(&b.body.stmts, label).is_some() || nested_block(&b.body.stmts, label)
        }
        Stmt::Attribute(_) => false,
    })
}

fn within(inner: Span, outer: Span) -> bool {
    inner.start >= outer.start && inner.end <= outer.end
}

/// `src` with the block's `targets` expression replaced by `[]` and spaces, keeping line breaks,
/// so every byte offset (and line and column) is unchanged. An expression shorter than `[]`
/// cannot be a valid target list and is left alone for the check to report.
fn without_targets(src: &str, block: &Block) -> String {
    let mut bytes = src.as_bytes().to_vec();
    for stmt in &block.body.stmts {
        let Stmt::Attribute(a) = stmt else { continue };
        let range = a.value.span.range();
        if a.name.name != "targets" || range.len() < 2 || range.end > bytes.len() {
            continue;
        }
        for b in &mut bytes[range.clone()] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
        bytes[range.start] = b'[';
        bytes[range.start + 1] = b']';
    }
    // Only whole UTF-8 sequences inside the expression were replaced, by ASCII.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Evaluates the block without its `targets` attribute and decodes the rules.
pub(super) fn decode_rules(source: &Source, block: &Block) -> anyhow::Result<Arguments> {
    let mut body = block.body.clone();
    body.stmts
        .retain(|s| !matches!(s, Stmt::Attribute(a) if a.name.name == "targets"));
    let fail = |diags: Vec<Diagnostic>| {
        eprint!("{}", source.render_all(&diags));
        anyhow::anyhow!("the rules of {COMPONENT} block could not be evaluated on their own")
    };
    let evaluated = eval_body(&body, &Scope::stdlib()).map_err(fail)?;
    // `targets` is required: decode with an empty list in its place.
    #[derive(serde::Deserialize)]
    struct RulesOnly {
        #[serde(default)]
        rule: Vec<component::RuleBlock>,
    }
    let rules: RulesOnly = decode::from_body_at(&evaluated, block.header_span()).map_err(fail)?;
    Ok(Arguments {
        targets: Vec::new(),
        rule: rules.rule,
    })
}

fn read_targets(path: &str) -> anyhow::Result<Vec<BTreeMap<String, String>>> {
    let (name, text) = if path == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading targets from standard input")?;
        ("standard input".to_string(), s)
    } else {
        let s = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        (path.to_string(), s)
    };
    serde_json::from_str(&text).with_context(|| {
        format!("{name}: expected a JSON array of targets, each an object of string labels")
    })
}

/// What each rule did to one target, in rule order: the steps that changed or dropped it, and
/// the rules that did nothing because a source label was missing. A rule that ran with a
/// missing source label (taken as empty) says so, with hints.
fn write_steps(
    out: &mut String,
    input: &LabelSet,
    steps: &[TraceStep],
    rules: &[&RuleConfig],
    file: &str,
    rule_lines: &[usize],
) {
    let line = |i: usize| rule_lines.get(i).copied().unwrap_or(0);
    let mut current = input.clone();
    let mut changed = false;
    let mut next_step = steps.iter().peekable();
    for (i, rule) in rules.iter().enumerate() {
        let missing: Vec<&str> = rule
            .source_labels
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|n| current.get(n).is_none_or(str::is_empty))
            .collect();
        let (noun, verb) = if missing.len() == 1 {
            ("label", "is")
        } else {
            ("labels", "are")
        };
        let step = next_step.next_if(|s| s.rule_index == i);
        match step {
            Some(step) => {
                write_step(out, step, file, line(i), rule);
                changed = true;
                if !missing.is_empty() {
                    let _ = writeln!(
                        out,
                        "    note: source {noun} {} {verb} missing, taken as \"\"",
                        missing.join(", ")
                    );
                }
            }
            None if missing.is_empty() => continue,
            None => {
                let _ = writeln!(
                    out,
                    "  rule[{i}] {file}:{} {}: did nothing, source {noun} {} {verb} missing",
                    line(i),
                    rule.action,
                    missing.join(", ")
                );
            }
        }
        for hint in missing_label_hints(&missing, &current) {
            let _ = writeln!(out, "    hint: {hint}");
        }
        match step.map(|s| &s.after) {
            Some(Some(after)) => current = after.clone(),
            // Dropped: no later rule ran.
            Some(None) => return,
            None => {}
        }
    }
    if !changed {
        out.push_str("  no rule changed it\n");
    }
}

/// Why a `__meta_kubernetes_*` label can be missing: node and namespace metadata are only
/// added to pod and endpoint targets on request (`attach_metadata`).
fn missing_label_hints(missing: &[&str], labels: &LabelSet) -> Vec<String> {
    let mut hints = Vec::new();
    if missing
        .iter()
        .any(|n| n.starts_with("__meta_kubernetes_node_"))
    {
        let mut hint = "__meta_kubernetes_node_* labels are only on targets of a \
                        discovery.kubernetes block with attach_metadata { node = true }"
            .to_string();
        if let Some(node) = labels.get("__meta_kubernetes_pod_node_name") {
            hint.push_str(&format!(
                " (pod targets always have __meta_kubernetes_pod_node_name, here {})",
                go_quote(node)
            ));
        }
        hints.push(hint);
    }
    if missing
        .iter()
        .any(|n| n.starts_with("__meta_kubernetes_namespace_"))
    {
        hints.push(
            "__meta_kubernetes_namespace_* labels are only on targets of a discovery.kubernetes \
             block with attach_metadata { namespace = true }"
                .to_string(),
        );
    }
    hints
}

/// One rule's effect: `rule[i] file:line action` and the labels it added, changed or removed,
/// or why it dropped the target.
fn write_step(out: &mut String, step: &TraceStep, file: &str, line: usize, rule: &RuleConfig) {
    let _ = write!(
        out,
        "  rule[{}] {file}:{line} {}",
        step.rule_index, rule.action
    );
    let Some(after) = &step.after else {
        let _ = writeln!(out, ": dropped{}", drop_reason(&step.before, rule));
        return;
    };
    out.push('\n');
    // Every name of either set, in order: one line per difference.
    let names: std::collections::BTreeSet<&str> =
        step.before.names().chain(after.names()).collect();
    for name in names {
        let line = match (step.before.get(name), after.get(name)) {
            (Some(old), None) => format!("    - {name}={}", go_quote(old)),
            (None, Some(new)) => format!("    + {name}={}", go_quote(new)),
            (Some(old), Some(new)) if old != new => {
                format!("    ~ {name}={} -> {}", go_quote(old), go_quote(new))
            }
            _ => continue,
        };
        out.push_str(&line);
        out.push('\n');
    }
}

/// `, value "4317" does not match "1777"` for the actions that drop on a condition.
fn drop_reason(before: &LabelSet, rule: &RuleConfig) -> String {
    let value = rule
        .source_labels
        .iter()
        .flatten()
        .map(|n| before.get_or_empty(n))
        .collect::<Vec<_>>()
        .join(&rule.separator);
    let value = go_quote(&value);
    let target = || {
        format!(
            "{}={}",
            rule.target_label,
            go_quote(before.get_or_empty(&rule.target_label))
        )
    };
    match rule.action {
        Action::Keep => format!(", value {value} does not match {}", go_quote(&rule.regex)),
        Action::Drop => format!(", value {value} matches {}", go_quote(&rule.regex)),
        Action::KeepEqual => format!(", value {value} differs from {}", target()),
        Action::DropEqual => format!(", value {value} equals {}", target()),
        _ => String::new(),
    }
}
