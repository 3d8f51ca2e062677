//! The rule model: the config struct (Alloy's `rule` block), load-time validation with Alloy's
//! messages, and the compiled form the engine runs.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;

use serde::{Deserialize, Serialize};

use super::regex::{GoRegex, RegexError};
use super::template::Template;
use crate::labels::{LabelName, LabelValue};

/// The 11 relabel actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Action {
    #[default]
    Replace,
    Keep,
    Drop,
    KeepEqual,
    DropEqual,
    HashMod,
    LabelMap,
    LabelDrop,
    LabelKeep,
    Lowercase,
    Uppercase,
}

impl Action {
    /// All actions, in Prometheus' documentation order.
    pub const ALL: [Action; 11] = [
        Action::Replace,
        Action::Keep,
        Action::Drop,
        Action::KeepEqual,
        Action::DropEqual,
        Action::HashMod,
        Action::LabelMap,
        Action::LabelDrop,
        Action::LabelKeep,
        Action::Lowercase,
        Action::Uppercase,
    ];

    /// The config spelling (`"replace"`, `"keepequal"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Replace => "replace",
            Action::Keep => "keep",
            Action::Drop => "drop",
            Action::KeepEqual => "keepequal",
            Action::DropEqual => "dropequal",
            Action::HashMod => "hashmod",
            Action::LabelMap => "labelmap",
            Action::LabelDrop => "labeldrop",
            Action::LabelKeep => "labelkeep",
            Action::Lowercase => "lowercase",
            Action::Uppercase => "uppercase",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action name that is not one of the 11 (Alloy: case-sensitive, so `Replace` is unknown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized action type {}", go_quote(.0))]
pub struct UnknownAction(pub String);

impl FromStr for Action {
    type Err = UnknownAction;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Action::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| UnknownAction(s.to_owned()))
    }
}

impl TryFrom<String> for Action {
    type Error = UnknownAction;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Action> for &'static str {
    fn from(a: Action) -> Self {
        a.as_str()
    }
}

/// Default `separator`.
pub const DEFAULT_SEPARATOR: &str = ";";
/// Default `regex`.
pub const DEFAULT_REGEX: &str = "(.*)";
/// Default `replacement`.
pub const DEFAULT_REPLACEMENT: &str = "$1";

/// One `rule` block as configured: field names and defaults are Alloy's.
///
/// `source_labels` is an `Option` because Alloy distinguishes an absent attribute from an
/// explicit empty list (`labeldrop` refuses `source_labels = []`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuleConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_labels: Option<Vec<String>>,
    pub separator: String,
    pub regex: String,
    pub modulus: u64,
    pub target_label: String,
    pub replacement: String,
    pub action: Action,
}

impl Default for RuleConfig {
    fn default() -> Self {
        RuleConfig {
            source_labels: None,
            separator: DEFAULT_SEPARATOR.to_owned(),
            regex: DEFAULT_REGEX.to_owned(),
            modulus: 0,
            target_label: String::new(),
            replacement: DEFAULT_REPLACEMENT.to_owned(),
            action: Action::Replace,
        }
    }
}

/// A rule that failed to load. `Display` is Alloy's message alone (the caller adds the config
/// position); [`index`](Self::index) is the rule's position in its list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("{source}")]
    Regex {
        index: usize,
        #[source]
        source: RegexError,
    },
    #[error("relabel configuration for hashmod requires non-zero modulus")]
    ZeroModulus { index: usize },
    #[error("relabel configuration for {action} action requires 'target_label' value")]
    MissingTargetLabel { index: usize, action: Action },
    #[error("{} is invalid 'target_label' for {action} action", go_quote(.target_label))]
    InvalidTargetLabel {
        index: usize,
        action: Action,
        target_label: String,
    },
    #[error("'replacement' can not be set for {action} action")]
    ReplacementNotAllowed { index: usize, action: Action },
    #[error("{} is invalid 'replacement' for {action} action", go_quote(.replacement))]
    InvalidReplacement {
        index: usize,
        action: Action,
        replacement: String,
    },
    #[error("{action} action requires only 'regex', and no other fields")]
    OnlyRegex { index: usize, action: Action },
    #[error(
        "{action} action requires only 'source_labels' and 'target_label', and no other fields"
    )]
    OnlySourceAndTarget { index: usize, action: Action },
}

