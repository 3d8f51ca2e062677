//! Problems a component's own validation finds in arguments that decoded fine (an endpoint URL
//! that cannot be parsed, two settings that exclude each other), named by where they are in the
//! block, so that they are reported at the attribute or block the user wrote, like decode
//! errors, instead of as a bare message when the component is built.

use std::collections::BTreeSet;

use crate::syntax::ast::{Expr, ExprKind, LiteralValue, Span};
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::{EvaluatedBody, PathSeg, locate};

/// One step from a block's body towards the statement at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgStep {
    /// The `index`-th block named `name` (`endpoint`, `basic_auth`, `profile.memory`).
    Block {
        name: String,
        index: usize,
    },
    Attr(String),
    /// A key or element inside the attribute's value.
    Value(PathSeg),
}

/// An argument the component refuses, and where it is: built outside in, e.g.
/// `Invalid::new("...").block("endpoint", 1).attr("url")`. An empty path means the block as a
/// whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub at: Vec<ArgStep>,
    pub message: String,
}

impl Invalid {
    pub fn new(message: impl Into<String>) -> Self {
        Invalid {
            at: Vec::new(),
            message: message.into(),
        }
    }

    pub fn block(mut self, name: &str, index: usize) -> Self {
        self.at.push(ArgStep::Block {
            name: name.to_string(),
            index,
        });
        self
    }

    pub fn attr(mut self, name: &str) -> Self {
        self.at.push(ArgStep::Attr(name.to_string()));
        self
    }

    /// A key of an object-valued attribute (`headers["X-Scope-OrgID"]`).
    pub fn key(mut self, key: &str) -> Self {
        self.at
            .push(ArgStep::Value(PathSeg::Field(key.to_string())));
        self
    }

    /// The whole statement of the attribute this is about, if the path names one that is in
    /// `body`; `None` for a problem with a block as a whole or with an attribute left to its
    /// default.
    pub fn attribute_statement(&self, body: &EvaluatedBody) -> Option<Span> {
        let mut cur = body;
        for step in &self.at {
            match step {
                ArgStep::Block { name, index } => cur = &cur.blocks_named(name).nth(*index)?.body,
                ArgStep::Attr(name) => return cur.attribute(name).map(|a| a.span),
                ArgStep::Value(_) => return None,
            }
        }
        None
    }

    /// Places each of `invalid` in `body` (see [`Invalid::locate`]).
    pub fn locate_all(
        invalid: &[Invalid],
        body: &EvaluatedBody,
        block_span: Span,
    ) -> Vec<Diagnostic> {
        invalid.iter().map(|i| i.locate(body, block_span)).collect()
    }

    /// The diagnostic for this problem in `body`, the evaluated body of the block whose header
    /// is `block_span`: at the innermost statement of the path that exists (an attribute left
    /// to its default points at its block). When the attribute's value comes from an
    /// environment variable that is unset or empty, a hint says so: the most common reason for
    /// an empty URL or credential.
    pub fn locate(&self, body: &EvaluatedBody, block_span: Span) -> Diagnostic {
        let mut span = block_span;
        let mut cur = body;
        let mut expr: Option<&Expr> = None;
        let mut value_path: Vec<PathSeg> = Vec::new();
        for step in &self.at {
            match step {
                ArgStep::Block { name, index } => {
                    let Some(b) = cur.blocks_named(name).nth(*index) else {
                        break;
                    };
                    span = b.header_span;
                    cur = &b.body;
                }
                ArgStep::Attr(name) => {
                    let Some(a) = cur.attribute(name) else {
                        break;
                    };
                    span = a.value_span;
                    expr = a.expr.as_deref();
                }
                ArgStep::Value(seg) => value_path.push(seg.clone()),
            }
        }
        // The innermost expression that produced the value at fault.
        let node = expr.map(|e| locate(e, &value_path).0);
        if let Some(n) = node {
            span = n.span;
        }
        let d = Diagnostic::error(span, self.message.clone());
        let unset = node.map(unset_env_vars).unwrap_or_default();
        if unset.is_empty() {
            return d;
        }
        let names: Vec<String> = unset.iter().map(|n| format!("{n:?}")).collect();
        let (noun, verb) = if names.len() == 1 {
            ("environment variable", "is")
        } else {
            ("environment variables", "are")
        };
        d.with_help(format!(
            "{noun} {} {verb} not set or empty",
            names.join(", ")
        ))
    }
}

