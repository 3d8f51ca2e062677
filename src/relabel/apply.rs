//! Running rules over a target: the 11 actions.

use super::case;
use super::md5;
use super::regex::Captures;
use super::rule::{Action, Rule, RuleConfig, RuleError, Target};
use super::template::replace_all;
use crate::labels::{LabelName, LabelSet, LabelValue};

/// A loaded list of rules, applied top to bottom (Alloy's `discovery.relabel` rule blocks).
#[derive(Debug)]
pub struct Relabeler {
    rules: Box<[Rule]>,
}

/// What one rule did to a target, for `scraper relabel --trace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceStep {
    /// Index of the rule in the list.
    pub rule_index: usize,
    /// Labels before the rule ran.
    pub before: LabelSet,
    /// Labels after it ran, or `None` when the rule dropped the target.
    pub after: Option<LabelSet>,
}

/// Scratch space reused across rules and targets (one per thread), so multi-source joins,
/// submatch positions and template expansions do not allocate per rule.
#[derive(Default)]
struct Scratch {
    joined: String,
    caps: Captures,
    expanded: String,
    /// `labelmap`'s new names, end to end, and per mapped label its name's range and value.
    mapped_names: String,
    mapped: Vec<(usize, usize, LabelValue)>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch space (a fresh one if it is somehow already in use).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

impl Relabeler {
    /// Validates and compiles `configs`; the error names the first bad rule's index.
    pub fn new(configs: &[RuleConfig]) -> Result<Relabeler, RuleError> {
        let rules = configs
            .iter()
            .enumerate()
            .map(|(i, c)| Rule::new(i, c))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Relabeler {
            rules: rules.into_boxed_slice(),
        })
    }

    /// The compiled rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Applies every rule to `labels` in order. Returns false when a rule dropped the target
    /// (processing stops there; `labels` is then left as the dropping rule saw it and should
    /// be discarded). No rules: the target passes through unchanged.
    pub fn process(&self, labels: &mut LabelSet) -> bool {
        with_scratch(|scratch| self.rules.iter().all(|rule| apply(rule, labels, scratch)))
    }

    /// [`process`](Self::process) on a shared target, copying it only if it survives the
    /// leading filter rules: relabel configs usually start with `keep`/`drop`, which then
    /// discard most targets without a single label being copied.
    pub fn process_shared(&self, labels: &LabelSet) -> Option<LabelSet> {
        with_scratch(|scratch| {
            let mut rest = self.rules.iter();
            for rule in rest.by_ref() {
                match filter(rule, labels, scratch) {
                    Some(true) => continue,
                    Some(false) => return None,
                    None => {
                        let mut owned = labels.clone();
                        let kept = apply(rule, &mut owned, scratch)
                            && rest.all(|r| apply(r, &mut owned, scratch));
                        return kept.then_some(owned);
                    }
                }
            }
            Some(labels.clone())
        })
    }

    /// Like [`process`](Self::process), also reporting every rule that changed or dropped the
    /// target with the labels before and after it.
    pub fn process_traced(&self, labels: &mut LabelSet) -> (bool, Vec<TraceStep>) {
        with_scratch(|scratch| self.process_traced_with(labels, scratch))
    }

    fn process_traced_with(
        &self,
        labels: &mut LabelSet,
        scratch: &mut Scratch,
    ) -> (bool, Vec<TraceStep>) {
        let mut steps = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let before = labels.clone();
            if !apply(rule, labels, scratch) {
                steps.push(TraceStep {
                    rule_index: i,
                    before,
                    after: None,
                });
                return (false, steps);
            }
            if *labels != before {
                steps.push(TraceStep {
                    rule_index: i,
                    before,
                    after: Some(labels.clone()),
                });
            }
        }
        (true, steps)
    }
}