impl RuleError {
    /// Position of the failing rule in the list handed to the loader.
    pub fn index(&self) -> usize {
        match self {
            RuleError::Regex { index, .. }
            | RuleError::ZeroModulus { index }
            | RuleError::MissingTargetLabel { index, .. }
            | RuleError::InvalidTargetLabel { index, .. }
            | RuleError::ReplacementNotAllowed { index, .. }
            | RuleError::InvalidReplacement { index, .. }
            | RuleError::OnlyRegex { index, .. }
            | RuleError::OnlySourceAndTarget { index, .. } => *index,
        }
    }
}

/// `target_label` of a compiled rule.
#[derive(Debug)]
pub(crate) enum Target {
    /// A plain name (also `lowercase` etc., whose target is never expanded).
    Fixed(LabelName),
    /// `replace` with `$` references: expanded per match.
    Template(Template),
}

/// A validated, compiled rule.
#[derive(Debug)]
pub struct Rule {
    pub(crate) config: RuleConfig,
    pub(crate) action: Action,
    pub(crate) sources: Box<[LabelName]>,
    pub(crate) regex: GoRegex,
    pub(crate) target: Target,
    pub(crate) replacement: Template,
    /// The replacement as a shared value when it reads no group (e.g. `replacement = "1777"`).
    pub(crate) replacement_literal: Option<LabelValue>,
    /// Groups a `replace` must capture for its templates (0 = a plain match test suffices).
    pub(crate) groups_needed: usize,
    pub(crate) modulus: u64,
    /// Where each source label was last found in a target (lookup hints, see
    /// `LabelSet::get_hinted`).
    pub(crate) source_hints: Box<[AtomicUsize]>,
    /// Where the fixed target label was last written.
    pub(crate) target_hint: AtomicUsize,
}

impl Rule {
    /// Validates and compiles `config`, the `index`-th rule of its list.
    ///
    /// Order of checks: the regex first (Alloy compiles it while decoding the block, before
    /// `Validate` runs), then Alloy's `Validate` order; the first failure is reported.
    pub fn new(index: usize, config: &RuleConfig) -> Result<Rule, RuleError> {
        let regex =
            GoRegex::new(&config.regex).map_err(|source| RuleError::Regex { index, source })?;
        validate(index, config)?;
        let action = config.action;
        let target = if action == Action::Replace && config.target_label.contains('$') {
            Target::Template(Template::compile(&config.target_label, &regex))
        } else {
            Target::Fixed(crate::labels::shared_name(&config.target_label))
        };
        let replacement = Template::compile(&config.replacement, &regex);
        let replacement_literal = replacement.as_literal().map(LabelValue::from);
        let groups_needed = match &target {
            Target::Template(t) => t.groups_needed(),
            Target::Fixed(_) => 0,
        }
        .max(replacement.groups_needed());
        Ok(Rule {
            config: config.clone(),
            action,
            sources: config
                .source_labels
                .iter()
                .flatten()
                .map(|s| crate::labels::shared_name(s))
                .collect(),
            regex,
            target,
            replacement,
            replacement_literal,
            groups_needed,
            modulus: config.modulus,
            source_hints: config
                .source_labels
                .iter()
                .flatten()
                .map(|_| AtomicUsize::new(0))
                .collect(),
            target_hint: AtomicUsize::new(0),
        })
    }

    /// The configuration this rule was built from.
    pub fn config(&self) -> &RuleConfig {
        &self.config
    }

    /// The rule's action.
    pub fn action(&self) -> Action {
        self.action
    }
}

