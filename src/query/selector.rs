//! Label selectors as Pyroscope and Prometheus write them: `{service_name="otel/collector",
//! namespace=~"otel.*", pod!="x", env!~"dev|test"}`.
//!
//! Semantics are Prometheus': regexes are fully anchored (RE2 syntax, our Go-compatible
//! engine), and a label that is absent matches as the empty string, so `{x=""}` selects series
//! without `x` and `{x!=""}` those with it. `{}` (or an empty string) selects everything.

use std::fmt;
use std::sync::Arc;

use crate::relabel::GoRegex;

/// How a matcher compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchOp {
    Eq,
    NotEq,
    Re,
    NotRe,
}

impl MatchOp {
    fn as_str(self) -> &'static str {
        match self {
            MatchOp::Eq => "=",
            MatchOp::NotEq => "!=",
            MatchOp::Re => "=~",
            MatchOp::NotRe => "!~",
        }
    }
}

/// One `name op "value"`.
#[derive(Clone, Debug)]
pub struct Matcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    regex: Option<Arc<GoRegex>>,
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.op == other.op && self.value == other.value
    }
}

impl Matcher {
    pub fn new(name: &str, op: MatchOp, value: &str) -> Result<Matcher, String> {
        let regex = match op {
            MatchOp::Re | MatchOp::NotRe => Some(Arc::new(
                GoRegex::new(value).map_err(|e| format!("invalid regex {value:?}: {e}"))?,
            )),
            _ => None,
        };
        Ok(Matcher {
            name: name.to_string(),
            op,
            value: value.to_string(),
            regex,
        })
    }

    /// Whether a label value (`""` when absent) satisfies the matcher.
    pub fn matches(&self, value: &str) -> bool {
        match (self.op, &self.regex) {
            (MatchOp::Eq, _) => value == self.value,
            (MatchOp::NotEq, _) => value != self.value,
            (MatchOp::Re, Some(re)) => re.is_match(value),
            (MatchOp::NotRe, Some(re)) => !re.is_match(value),
            (_, None) => false,
        }
    }
}

/// A parsed selector: all matchers must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selector {
    pub matchers: Vec<Matcher>,
}

/// A selector that does not parse, with the byte offset of the problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector at column {}: {message}", .offset + 1)]
pub struct SelectorError {
    pub offset: usize,
    pub message: String,
}

impl Selector {
    /// Parses `{...}`; an empty or blank string is `{}`.
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        Parser { s, pos: 0 }.selector()
    }

    /// Whether a series with these labels is selected.
    pub fn matches<'a>(
        &self,
        labels: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> bool {
        self.matchers.iter().all(|m| {
            let value = labels
                .clone()
                .into_iter()
                .find(|(k, _)| *k == m.name)
                .map_or("", |(_, v)| v);
            m.matches(value)
        })
    }

    /// [`Selector::matches`] for `(String, String)` label lists.
    pub fn matches_pairs(&self, labels: &[(String, String)]) -> bool {
        self.matches(labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

impl fmt::Display for Selector {
    /// The canonical form, as sent to a Pyroscope querier.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, m) in self.matchers.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}{}\"", m.name, m.op.as_str())?;
            write_escaped(f, &m.value)?;
            f.write_str("\"")?;
        }
        f.write_str("}")
    }
}