/// Names of the environment variables read by `env("X")` / `sys.env("X")` calls in `expr`
/// (with a literal name) that are unset or empty in this process.
fn unset_env_vars(expr: &Expr) -> BTreeSet<String> {
    fn walk(e: &Expr, out: &mut BTreeSet<String>) {
        match &e.kind {
            ExprKind::Call { func, args } => {
                let is_env = match &func.kind {
                    ExprKind::Ident(n) => n == "env",
                    ExprKind::Access { value, name } => {
                        name.name == "env"
                            && matches!(&value.kind, ExprKind::Ident(n) if n == "sys")
                    }
                    _ => false,
                };
                if is_env
                    && let [arg] = args.as_slice()
                    && let ExprKind::Literal(lit) = &arg.kind
                    && let LiteralValue::String(name) = &lit.value
                    // Names that cannot be set (std panics on some) evaluate to "" too.
                    && (name.is_empty()
                        || name.contains(['=', '\0'])
                        || std::env::var_os(name).is_none_or(|v| v.is_empty()))
                {
                    out.insert(name.clone());
                }
                walk(func, out);
                args.iter().for_each(|a| walk(a, out));
            }
            ExprKind::Literal(_) | ExprKind::Ident(_) => {}
            ExprKind::Array(items) => items.iter().for_each(|a| walk(a, out)),
            ExprKind::Object(fields) => fields.iter().for_each(|f| walk(&f.value, out)),
            ExprKind::Access { value, .. } => walk(value, out),
            ExprKind::Index { value, index } => {
                walk(value, out);
                walk(index, out);
            }
            ExprKind::Unary { expr, .. } | ExprKind::Paren(expr) => walk(expr, out),
            ExprKind::Binary { lhs, rhs, .. } => {
                walk(lhs, out);
                walk(rhs, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(expr, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::diag::Source;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    #[test]
    fn placed_at_the_statement_named() {
        let src = r#"endpoint {
  url     = "a"
  headers = { "X-A" = "1", "X-B" = sys.env("SCRAPER_TEST_SURELY_UNSET") }
}
endpoint {
  url = sys.env("SCRAPER_TEST_SURELY_UNSET") + sys.env("PATH")
}
"#;
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("eval");
        let source = Source::new("t", src);
        let block = Span::new(0, 8);
        let cases: &[(Invalid, &str, Option<&str>)] = &[
            (Invalid::new("m"), "t:1:1: m", None),
            (
                Invalid::new("m").block("endpoint", 0).attr("url"),
                "t:2:13: m",
                None,
            ),
            (
                Invalid::new("m")
                    .block("endpoint", 0)
                    .attr("headers")
                    .key("X-A"),
                "t:3:23: m",
                None,
            ),
            (
                Invalid::new("m")
                    .block("endpoint", 0)
                    .attr("headers")
                    .key("X-B"),
                "t:3:36: m",
                Some("environment variable \"SCRAPER_TEST_SURELY_UNSET\" is not set or empty"),
            ),
            // A value left to its default: the block that would hold it.
            (
                Invalid::new("m").block("endpoint", 1).attr("headers"),
                "t:5:1: m",
                None,
            ),
            // A block that is not there: the innermost one that is.
            (
                Invalid::new("m").block("endpoint", 2).attr("url"),
                "t:1:1: m",
                None,
            ),
            (
                Invalid::new("m").block("endpoint", 1).attr("url"),
                "t:6:9: m",
                Some("environment variable \"SCRAPER_TEST_SURELY_UNSET\" is not set or empty"),
            ),
        ];
        for (invalid, want, help) in cases {
            let d = invalid.locate(&body, block);
            let got = source.short(&Diagnostic {
                help: None,
                ..d.clone()
            });
            assert_eq!(got, *want, "{invalid:?}");
            assert_eq!(d.help.as_deref(), *help, "{invalid:?}");
        }
        assert_eq!(
            Invalid::new("m")
                .block("endpoint", 0)
                .attr("url")
                .attribute_statement(&body),
            Some(Span::new(13, 26))
        );
        assert_eq!(Invalid::new("m").attribute_statement(&body), None);
    }
}
