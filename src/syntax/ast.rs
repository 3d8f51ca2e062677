//! The syntax tree of an Alloy file.
//!
//! Every node keeps the byte span it was parsed from so that evaluation, decoding and graph errors can
//! point at the source. Literals keep their source text (`raw`) because the formatter must print them
//! exactly as written (Alloy's printer never re-quotes a string or re-spells a number).

use std::fmt;

/// A half-open byte range `[start, end)` into the source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A parsed file: its statements plus every comment, kept aside for the formatter.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub body: Body,
    pub comments: Vec<Comment>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    /// Full comment text including the `//` or `/* */` markers.
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Body {
    pub stmts: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Attribute(Attribute),
    Block(Block),
}

impl Stmt {
    pub fn span(&self) -> Span {
        match self {
            Stmt::Attribute(a) => a.span,
            Stmt::Block(b) => b.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `name = value`
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `a.b.c "label" { body }`
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The dot-separated name parts, e.g. `["pyroscope", "scrape"]`.
    pub name: Vec<Ident>,
    pub label: Option<Label>,
    pub body: Body,
    /// From the first name part to the closing brace.
    pub span: Span,
    /// The span of the closing `}`; the formatter uses it to place trailing comments.
    pub rbrace: Span,
}

impl Block {
    /// `pyroscope.scrape`
    pub fn full_name(&self) -> String {
        let mut s = String::new();
        for (i, part) in self.name.iter().enumerate() {
            if i > 0 {
                s.push('.');
            }
            s.push_str(&part.name);
        }
        s
    }

    /// The span of the name and label, which diagnostics about the block as a whole point at.
    pub fn header_span(&self) -> Span {
        let first = self.name.first().map(|i| i.span).unwrap_or(self.span);
        let last = match &self.label {
            Some(l) => l.span,
            None => self.name.last().map(|i| i.span).unwrap_or(self.span),
        };
        first.to(last)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    /// The unquoted label value.
    pub value: String,
    /// Source text including the quotes.
    pub raw: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    /// A bare identifier, the start of every reference (`sys`, `discovery`, `env`, ...).
    Ident(String),
    Array(Vec<Expr>),
    Object(Vec<Field>),
    /// `value.name`
    Access {
        value: Box<Expr>,
        name: Ident,
    },
    /// `value[index]`
    Index {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `func(args...)`
    Call {
        func: Box<Expr>,
        args: Vec<Expr>,
    },
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `( expr )`, kept so the formatter reproduces the parentheses.
    Paren(Box<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Literal {
    pub value: LiteralValue,
    /// The literal exactly as written in the source.
    pub raw: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LiteralValue {
    Null,
    Bool(bool),
    /// A number literal; the evaluator converts the text with Go's rules (int, then uint, then float).
    Number,
    /// A string literal, unescaped (raw strings: verbatim minus carriage returns).
    String(String),
}

/// `key = value` inside an object literal.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The key. A quoted key has its quotes stripped *without* unescaping, as Alloy does.
    pub key: String,
    pub quoted: bool,
    pub key_span: Span,
    pub value: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Not,
    Neg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

impl BinaryOp {
    /// Binding power: higher binds tighter. `^` is right-associative.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq => 3,
            BinaryOp::Add | BinaryOp::Sub => 4,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => 5,
            BinaryOp::Pow => 6,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Pow => "^",
        }
    }
}

impl fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl UnaryOp {
    pub fn as_str(self) -> &'static str {
        match self {
            UnaryOp::Not => "!",
            UnaryOp::Neg => "-",
        }
    }
}

impl Expr {
    /// Visits every reference chain in this expression: the root identifier followed by the
    /// field names accessed on it (`discovery.relabel.otel.output` -> `["discovery", "relabel",
    /// "otel", "output"]`), with the span of the whole chain.
    pub fn for_each_reference(&self, f: &mut dyn FnMut(&[&str], Span)) {
        fn chain<'a>(e: &'a Expr, out: &mut Vec<&'a str>) -> bool {
            match &e.kind {
                ExprKind::Ident(name) => {
                    out.push(name);
                    true
                }
                ExprKind::Access { value, name } if chain(value, out) => {
                    out.push(&name.name);
                    true
                }
                _ => false,
            }
        }
        match &self.kind {
            ExprKind::Ident(_) | ExprKind::Access { .. } => {
                let mut parts = Vec::new();
                if chain(self, &mut parts) {
                    f(&parts, self.span);
                    return;
                }
                // A chain rooted in something other than an identifier (`f(x).y`): the
                // references are inside its root.
                if let ExprKind::Access { value, .. } = &self.kind {
                    value.for_each_reference(f);
                }
            }
            ExprKind::Literal(_) => {}
            ExprKind::Array(items) => items.iter().for_each(|e| e.for_each_reference(f)),
            ExprKind::Object(fields) => fields.iter().for_each(|fl| fl.value.for_each_reference(f)),
            ExprKind::Index { value, index } => {
                value.for_each_reference(f);
                index.for_each_reference(f);
            }
            ExprKind::Call { func, args } => {
                func.for_each_reference(f);
                args.iter().for_each(|e| e.for_each_reference(f));
            }
            ExprKind::Unary { expr, .. } => expr.for_each_reference(f),
            ExprKind::Binary { lhs, rhs, .. } => {
                lhs.for_each_reference(f);
                rhs.for_each_reference(f);
            }
            ExprKind::Paren(e) => e.for_each_reference(f),
        }
    }
}

impl Body {
    /// Visits every reference chain in every attribute of this body and its nested blocks.
    pub fn for_each_reference(&self, f: &mut dyn FnMut(&[&str], Span)) {
        for stmt in &self.stmts {
            match stmt {
                Stmt::Attribute(a) => a.value.for_each_reference(f),
                Stmt::Block(b) => b.body.for_each_reference(f),
            }
        }
    }
}