/// A value between double quotes as our parser and Go's `strconv.Unquote` (Pyroscope's) both
/// read it back: the five escapes they share, every other character as itself (`{:?}` would
/// write `\u{1}`, which neither reads).
fn write_escaped(f: &mut fmt::Formatter<'_>, value: &str) -> fmt::Result {
    for c in value.chars() {
        match c {
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            '\\' => f.write_str("\\\\")?,
            '"' => f.write_str("\\\"")?,
            c => fmt::Write::write_char(f, c)?,
        }
    }
    Ok(())
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, SelectorError> {
        Err(SelectorError {
            offset: self.pos,
            message: message.into(),
        })
    }

    fn rest(&self) -> &str {
        &self.s[self.pos..]
    }

    fn skip_space(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.s.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn selector(mut self) -> Result<Selector, SelectorError> {
        self.skip_space();
        if self.rest().is_empty() {
            return Ok(Selector::default());
        }
        if !self.eat("{") {
            return self.err("expected '{'");
        }
        let mut matchers = Vec::new();
        loop {
            self.skip_space();
            if self.eat("}") {
                break;
            }
            matchers.push(self.matcher()?);
            self.skip_space();
            if self.eat(",") {
                continue;
            }
            if self.eat("}") {
                break;
            }
            return self.err("expected ',' or '}'");
        }
        self.skip_space();
        if !self.rest().is_empty() {
            return self.err("unexpected text after '}'");
        }
        Ok(Selector { matchers })
    }

    fn matcher(&mut self) -> Result<Matcher, SelectorError> {
        let start = self.pos;
        let name_len = self
            .rest()
            .char_indices()
            .find(|&(i, c)| {
                !(c == '_' || c == '.' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
            })
            .map_or(self.rest().len(), |(i, _)| i);
        if name_len == 0 {
            return self.err("expected a label name");
        }
        let name = self.rest()[..name_len].to_string();
        self.pos += name_len;
        self.skip_space();
        let op = if self.eat("=~") {
            MatchOp::Re
        } else if self.eat("!~") {
            MatchOp::NotRe
        } else if self.eat("!=") {
            MatchOp::NotEq
        } else if self.eat("=") {
            MatchOp::Eq
        } else {
            return self.err("expected one of =, !=, =~, !~");
        };
        self.skip_space();
        let value_at = self.pos;
        let value = self.string()?;
        Matcher::new(&name, op, &value).map_err(|message| SelectorError {
            offset: if op == MatchOp::Eq || op == MatchOp::NotEq {
                start
            } else {
                value_at
            },
            message,
        })
    }

    /// A double-quoted (Go escapes), single-quoted or backquoted (raw) string.
    fn string(&mut self) -> Result<String, SelectorError> {
        let Some(quote) = self.rest().chars().next() else {
            return self.err("expected a quoted value");
        };
        if !matches!(quote, '"' | '\'' | '`') {
            return self.err("expected a quoted value");
        }
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.pos += i + 1;
                return Ok(out);
            }
            if c == '\\' && quote != '`' {
                let Some((_, e)) = chars.next() else { break };
                out.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '\\' => '\\',
                    '"' => '"',
                    '\'' => '\'',
                    other => {
                        self.pos += i;
                        return self.err(format!("unknown escape sequence \\{other}"));
                    }
                });
                continue;
            }
            out.push(c);
        }
        self.pos = self.s.len();
        self.err("unterminated string")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_round_trips_every_character() {
        for value in [
            "plain",
            "a\"b",
            "back\\slash",
            "new\nline\ttab\rcr",
            "ctl\u{1}x",
            "é✓",
        ] {
            let sel = Selector {
                matchers: vec![Matcher::new("k", MatchOp::Eq, value).expect("matcher")],
            };
            let text = sel.to_string();
            let back = Selector::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(back.matchers[0].value, value, "{text}");
        }
    }

    fn labels(pairs: &[(&'static str, &'static str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator() {
        let s = Selector::parse(
            r#"{service_name="otel/pprof-collector", namespace=~"otel.*", pod!="x", env!~'dev|test',}"#,
        )
        .expect("parses");
        let got: Vec<(&str, MatchOp, &str)> = s
            .matchers
            .iter()
            .map(|m| (m.name.as_str(), m.op, m.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("service_name", MatchOp::Eq, "otel/pprof-collector"),
                ("namespace", MatchOp::Re, "otel.*"),
                ("pod", MatchOp::NotEq, "x"),
                ("env", MatchOp::NotRe, "dev|test"),
            ]
        );
        assert_eq!(
            s.to_string(),
            r#"{service_name="otel/pprof-collector", namespace=~"otel.*", pod!="x", env!~"dev|test"}"#
        );
        assert_eq!(Selector::parse(&s.to_string()).expect("round trip"), s);
    }

    #[test]
    fn matching_follows_prometheus() {
        let series = labels(&[("service_name", "otel/a"), ("namespace", "otel-prod")]);
        let cases = [
            ("{}", true),
            ("", true),
            (r#"{service_name="otel/a"}"#, true),
            (r#"{service_name="otel"}"#, false),
            (r#"{namespace=~"otel.*"}"#, true),
            // Anchored: a partial match is no match.
            (r#"{namespace=~"otel"}"#, false),
            (r#"{namespace!~"otel-.*"}"#, false),
            (r#"{namespace!="x"}"#, true),
            // Absent labels are the empty string.
            (r#"{pod=""}"#, true),
            (r#"{pod!=""}"#, false),
            (r#"{pod=~".*"}"#, true),
            (r#"{pod=~".+"}"#, false),
            (r#"{service_name="otel/a", namespace=~"dev.*"}"#, false),
        ];
        for (sel, want) in cases {
            let s = Selector::parse(sel).expect(sel);
            assert_eq!(s.matches_pairs(&series), want, "{sel}");
        }
    }

    #[test]
    fn errors_say_where() {
        let cases = [
            ("service_name=\"a\"", 0, "expected '{'"),
            ("{service_name}", 13, "expected one of =, !=, =~, !~"),
            ("{a=b}", 3, "expected a quoted value"),
            ("{a=\"b\" c=\"d\"}", 7, "expected ',' or '}'"),
            ("{a=\"b", 5, "unterminated string"),
            ("{=\"b\"}", 1, "expected a label name"),
            ("{a=~\"(\"}", 4, "invalid regex"),
            ("{a=\"b\"} x", 8, "unexpected text after '}'"),
        ];
        for (sel, offset, msg) in cases {
            let e = Selector::parse(sel).expect_err(sel);
            assert_eq!(e.offset, offset, "{sel}: {e}");
            assert!(e.message.starts_with(msg), "{sel}: {e}");
        }
    }

    #[test]
    fn reads_the_escapes_the_explorer_writes() {
        // The same written forms as ui/src/selector.test.js: the explorer's quote() must give
        // back these values when the server reads them.
        let cases = [
            (r#"{v="line\nbreak"}"#, "line\nbreak"),
            (r#"{v="tab\there"}"#, "tab\there"),
            (r#"{v="back\\slash"}"#, "back\\slash"),
            (r#"{v="cr\rx"}"#, "cr\rx"),
            (r#"{v="q\"uote"}"#, "q\"uote"),
            (r#"{v="it's"}"#, "it's"),
            (r#"{v="\\n literally"}"#, "\\n literally"),
            (r#"{v='x\'y'}"#, "x'y"),
            (r#"{v=`raw\n`}"#, "raw\\n"),
        ];
        for (written, want) in cases {
            let sel = Selector::parse(written).expect(written);
            assert_eq!(sel.matchers[0].value, want, "{written}");
        }
        assert!(Selector::parse(r#"{v="\q"}"#).is_err());
    }
}
