//! The relabel engine: Prometheus/Alloy relabelling (`discovery.relabel` rules), exactly.
//!
//! A difference from Alloy here silently loses users' data (a target dropped, a label that
//! never appears), so behaviour is pinned to Alloy main / Prometheus 3 and checked against a
//! real Prometheus (`tests/relabel_oracle.rs`, recorded in `tests/data/relabel/`).
//!
//! # API
//!
//! * [`RuleConfig`]: one `rule` block, serde-decodable with Alloy's attribute names and
//!   defaults (`separator = ";"`, `regex = "(.*)"`, `replacement = "$1"`, `action = "replace"`).
//! * [`Relabeler::new`] validates and compiles a rule list (regexes compiled once, templates
//!   pre-resolved); a [`RuleError`] carries Alloy's message and the rule index.
//! * [`Relabeler::process`] applies the rules to a [`LabelSet`] in place and says whether the
//!   target is kept; [`Relabeler::process_traced`] also returns a [`TraceStep`] for every rule
//!   that changed or dropped the target.
//!
//! # Semantics (see `shared/spec/relabel-and-kubernetes.md` §1-§7)
//!
//! * Empty value == absent label. Missing source labels join as `""`.
//! * Regexes are anchored by string concatenation, `^(?s:` + regex + `)$`.
//! * `replace`: no match → no-op; the target name is expanded and must be non-empty (UTF-8
//!   label names: any non-empty string is valid); an empty value deletes the *expanded* target.
//! * `keep`/`drop`/`keepequal`/`dropequal` drop and stop processing.
//! * `hashmod`: big-endian u64 of the last 8 bytes of MD5, mod `modulus`.
//! * `labelmap` works on a snapshot in sorted name order (last sorted source wins a name
//!   collision); `labeldrop`/`labelkeep` match label *names*.
//! * `lowercase`/`uppercase` use Go's one-rune-to-one-rune simple case mapping.
//!
//! # Performance design
//!
//! Measured in `benches/relabel.rs` / `bench/relabel.sh` (see docs/PERFORMANCE.md).
//! * [`LabelSet`]: a copy-on-write sorted `Vec` of pairs whose names are `&'static str` from
//!   the process-wide table and whose values are inline up to 22 bytes (`Arc<str>` beyond), so
//!   copying a target at its first change touches no reference count for most pairs; a rule's
//!   fixed target name is shared, a `replace` that copies a whole label value shares the value
//!   instead of copying it, and each rule keeps position hints for its source and target labels
//!   (targets of one update share their shape; a hint can also be where an absent label would
//!   go) before falling back to binary search.
//! * Regexes are compiled once per rule. Common shapes skip the automaton: a literal
//!   (`keep` on `opentelemetry-collector`) is a string comparison, `(.*)` matches everything
//!   with group 1 = the value, and `(C1+)LITERAL(C2+)` (`(.+):(\d+)`, `(.*)@(.*)`) is a
//!   literal search (see `regex::Split` for why that is exact). Other patterns run on
//!   regex-automata's meta engine, with a second automaton specialised for ASCII inputs.
//! * Per-thread scratch buffers: joins, submatch slots and expansions allocate nothing per
//!   rule.
//!
//! # Go RE2 syntax versus the Rust `regex` crate
//!
//! Relabel regexes are Go `regexp` syntax. We run them on `regex-automata` (same RE2 family:
//! linear time, leftmost-first submatches), but never through the Rust *parser*: our own
//! Go-syntax parser ([`regex`](self::regex)) builds the engine's HIR with Go's meaning. Every
//! difference that can matter, and what we do about it (each has a test in `regex/tests.rs`, and the
//! oracle test checks them against Prometheus):
//!
//! | construct | Go | Rust `regex` syntax | here |
//! | --- | --- | --- | --- |
//! | `\d \w \s \b` (and `\D \W \S \B`) | ASCII (`\s` has no `\v`) | Unicode | translated to ASCII classes / ASCII word boundary |
//! | `[[:alpha:]]` etc. | ASCII | ASCII | explicit ranges |
//! | `(?i)` | simple case folding, fold then negate | same rules | folding done by us, so no flag semantics are delegated |
//! | `(?s)` default | off, but the wrapper turns it on | off | wrapper parsed like Go: `.` matches `\n` unless `(?-s)` |
//! | `$` | end of text only | end of text | `Look::End` (multi-line `$` = before `\n` or end) |
//! | `(?P<n>…)`, `(?<n>…)` | both (Go ≥ 1.22) | both | both |
//! | group names | `[A-Za-z0-9_]+`, may start with a digit, duplicates allowed | no leading digit, no duplicates | names kept in our table; expansion uses the first participating group of a name |
//! | `$1x` in templates | group named `1x` | same, but `$01` is group 1 and names are ASCII-only | own expander ([`template`](self::template)) |
//! | `\z`, `\A` | end / start of text | same | same |
//! | `\Z`, `\C`, `\G`, `\K`, `\R`, `\X`, `\e`, `\N`… | error | some accepted | rejected with Go's message |
//! | lookaround `(?=` `(?!` `(?<=` `(?<!` | error | error | rejected with Go's message |
//! | backreferences `\1`…`\7` alone | error | error | rejected with Go's message |
//! | octal `\101`, `\0`, `\12` | literal | error | accepted, literal |
//! | `\Q…\E` | literal text (to the end if no `\E`) | error | accepted, literal |
//! | possessive / stacked `a*+`, `a**`, `a{2}{3}` | error (nested repetition) | some accepted | rejected with Go's message |
//! | `a{1001}`, nested counts multiplying past 1000 | error (invalid repeat count) | accepted | rejected with Go's message |
//! | `a{`, `a{,5}`, `a{x}`, `a{01}` | literal `{` | `{,5}` is a repeat, others errors | literal |
//! | `[a-z&&[^c]]`, `[a-z--c]`, `[a~~b]` | no set operations: `&`, `~`, `[` are members, `--c` a range | set operations | Go's reading |
//! | `[[a]]` | class `{[,a}` then literal `]` | nested class | Go's reading |
//! | `[]a]`, `[a-]`, `[a-c-e]` | `]` first and `-` anywhere are members | differs | Go's reading |
//! | `(?x)`, `(?-)`, `(?i-)` | error | `(?x)` accepted | rejected with Go's message; `(?)` accepted like Go |
//! | `\pL`, `\p{Greek}`, `\p{^Greek}`, `\PL`, `\p{Any}` | Go's category and script names, exact case | many more names, loose matching | Go's names only, from regex-syntax's tables |
//! | `\pC` | Cc, Cf, Co, Cs (no unassigned) | includes Cn (unassigned) | Go's set |
//! | `\p{Letter}`, `\p{greek}`, `\p{Cn}`, `\p{LC}`, `\p{ASCII}` | Go ≥ 1.25 only | accepted | **rejected** ("unsupported by scraper"): Go versions disagree |
//! | `\x{D800}` (surrogate) | accepted, never matches | error | accepted, never matches |
//! | `x*` after `(?i)` (`a(?i)*`), `^*` | repeats the previous item | differs | Go's reading |
//! | deep nesting | error past 1000 levels | error past 250 | Go's limit (1000) |
//! | very large expressions | Go's instruction budget | NFA size limit | rejected if the Rust NFA exceeds 64 MiB ("expression too large"); Go may accept such a pattern (e.g. `\pL{1000}` is fine in both) |
//!
//! Unicode *tables* differ slightly (Go 1.26 has Unicode 15.0; the Rust crates are newer), which
//! only matters for characters assigned after 15.0.
//!
//! # Alloy versus Prometheus 2.x (what the oracle must account for)
//!
//! The oracle is Debian's Prometheus 2.42. It differs from Alloy in: `.` not matching `\n`
//! (`^(?:…)$` wrapper), legacy label-name validity (an expanded `replace` target such as
//! `foo-bar` is skipped), deleting the literal `target_label` text on an empty replacement,
//! rejecting `(?<name>…)` (Go 1.19), and stricter config validation. The oracle test keeps such
//! cases and records the documented divergence instead of comparing them.

mod apply;
pub mod block;
mod case;
pub mod md5;
pub mod regex;
mod rule;
pub mod template;

pub use crate::labels::{LabelName, LabelSet, LabelValue};
pub use apply::{Relabeler, TraceStep};
pub use case::{to_lower, to_upper};
pub use regex::{GoRegex, RegexError};
pub use rule::{
    Action, DEFAULT_REGEX, DEFAULT_REPLACEMENT, DEFAULT_SEPARATOR, Rule, RuleConfig, RuleError,
    UnknownAction,
};