/// The joined source value: borrowed from the set for 0 or 1 source labels (the common case),
/// otherwise built in the scratch buffer. Missing labels contribute `""`.
fn source_value<'a>(rule: &Rule, labels: &'a LabelSet, joined: &'a mut String) -> &'a str {
    let get = |i: usize, name: &str| -> &'a str {
        labels
            .get_hinted(name, &rule.source_hints[i])
            .map_or("", |v| v)
    };
    match &*rule.sources {
        [] => "",
        [one] => get(0, one),
        many => {
            joined.clear();
            for (i, name) in many.iter().enumerate() {
                if i > 0 {
                    joined.push_str(&rule.config.separator);
                }
                joined.push_str(get(i, name));
            }
            joined
        }
    }
}

/// The verdict of a rule that only filters (`keep`, `drop`, `keepequal`, `dropequal`): false =
/// drop the target. `None` for rules that change labels.
fn filter(rule: &Rule, labels: &LabelSet, scratch: &mut Scratch) -> Option<bool> {
    Some(match rule.action {
        Action::Keep => {
            let v = source_value(rule, labels, &mut scratch.joined);
            rule.regex.is_match(v)
        }
        Action::Drop => {
            let v = source_value(rule, labels, &mut scratch.joined);
            !rule.regex.is_match(v)
        }
        Action::KeepEqual | Action::DropEqual => {
            let v = source_value(rule, labels, &mut scratch.joined);
            let Target::Fixed(t) = &rule.target else {
                return Some(true);
            };
            let equal = v == labels.get_or_empty(t);
            equal == (rule.action == Action::KeepEqual)
        }
        _ => return None,
    })
}

/// Applies one rule; false = drop the target.
fn apply(rule: &Rule, labels: &mut LabelSet, scratch: &mut Scratch) -> bool {
    if let Some(keep) = filter(rule, labels, scratch) {
        return keep;
    }
    match rule.action {
        Action::Keep | Action::Drop | Action::KeepEqual | Action::DropEqual => true,
        Action::Replace => {
            replace(rule, labels, scratch);
            true
        }
        Action::HashMod => {
            let v = source_value(rule, labels, &mut scratch.joined);
            let h = md5::hashmod(v.as_bytes(), rule.modulus);
            set_fixed(rule, labels, LabelValue::from(h.to_string()));
            true
        }
        Action::Lowercase | Action::Uppercase => {
            let v = source_value(rule, labels, &mut scratch.joined);
            let mapped = if rule.action == Action::Lowercase {
                case::to_lower(v)
            } else {
                case::to_upper(v)
            };
            // An empty result deletes the target (set_shared treats "" as delete).
            set_fixed(rule, labels, LabelValue::from(mapped));
            true
        }
        Action::LabelMap => {
            label_map(rule, labels, scratch);
            true
        }
        Action::LabelDrop => {
            labels.retain(|name, _| !rule.regex.is_match(name));
            true
        }
        Action::LabelKeep => {
            labels.retain(|name, _| rule.regex.is_match(name));
            true
        }
    }
}

fn set_fixed(rule: &Rule, labels: &mut LabelSet, value: LabelValue) {
    if let Target::Fixed(name) = &rule.target {
        labels.set_shared_hinted(name, value, &rule.target_hint);
    }
}