/// Alloy's `Config.Validate` (Alloy main, i.e. Prometheus 3 semantics with UTF-8 label names).
fn validate(index: usize, c: &RuleConfig) -> Result<(), RuleError> {
    use Action::*;
    let action = c.action;
    if c.modulus == 0 && action == HashMod {
        return Err(RuleError::ZeroModulus { index });
    }
    let needs_target = matches!(
        action,
        Replace | HashMod | Lowercase | Uppercase | KeepEqual | DropEqual
    );
    if needs_target && c.target_label.is_empty() {
        return Err(RuleError::MissingTargetLabel { index, action });
    }
    let invalid_target = || RuleError::InvalidTargetLabel {
        index,
        action,
        target_label: c.target_label.clone(),
    };
    // A `$`-free target must be a valid label name: with UTF-8 names, any non-empty string
    // (already checked). A templated target must fit the legacy-shaped template pattern.
    if action == Replace
        && c.target_label.contains('$')
        && !matches_template_pattern(&c.target_label)
    {
        return Err(invalid_target());
    }
    // lowercase/uppercase/keepequal/dropequal/hashmod targets: valid UTF-8 name, i.e. non-empty
    // (checked above); `${1}` is accepted and used literally as a name.
    if matches!(action, Lowercase | Uppercase | KeepEqual | DropEqual)
        && c.replacement != DEFAULT_REPLACEMENT
    {
        return Err(RuleError::ReplacementNotAllowed { index, action });
    }
    if action == LabelMap && !matches_template_pattern(&c.replacement) {
        return Err(RuleError::InvalidReplacement {
            index,
            action,
            replacement: c.replacement.clone(),
        });
    }
    if matches!(action, LabelDrop | LabelKeep)
        && (c.source_labels.is_some()
            || !c.target_label.is_empty()
            || c.modulus != 0
            || c.separator != DEFAULT_SEPARATOR
            || c.replacement != DEFAULT_REPLACEMENT)
    {
        return Err(RuleError::OnlyRegex { index, action });
    }
    // Alloy compares the regex by value, so an explicit `regex = "(.*)"` is accepted
    // (Prometheus compares pointers and refuses it).
    if matches!(action, KeepEqual | DropEqual)
        && (c.regex != DEFAULT_REGEX
            || c.modulus != 0
            || c.separator != DEFAULT_SEPARATOR
            || c.replacement != DEFAULT_REPLACEMENT)
    {
        return Err(RuleError::OnlySourceAndTarget { index, action });
    }
    Ok(())
}

/// `^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$` (Go syntax: `\w` is ASCII), the pattern a
/// templated `target_label` and a `labelmap` replacement must match.
fn matches_template_pattern(s: &str) -> bool {
    static RE: OnceLock<Option<GoRegex>> = OnceLock::new();
    match RE.get_or_init(|| GoRegex::new(r"(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+").ok()) {
        Some(re) => re.is_match(s),
        // Unreachable (the pattern is fixed and tested); refuse rather than accept blindly.
        None => false,
    }
}

