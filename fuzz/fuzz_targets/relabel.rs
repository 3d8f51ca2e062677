//! Relabel fuzz target: a rule list and a target derived from the input bytes (src/relabel).
//!
//! Input layout (every read past the end gives 0 / an empty string, so any input is valid):
//!
//! ```text
//! u8 rule count (% 8), u8 label count (% 16)
//! per rule:  u8 action (index into Action::ALL, % 11), u8 flags, then the flagged fields:
//!            0x01 source_labels: u8 count (% 6), that many STR
//!            0x02 separator STR   0x04 regex STR   0x08 modulus u64 LE
//!            0x10 target_label STR   0x20 replacement STR
//!            (an unflagged field keeps Alloy's default, as an absent attribute does)
//! per label: name STR, value STR
//! STR:       u8 length, then that many bytes (lossy UTF-8)
//! ```
//!
//! Checks that nothing panics, that a rule list loads exactly when every rule loads on its own
//! (the error names the first bad rule), that the config path (`scraper check` on the same
//! rules as `discovery.relabel` rule blocks) rejects exactly those rules with the same
//! messages; and, for a loaded list, that `process`, `process_shared` and `process_traced`
//! agree, the result is a well-formed label set, traces chain, and processing is
//! deterministic.
#![no_main]

use std::fmt::Write as _;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use scraper::gocompat::quote as go_quote;
use scraper::relabel::{
    Action, DEFAULT_REGEX, DEFAULT_REPLACEMENT, DEFAULT_SEPARATOR, LabelSet, Relabeler, Rule,
    RuleConfig,
};
use scraper::runtime::Registry;

static REGISTRY: LazyLock<Registry> = LazyLock::new(scraper::components::builtin);

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let mut buf = [0u8; 8];
        for b in &mut buf {
            *b = self.u8();
        }
        u64::from_le_bytes(buf)
    }

    fn string(&mut self) -> String {
        let n = usize::from(self.u8()).min(self.0.len());
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(s).into_owned()
    }
}

fn parse(data: &[u8]) -> (Vec<RuleConfig>, Vec<(String, String)>) {
    let mut r = Reader(data);
    let n_rules = r.u8() % 8;
    let n_labels = r.u8() % 16;
    let mut rules = Vec::new();
    for _ in 0..n_rules {
        let mut c = RuleConfig {
            action: Action::ALL[usize::from(r.u8()) % Action::ALL.len()],
            ..RuleConfig::default()
        };
        let flags = r.u8();
        if flags & 0x01 != 0 {
            let n = r.u8() % 6;
            c.source_labels = Some((0..n).map(|_| r.string()).collect());
        }
        if flags & 0x02 != 0 {
            c.separator = r.string();
        }
        if flags & 0x04 != 0 {
            c.regex = r.string();
        }
        if flags & 0x08 != 0 {
            c.modulus = r.u64();
        }
        if flags & 0x10 != 0 {
            c.target_label = r.string();
        }
        if flags & 0x20 != 0 {
            c.replacement = r.string();
        }
        rules.push(c);
    }
    let labels = (0..n_labels).map(|_| (r.string(), r.string())).collect();
    (rules, labels)
}

/// The rules as `discovery.relabel` rule blocks, attributes only where they differ from the
/// defaults (as the fuzz input leaves them out).
fn alloy_config(rules: &[RuleConfig]) -> String {
    let mut s = String::from("discovery.relabel \"fuzz\" {\n\ttargets = []\n");
    for c in rules {
        s.push_str("\trule {\n");
        if let Some(sources) = &c.source_labels {
            let list: Vec<String> = sources.iter().map(|l| go_quote(l)).collect();
            let _ = writeln!(s, "\t\tsource_labels = [{}]", list.join(", "));
        }
        for (name, value, default) in [
            ("separator", &c.separator, DEFAULT_SEPARATOR),
            ("regex", &c.regex, DEFAULT_REGEX),
            ("target_label", &c.target_label, ""),
            ("replacement", &c.replacement, DEFAULT_REPLACEMENT),
        ] {
            if value != default {
                let _ = writeln!(s, "\t\t{name} = {}", go_quote(value));
            }
        }
        if c.modulus != 0 {
            let _ = writeln!(s, "\t\tmodulus = {}", c.modulus);
        }
        let _ = writeln!(s, "\t\taction = {}", go_quote(c.action.as_str()));
        s.push_str("\t}\n");
    }
    s.push_str("}\n");
    s
}

fn well_formed(labels: &LabelSet) {
    let names: Vec<&str> = labels.names().collect();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "names not sorted and unique: {labels:?}"
    );
    assert!(
        labels.iter().all(|(_, v)| !v.is_empty()),
        "empty value: {labels:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let (rules, pairs) = parse(data);

    // Loading: the list fails exactly at its first bad rule. (Every rule is compiled alone
    // only when the list fails: a list that loads compiled each of its rules already.)
    let relabeler = Relabeler::new(&rules);
    let errors: Vec<String> = match &relabeler {
        Ok(_) => Vec::new(),
        Err(e) => {
            let singles: Vec<Result<Rule, _>> = rules
                .iter()
                .enumerate()
                .map(|(i, c)| Rule::new(i, c))
                .collect();
            let first_bad = singles.iter().position(Result::is_err);
            assert_eq!(first_bad, Some(e.index()), "{e}");
            assert_eq!(Some(e), singles[e.index()].as_ref().err());
            assert!(!e.to_string().is_empty());
            singles
                .iter()
                .filter_map(|r| r.as_ref().err().map(ToString::to_string))
                .collect()
        }
    };

    // The config path: each rule block validated while decoding, one error per bad block.
    let config = alloy_config(&rules);
    let diags = scraper::runtime::check(&REGISTRY, "fuzz.alloy", &config);
    let got: Vec<&str> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(got, errors, "config path disagrees\n{config}");

    let Ok(relabeler) = relabeler else {
        return;
    };
    for rule in relabeler.rules() {
        let _ = format!("{:?} {}", rule.config(), rule.action());
    }
    let input: LabelSet = pairs.into_iter().collect();
    well_formed(&input);

    let mut plain = input.clone();
    let kept = relabeler.process(&mut plain);
    let shared = relabeler.process_shared(&input);
    let mut traced = input.clone();
    let (kept_traced, steps) = relabeler.process_traced(&mut traced);
    assert_eq!(kept, kept_traced, "tracing changed the outcome");
    assert_eq!(kept, shared.is_some(), "process_shared changed the outcome");
    if kept {
        well_formed(&plain);
        assert_eq!(plain, traced);
        assert_eq!(Some(&plain), shared.as_ref());
        if let Some(last) = steps.last() {
            assert_eq!(
                last.after.as_ref(),
                Some(&plain),
                "the last step is the result"
            );
        }
        let _ = plain.to_string();
    } else {
        assert!(
            steps.last().is_some_and(|s| s.after.is_none()),
            "a drop must be the last traced step"
        );
    }
    for w in steps.windows(2) {
        assert!(w[1].rule_index > w[0].rule_index);
        let after = w[0].after.as_ref().expect("only the last step drops");
        assert_eq!(after, &w[1].before, "steps do not chain");
    }
    if let Some(first) = steps.first() {
        assert_eq!(
            first.before, input,
            "rules before the first step changed the target"
        );
    }

    // Deterministic, with the rules' position hints now warm.
    let mut again = input.clone();
    assert_eq!(relabeler.process(&mut again), kept);
    if kept {
        assert_eq!(again, plain);
    }
});