/// `replace`: match, expand the target name and the replacement, set (or delete when empty).
fn replace(rule: &Rule, labels: &mut LabelSet, scratch: &mut Scratch) {
    let Scratch {
        joined,
        caps,
        expanded,
        ..
    } = scratch;
    // Compute everything from borrowed data first; mutate the set only at the end.
    let (name, value): (LabelName, Option<LabelValue>) = {
        let v = source_value(rule, labels, joined);
        if rule.groups_needed == 0 {
            // Neither template reads a group: a plain match test decides.
            if !rule.regex.is_match(v) {
                return;
            }
        } else if !rule.regex.captures_at(v, 0, rule.groups_needed, caps) {
            // No match: nothing changes, even when the target exists.
            return;
        }
        let name: LabelName = match &rule.target {
            Target::Fixed(n) => n.clone(),
            Target::Template(t) => {
                expanded.clear();
                t.expand_into(v, caps, expanded);
                // An invalid (with UTF-8 names: empty) expanded name makes the rule a no-op.
                if expanded.is_empty() {
                    return;
                }
                LabelName::from(expanded.as_str())
            }
        };
        let value = if let Some(lit) = &rule.replacement_literal {
            Some(lit.clone())
        } else if let (Some(g), [source]) = (rule.replacement.single_group(), &*rule.sources)
            && caps.get(g) == Some((0, v.len()))
            && !v.is_empty()
        {
            // The value is exactly the (single) source label's value: share it, no copy.
            labels.get_hinted(source, &rule.source_hints[0]).cloned()
        } else {
            expanded.clear();
            rule.replacement.expand_into(v, caps, expanded);
            (!expanded.is_empty()).then(|| LabelValue::new(expanded))
        };
        (name, value)
    };
    match value {
        Some(v) if !v.is_empty() => match &rule.target {
            Target::Fixed(_) => labels.set_shared_hinted(&name, v, &rule.target_hint),
            Target::Template(_) => labels.set_shared(&name, v),
        },
        _ => {
            labels.remove(&name);
        }
    }
}