/// Go's `strconv.Quote`, for messages that quote user strings with `%q`.
pub use crate::gocompat::quote as go_quote;

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(f: impl FnOnce(&mut RuleConfig)) -> RuleConfig {
        let mut c = RuleConfig::default();
        f(&mut c);
        c
    }

    fn load(c: &RuleConfig) -> Result<(), String> {
        Rule::new(0, c).map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn validation_messages() {
        // (config, expected error or None for accepted). Messages are Alloy's.
        let cases: Vec<(RuleConfig, Option<&str>)> = vec![
            (rule(|c| c.target_label = "x".into()), None),
            (
                rule(|_| {}),
                Some("relabel configuration for replace action requires 'target_label' value"),
            ),
            (
                rule(|c| c.action = Action::HashMod),
                Some("relabel configuration for hashmod requires non-zero modulus"),
            ),
            (
                rule(|c| {
                    c.action = Action::HashMod;
                    c.modulus = 8;
                }),
                Some("relabel configuration for hashmod action requires 'target_label' value"),
            ),
            (
                rule(|c| {
                    c.action = Action::HashMod;
                    c.modulus = 8;
                    c.target_label = "${1}".into(); // UTF-8 name: accepted literally
                }),
                None,
            ),
            // UTF-8 names: plain targets need only be non-empty.
            (rule(|c| c.target_label = "foo-bar".into()), None),
            (rule(|c| c.target_label = "1abc".into()), None),
            (
                rule(|c| c.target_label = "app.kubernetes.io/name".into()),
                None,
            ),
            // Templated targets: the legacy template pattern.
            (rule(|c| c.target_label = "x_${1}_y".into()), None),
            (rule(|c| c.target_label = "$1abc".into()), None),
            (
                rule(|c| c.target_label = "${1}-x".into()),
                Some(r#""${1}-x" is invalid 'target_label' for replace action"#),
            ),
            (
                rule(|c| c.target_label = "0${3}".into()),
                Some(r#""0${3}" is invalid 'target_label' for replace action"#),
            ),
            (
                rule(|c| c.target_label = "-${3}".into()),
                Some(r#""-${3}" is invalid 'target_label' for replace action"#),
            ),
            (
                rule(|c| c.target_label = "$".into()),
                Some(r#""$" is invalid 'target_label' for replace action"#),
            ),
            // lowercase/uppercase/keepequal/dropequal.
            (
                rule(|c| c.action = Action::Lowercase),
                Some("relabel configuration for lowercase action requires 'target_label' value"),
            ),
            (
                rule(|c| {
                    c.action = Action::Uppercase;
                    c.target_label = "${1}".into();
                }),
                None,
            ),
            (
                rule(|c| {
                    c.action = Action::Lowercase;
                    c.target_label = "x".into();
                    c.replacement = "y".into();
                }),
                Some("'replacement' can not be set for lowercase action"),
            ),
            (
                rule(|c| {
                    c.action = Action::KeepEqual;
                    c.target_label = "x".into();
                    c.replacement = "".into();
                }),
                Some("'replacement' can not be set for keepequal action"),
            ),
            (
                rule(|c| {
                    c.action = Action::KeepEqual;
                    c.target_label = "x".into();
                    c.regex = "(.*)".into(); // explicit default: Alloy accepts
                }),
                None,
            ),
            (
                rule(|c| {
                    c.action = Action::DropEqual;
                    c.target_label = "x".into();
                    c.regex = "a".into();
                }),
                Some(
                    "dropequal action requires only 'source_labels' and 'target_label', and no other fields",
                ),
            ),
            (
                rule(|c| {
                    c.action = Action::KeepEqual;
                    c.target_label = "x".into();
                    c.separator = ",".into();
                }),
                Some(
                    "keepequal action requires only 'source_labels' and 'target_label', and no other fields",
                ),
            ),
            (
                rule(|c| {
                    c.action = Action::DropEqual;
                    c.target_label = "x".into();
                    c.modulus = 3;
                }),
                Some(
                    "dropequal action requires only 'source_labels' and 'target_label', and no other fields",
                ),
            ),
            // labelmap replacement.
            (rule(|c| c.action = Action::LabelMap), None),
            (
                rule(|c| {
                    c.action = Action::LabelMap;
                    c.replacement = "1abc".into();
                }),
                Some(r#""1abc" is invalid 'replacement' for labelmap action"#),
            ),
            (
                rule(|c| {
                    c.action = Action::LabelMap;
                    c.replacement = "a-${1}".into();
                }),
                Some(r#""a-${1}" is invalid 'replacement' for labelmap action"#),
            ),
            (
                rule(|c| {
                    c.action = Action::LabelMap;
                    c.replacement = "".into();
                }),
                Some(r#""" is invalid 'replacement' for labelmap action"#),
            ),
            // labeldrop/labelkeep take only regex.
            (rule(|c| c.action = Action::LabelDrop), None),
            (
                rule(|c| {
                    c.action = Action::LabelDrop;
                    c.source_labels = Some(vec![]);
                }),
                Some("labeldrop action requires only 'regex', and no other fields"),
            ),
            (
                rule(|c| {
                    c.action = Action::LabelKeep;
                    c.target_label = "x".into();
                }),
                Some("labelkeep action requires only 'regex', and no other fields"),
            ),
            (
                rule(|c| {
                    c.action = Action::LabelKeep;
                    c.replacement = "x".into();
                }),
                Some("labelkeep action requires only 'regex', and no other fields"),
            ),
            (
                rule(|c| {
                    c.action = Action::LabelDrop;
                    c.separator = "".into();
                }),
                Some("labeldrop action requires only 'regex', and no other fields"),
            ),
            (
                rule(|c| {
                    c.action = Action::LabelDrop;
                    c.modulus = 1;
                }),
                Some("labeldrop action requires only 'regex', and no other fields"),
            ),
            // Unused fields are otherwise ignored.
            (
                rule(|c| {
                    c.action = Action::Drop;
                    c.target_label = "ignored".into();
                    c.modulus = 5;
                }),
                None,
            ),
            // The regex is checked first, with Go's message on the wrapped pattern.
            (
                rule(|c| {
                    c.action = Action::HashMod;
                    c.regex = "(".into();
                }),
                Some("error parsing regexp: missing closing ): `^(?s:()$`"),
            ),
            // Go's quoting in messages.
            (
                rule(|c| c.target_label = "a\n$1\u{7f}é\u{a0}".into()),
                Some(r#""a\n$1\x7fé\u00a0" is invalid 'target_label' for replace action"#),
            ),
        ];
        for (config, want) in cases {
            assert_eq!(load(&config).err().as_deref(), want, "config {config:?}");
        }
    }

    #[test]
    fn action_names_are_case_sensitive() {
        assert_eq!("keepequal".parse::<Action>(), Ok(Action::KeepEqual));
        let e = "Replace".parse::<Action>().unwrap_err();
        assert_eq!(e.to_string(), r#"unrecognized action type "Replace""#);
        let e = "".parse::<Action>().unwrap_err();
        assert_eq!(e.to_string(), r#"unrecognized action type """#);
        for a in Action::ALL {
            assert_eq!(a.as_str().parse::<Action>(), Ok(a));
        }
    }

    #[test]
    fn serde_uses_alloy_names_and_defaults() {
        let c: RuleConfig = serde_json::from_str(
            r#"{"source_labels":["a"],"target_label":"t","action":"hashmod","modulus":3}"#,
        )
        .unwrap();
        assert_eq!(c.separator, ";");
        assert_eq!(c.regex, "(.*)");
        assert_eq!(c.replacement, "$1");
        assert_eq!(c.action, Action::HashMod);
        let e = serde_json::from_str::<RuleConfig>(r#"{"action":"KEEP"}"#).unwrap_err();
        assert!(
            e.to_string().contains(r#"unrecognized action type "KEEP""#),
            "{e}"
        );
        let d: RuleConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(d, RuleConfig::default());
        assert_eq!(d.source_labels, None);
    }

    #[test]
    fn error_index_is_reported() {
        let e = Rule::new(7, &RuleConfig::default()).unwrap_err();
        assert_eq!(e.index(), 7);
    }

    #[test]
    fn go_quote_matches_strconv() {
        let cases = [
            ("abc", r#""abc""#),
            ("a\"b\\", r#""a\"b\\""#),
            ("\u{0}\u{1b}", r#""\x00\x1b""#),
            ("é☕", r#""é☕""#),
            ("\u{200b}", r#""\u200b""#),
            ("\u{e0001}", r#""\U000e0001""#),
        ];
        for (s, want) in cases {
            assert_eq!(go_quote(s), want);
        }
    }
}