/// `labelmap`: for each label present when the rule starts, in sorted name order, a name the
/// regex matches is copied to `replace_all(name)`. Later writes win, so with two sources mapping
/// to one name the one sorting last wins (Prometheus; Alloy's map order is random).
///
/// Cost matters here: the rule visits every label of every target (the Pyroscope chart's
/// `__meta_kubernetes_pod_label_(.+)`). With an anchored regex (every one but the
/// unbalanced-parenthesis quirk) a match spans the whole name, so Go's `ReplaceAllString` is one
/// expansion of the replacement: one search per label instead of a match test plus a replace
/// loop, and the new names are written end to end into reused scratch space; they are then set
/// in one merge (`LabelSet::set_sorted`), which allocates a name only for a label that is new.
fn label_map(rule: &Rule, labels: &mut LabelSet, scratch: &mut Scratch) {
    let Scratch {
        caps,
        mapped_names,
        mapped,
        ..
    } = scratch;
    mapped_names.clear();
    mapped.clear();
    let groups = rule.replacement.groups_needed().max(1);
    for (name, value) in labels.iter_shared() {
        let start = mapped_names.len();
        if rule.regex.is_anchored() {
            if !rule.regex.captures_at(name, 0, groups, caps) {
                continue;
            }
            rule.replacement.expand_into(name, caps, mapped_names);
        } else {
            if !rule.regex.is_match(name) {
                continue;
            }
            mapped_names.push_str(&replace_all(&rule.regex, name, &rule.replacement, caps));
        }
        mapped.push((start, mapped_names.len(), value.clone()));
    }
    // Later writes win: sort by new name keeping source order among equals, keep the last.
    // Stripping a common prefix (the usual rule) keeps the source order, which is sorted: one
    // pass to see that is cheaper than a sort's comparisons.
    let by_name = |a: &(usize, usize, LabelValue), b: &(usize, usize, LabelValue)| {
        mapped_names[a.0..a.1].cmp(&mapped_names[b.0..b.1])
    };
    if !mapped.is_sorted_by(|a, b| by_name(a, b).is_le()) {
        mapped.sort_by(by_name);
    }
    let mut adds: Vec<(&str, LabelValue)> = Vec::with_capacity(mapped.len());
    for (start, end, value) in mapped.drain(..) {
        let name = &mapped_names[start..end];
        match adds.last_mut() {
            Some(last) if last.0 == name => last.1 = value,
            _ => adds.push((name, value)),
        }
    }
    labels.set_sorted(&adds);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relabel::rule::Action::*;

    fn set(pairs: &[(&str, &str)]) -> LabelSet {
        pairs.iter().copied().collect()
    }

    #[derive(Default)]
    struct R {
        src: &'static [&'static str],
        sep: Option<&'static str>,
        regex: Option<&'static str>,
        modulus: u64,
        target: &'static str,
        repl: Option<&'static str>,
        action: Action,
    }

    fn cfg(r: &R) -> RuleConfig {
        let d = RuleConfig::default();
        RuleConfig {
            source_labels: (!r.src.is_empty())
                .then(|| r.src.iter().map(|s| s.to_string()).collect()),
            separator: r.sep.map_or(d.separator, str::to_owned),
            regex: r.regex.map_or(d.regex, str::to_owned),
            modulus: r.modulus,
            target_label: r.target.to_owned(),
            replacement: r.repl.map_or(d.replacement, str::to_owned),
            action: r.action,
        }
    }

    /// Runs one rule; `None` = dropped.
    fn run(r: R, input: &[(&str, &str)]) -> Option<LabelSet> {
        let relabeler = Relabeler::new(&[cfg(&r)]).unwrap_or_else(|e| panic!("{e}"));
        let mut l = set(input);
        relabeler.process(&mut l).then_some(l)
    }

    #[test]
    fn actions() {
        // (rule, input, expected output or None = dropped). Expectations from the spec's §4
        // (verified against Prometheus) and Prometheus 3 / Alloy source.
        #[allow(clippy::type_complexity)]
        let cases: Vec<(R, &[(&str, &str)], Option<&[(&str, &str)]>)> = vec![
            // replace
            (
                R {
                    src: &["a"],
                    target: "b",
                    ..R::default()
                },
                &[("a", "x")],
                Some(&[("a", "x"), ("b", "x")]),
            ),
            (
                R {
                    src: &["a"],
                    target: "b",
                    ..R::default()
                },
                &[("b", "old")],
                Some(&[]),
            ), // missing source: $1 empty → delete b
            (
                R {
                    src: &["a"],
                    regex: Some(".+"),
                    target: "b",
                    ..R::default()
                },
                &[("b", "old")],
                Some(&[("b", "old")]),
            ), // no match → unchanged
            (
                R {
                    src: &["a", "b"],
                    target: "c",
                    ..R::default()
                },
                &[],
                Some(&[("c", ";")]),
            ),
            (
                R {
                    src: &["a", "b"],
                    sep: Some(""),
                    target: "c",
                    ..R::default()
                },
                &[("a", "1"), ("b", "2")],
                Some(&[("a", "1"), ("b", "2"), ("c", "12")]),
            ),
            (
                R {
                    target: "t",
                    repl: Some("v"),
                    ..R::default()
                },
                &[],
                Some(&[("t", "v")]),
            ),
            (
                R {
                    src: &["app"],
                    target: "svc",
                    repl: Some("$1_v2"),
                    ..R::default()
                },
                &[("app", "api"), ("svc", "x")],
                Some(&[("app", "api")]),
            ),
            (
                R {
                    src: &["app"],
                    target: "svc",
                    repl: Some("${1}_v2"),
                    ..R::default()
                },
                &[("app", "api")],
                Some(&[("app", "api"), ("svc", "api_v2")]),
            ),
            (
                R {
                    src: &["a"],
                    regex: Some("(.*)-(.*)"),
                    target: "${2}_${1}",
                    repl: Some("$1"),
                    ..R::default()
                },
                &[("a", "x-y")],
                Some(&[("a", "x-y"), ("y_x", "x")]),
            ),
            // Expanded target: UTF-8 names are valid; an empty expansion is a no-op.
            (
                R {
                    src: &["a"],
                    target: "$1",
                    ..R::default()
                },
                &[("a", "9lives")],
                Some(&[("9lives", "9lives"), ("a", "9lives")]),
            ),
            (
                R {
                    src: &["a"],
                    regex: Some("(x)?.*"),
                    target: "$1",
                    repl: Some("v"),
                    ..R::default()
                },
                &[("a", "y")],
                Some(&[("a", "y")]),
            ),
            // Empty replacement deletes the *expanded* target.
            (
                R {
                    src: &["a"],
                    target: "${1}",
                    repl: Some(""),
                    ..R::default()
                },
                &[("a", "b"), ("b", "1")],
                Some(&[("a", "b")]),
            ),
            // Address rewrite idiom (spec §9 A).
            (
                R {
                    src: &["__address__", "port"],
                    regex: Some(r"(.+?)(?::\d+)?;(\d+)"),
                    target: "__address__",
                    repl: Some("$1:$2"),
                    ..R::default()
                },
                &[("__address__", "10.0.0.5:8080"), ("port", "6060")],
                Some(&[("__address__", "10.0.0.5:6060"), ("port", "6060")]),
            ),
            (
                R {
                    src: &["__address__", "port"],
                    regex: Some(r"(.+?)(?::\d+)?;(\d+)"),
                    target: "__address__",
                    repl: Some("$1:$2"),
                    ..R::default()
                },
                &[("__address__", "10.0.0.5")],
                Some(&[("__address__", "10.0.0.5")]),
            ),
            // Newlines: (?s) is on.
            (
                R {
                    src: &["a"],
                    target: "b",
                    ..R::default()
                },
                &[("a", "x\ny")],
                Some(&[("a", "x\ny"), ("b", "x\ny")]),
            ),
            // keep / drop
            (
                R {
                    src: &["a"],
                    regex: Some("foo"),
                    action: Keep,
                    ..R::default()
                },
                &[("a", "foobar")],
                None,
            ),
            (
                R {
                    src: &["a"],
                    regex: Some("foo.*"),
                    action: Keep,
                    ..R::default()
                },
                &[("a", "foobar")],
                Some(&[("a", "foobar")]),
            ),
            (
                R {
                    src: &["a"],
                    action: Keep,
                    ..R::default()
                },
                &[],
                Some(&[]),
            ),
            (
                R {
                    src: &["a"],
                    regex: Some(".+"),
                    action: Keep,
                    ..R::default()
                },
                &[],
                None,
            ),
            (
                R {
                    action: Drop,
                    ..R::default()
                },
                &[("a", "1")],
                None,
            ),
            (
                R {
                    src: &["a"],
                    regex: Some(""),
                    action: Drop,
                    ..R::default()
                },
                &[("b", "1")],
                None,
            ),
            (
                R {
                    src: &["a"],
                    regex: Some(""),
                    action: Drop,
                    ..R::default()
                },
                &[("a", "1")],
                Some(&[("a", "1")]),
            ),
            (
                R {
                    src: &["app"],
                    regex: Some("api)|(web"),
                    action: Keep,
                    ..R::default()
                },
                &[("app", "my-web")],
                Some(&[("app", "my-web")]),
            ),
            (
                R {
                    src: &["app"],
                    regex: Some("api)|(web"),
                    action: Keep,
                    ..R::default()
                },
                &[("app", "x")],
                None,
            ),
            // keepequal / dropequal
            (
                R {
                    src: &["p"],
                    target: "t",
                    action: KeepEqual,
                    ..R::default()
                },
                &[("p", "1"), ("t", "1")],
                Some(&[("p", "1"), ("t", "1")]),
            ),
            (
                R {
                    src: &["p"],
                    target: "t",
                    action: KeepEqual,
                    ..R::default()
                },
                &[("p", "1"), ("t", "2")],
                None,
            ),
            (
                R {
                    src: &["p"],
                    target: "t",
                    action: KeepEqual,
                    ..R::default()
                },
                &[],
                Some(&[]),
            ),
            (
                R {
                    src: &["p"],
                    target: "t",
                    action: DropEqual,
                    ..R::default()
                },
                &[],
                None,
            ),
            (
                R {
                    src: &["a", "b"],
                    target: "t",
                    action: KeepEqual,
                    ..R::default()
                },
                &[("a", "1"), ("b", "2"), ("t", "1;2")],
                Some(&[("a", "1"), ("b", "2"), ("t", "1;2")]),
            ),
            // hashmod
            (
                R {
                    src: &["__address__"],
                    modulus: 8,
                    target: "__tmp_hash",
                    action: HashMod,
                    ..R::default()
                },
                &[("__address__", "10.1.2.3:8080")],
                Some(&[("__address__", "10.1.2.3:8080"), ("__tmp_hash", "2")]),
            ),
            (
                R {
                    src: &["x"],
                    modulus: 1000,
                    target: "h",
                    action: HashMod,
                    ..R::default()
                },
                &[],
                Some(&[("h", "958")]),
            ),
            (
                R {
                    src: &["x", "y"],
                    sep: Some("/"),
                    modulus: 997,
                    target: "h",
                    action: HashMod,
                    ..R::default()
                },
                &[("x", "x"), ("y", "y")],
                Some(&[("h", "677"), ("x", "x"), ("y", "y")]),
            ),
            // labelmap
            (
                R {
                    regex: Some("__meta_kubernetes_pod_label_(.+)"),
                    action: LabelMap,
                    ..R::default()
                },
                &[("__meta_kubernetes_pod_label_app_kubernetes_io_name", "web")],
                Some(&[
                    ("__meta_kubernetes_pod_label_app_kubernetes_io_name", "web"),
                    ("app_kubernetes_io_name", "web"),
                ]),
            ),
            // Two sources to one name: the one sorting last wins.
            (
                R {
                    regex: Some("[ab]_(x)"),
                    action: LabelMap,
                    ..R::default()
                },
                &[("a_x", "1"), ("b_x", "2")],
                Some(&[("a_x", "1"), ("b_x", "2"), ("x", "2")]),
            ),
            // Snapshot: labels created by the rule are not revisited.
            (
                R {
                    regex: Some("(.*)"),
                    repl: Some("x_$1"),
                    action: LabelMap,
                    ..R::default()
                },
                &[("a", "1")],
                Some(&[("a", "1"), ("x_a", "1")]),
            ),
            // Overwrites an existing label.
            (
                R {
                    regex: Some("src_(.*)"),
                    action: LabelMap,
                    ..R::default()
                },
                &[("src_a", "new"), ("a", "old")],
                Some(&[("a", "new"), ("src_a", "new")]),
            ),
            // labeldrop / labelkeep
            (
                R {
                    regex: Some("tmp"),
                    action: LabelDrop,
                    ..R::default()
                },
                &[("tmp", "1"), ("tmp_x", "2")],
                Some(&[("tmp_x", "2")]),
            ),
            (
                R {
                    action: LabelDrop,
                    ..R::default()
                },
                &[("a", "1"), ("b", "2")],
                Some(&[]),
            ),
            (
                R {
                    regex: Some(""),
                    action: LabelDrop,
                    ..R::default()
                },
                &[("a", "1")],
                Some(&[("a", "1")]),
            ),
            (
                R {
                    regex: Some("a|__address__"),
                    action: LabelKeep,
                    ..R::default()
                },
                &[("a", "1"), ("b", "2"), ("__address__", "x")],
                Some(&[("__address__", "x"), ("a", "1")]),
            ),
            (
                R {
                    regex: Some(""),
                    action: LabelKeep,
                    ..R::default()
                },
                &[("a", "1")],
                Some(&[]),
            ),
            // lowercase / uppercase (Go's simple case mapping)
            (
                R {
                    src: &["a"],
                    target: "b",
                    action: Lowercase,
                    ..R::default()
                },
                &[("a", "ÀÉÎ ΟΔΟΣ")],
                Some(&[("a", "ÀÉÎ ΟΔΟΣ"), ("b", "àéî οδοσ")]),
            ),
            (
                R {
                    src: &["a"],
                    target: "b",
                    action: Uppercase,
                    ..R::default()
                },
                &[("a", "straße")],
                Some(&[("a", "straße"), ("b", "STRAßE")]),
            ),
            (
                R {
                    src: &["a"],
                    target: "b",
                    action: Uppercase,
                    ..R::default()
                },
                &[("b", "x")],
                Some(&[]),
            ),
            (
                R {
                    src: &["a"],
                    target: "${1}",
                    action: Lowercase,
                    ..R::default()
                },
                &[("a", "X")],
                Some(&[("${1}", "x"), ("a", "X")]),
            ),
        ];
        for (i, (rule, input, want)) in cases.into_iter().enumerate() {
            let desc = format!("case {i}: {:?} on {input:?}", cfg(&rule));
            let got = run(rule, input);
            let want = want.map(set);
            assert_eq!(got, want, "{desc}");
        }
    }

    #[test]
    fn processing_stops_at_the_first_drop() {
        let rules = [
            cfg(&R {
                src: &["a"],
                regex: Some("x"),
                action: Drop,
                ..R::default()
            }),
            // Never reached: the trace shows processing stopped at rule 0.
            cfg(&R {
                target: "after",
                repl: Some("1"),
                ..R::default()
            }),
        ];
        let r = Relabeler::new(&rules).unwrap();
        let mut l = set(&[("a", "x")]);
        let (keep, steps) = r.process_traced(&mut l);
        assert!(!keep);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].rule_index, 0);
        assert_eq!(steps[0].after, None);
        assert!(!l.contains("after"));
    }

    #[test]
    fn trace_reports_only_changing_rules() {
        let rules = [
            cfg(&R {
                target: "a",
                repl: Some("1"),
                ..R::default()
            }),
            cfg(&R {
                src: &["a"],
                regex: Some("1"),
                action: Keep,
                ..R::default()
            }),
            cfg(&R {
                target: "b",
                repl: Some("2"),
                ..R::default()
            }),
        ];
        let r = Relabeler::new(&rules).unwrap();
        let mut l = LabelSet::new();
        let (keep, steps) = r.process_traced(&mut l);
        assert!(keep);
        let idx: Vec<usize> = steps.iter().map(|s| s.rule_index).collect();
        assert_eq!(idx, [0, 2]);
        assert_eq!(steps[1].before, set(&[("a", "1")]));
        assert_eq!(steps[1].after, Some(set(&[("a", "1"), ("b", "2")])));
        // The untraced path gives the same result.
        let mut l2 = LabelSet::new();
        assert!(r.process(&mut l2));
        assert_eq!(l, l2);
    }

    #[test]
    fn later_rules_see_earlier_results() {
        let rules = [
            cfg(&R {
                target: "__tmp",
                repl: Some("v"),
                ..R::default()
            }),
            cfg(&R {
                src: &["__tmp"],
                target: "copy",
                ..R::default()
            }),
            cfg(&R {
                regex: Some("__tmp"),
                action: LabelDrop,
                ..R::default()
            }),
        ];
        let r = Relabeler::new(&rules).unwrap();
        let mut l = LabelSet::new();
        assert!(r.process(&mut l));
        assert_eq!(l, set(&[("copy", "v")]));
    }

    #[test]
    fn relabeler_is_shareable_across_threads() {
        // The component runtime applies one loaded rule list from several tasks.
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Relabeler>();
        let r = std::sync::Arc::new(
            Relabeler::new(&[cfg(&R {
                src: &["a"],
                regex: Some(r"(.+):(\d+)"),
                target: "b",
                ..R::default()
            })])
            .unwrap(),
        );
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let r = r.clone();
                std::thread::spawn(move || {
                    let mut l = set(&[("a", &format!("h{i}:80"))]);
                    assert!(r.process(&mut l));
                    l.get("b").map(str::to_owned)
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), Some(format!("h{i}")));
        }
    }

    #[test]
    fn error_carries_rule_index() {
        let rules = [
            cfg(&R {
                target: "ok",
                ..R::default()
            }),
            cfg(&R {
                regex: Some("("),
                target: "x",
                ..R::default()
            }),
        ];
        let e = Relabeler::new(&rules).unwrap_err();
        assert_eq!(e.index(), 1);
    }
}
