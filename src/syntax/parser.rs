//! Recursive-descent parser for Alloy files and expressions.
//!
//! Error recovery mirrors Alloy's parser so that `scraper check` reports the same set of
//! diagnostics, at the same positions, as `alloy fmt`/`alloy run` would: a bad statement is skipped
//! up to the next terminator outside brackets, and at most one parser error is reported per line
//! (scanner errors are always reported).

use super::ast::*;
use super::diag::{Diagnostic, Source};
use super::lexer::{Lexer, Token, TokenKind, is_valid_identifier, unquote};

/// How deeply blocks, brackets and operators may nest. Parsing, evaluation, formatting and
/// dropping the tree all recurse once per level; Go's growable stacks let Alloy go deeper, but
/// ours are fixed (2 MiB on tokio workers), and a 13 KB file of nested `[` used to abort the
/// process. Real configs nest about ten levels.
pub const MAX_DEPTH: usize = 256;

/// Parses a whole file. The returned file is complete even when there are errors (bad statements
/// are skipped), so callers can still format or inspect what did parse.
pub fn parse_file(src: &str) -> (File, Vec<Diagnostic>) {
    parse_file_bytes(src.as_bytes())
}

/// Like [`parse_file`] for bytes that may not be valid UTF-8 (reported as errors, like Alloy).
pub fn parse_file_bytes(src: &[u8]) -> (File, Vec<Diagnostic>) {
    parse_file_at(src, 0)
}

/// Parses `src[start..]` as a file, with spans that are offsets into `src`.
fn parse_file_at(src: &[u8], start: usize) -> (File, Vec<Diagnostic>) {
    let mut p = Parser::new_at(src, start);
    let body = p.parse_body(TokenKind::Eof);
    let file = File {
        body,
        comments: std::mem::take(&mut p.comments),
    };
    (file, p.finish())
}

/// Parses every file of a config (see [`Source`]) on its own, as Alloy does, and joins their
/// statements in file order into one file: a directory is one config. Spans are offsets into
/// `source.text`, so diagnostics name the right file.
pub fn parse_source(source: &Source) -> (File, Vec<Diagnostic>) {
    let bytes = source.text.as_bytes();
    let mut out = File {
        body: Body { stmts: Vec::new() },
        comments: Vec::new(),
    };
    let mut diags = Vec::new();
    for (_, range) in source.files() {
        let (file, d) = parse_file_at(&bytes[..range.end], range.start);
        out.body.stmts.extend(file.body.stmts);
        out.comments.extend(file.comments);
        diags.extend(d);
    }
    (out, diags)
}

/// Parses file number `index` of `source` on its own (an imported module appended to a
/// config's files), with spans that are offsets into `source.text`.
pub fn parse_source_file(source: &Source, index: usize) -> (File, Vec<Diagnostic>) {
    let empty = File {
        body: Body { stmts: Vec::new() },
        comments: Vec::new(),
    };
    match source.files().nth(index) {
        Some((_, range)) => parse_file_at(&source.text.as_bytes()[..range.end], range.start),
        None => (empty, Vec::new()),
    }
}

/// Parses a single expression, the way Alloy's `parser.ParseExpression` does (used by tests and
/// by tools that take an expression on the command line).
pub fn parse_expression(src: &str) -> Result<Expr, Vec<Diagnostic>> {
    let mut p = Parser::new(src.as_bytes());
    let expr = p.parse_expr();
    p.expect(TokenKind::Terminator);
    let diags = p.finish();
    if diags.is_empty() {
        Ok(expr)
    } else {
        Err(diags)
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Token<'a>,
    diags: Vec<Diagnostic>,
    comments: Vec<Comment>,
    line_starts: Vec<usize>,
    last_error_line: usize,
    /// Nesting depth of the tree being built: one per block, bracket, unary or `^` operand,
    /// and per link of a left-leaning chain (`a + b + c`, `a.b.c`), since those nest too.
    depth: usize,
    /// Set when [`MAX_DEPTH`] was exceeded: how many diagnostics to keep. The rest of the
    /// input was skipped, so errors reported while unwinding are noise.
    gave_up_at: Option<usize>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a [u8]) -> Self {
        Self::new_at(src, 0)
    }

    fn new_at(src: &'a [u8], start: usize) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            src.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        let mut lexer = Lexer::from_bytes_at(src, start);
        let placeholder = Token {
            kind: TokenKind::Eof,
            span: Span::default(),
            text: "".into(),
        };
        let diags = lexer.take_diagnostics();
        let mut p = Parser {
            lexer,
            tok: placeholder,
            diags,
            comments: Vec::new(),
            line_starts,
            last_error_line: 0,
            depth: 0,
            gave_up_at: None,
        };
        p.next();
        p
    }

    fn finish(mut self) -> Vec<Diagnostic> {
        if let Some(keep) = self.gave_up_at {
            self.diags.truncate(keep);
        }
        self.diags
    }

    /// Enters one more level of nesting. Past [`MAX_DEPTH`] it reports that once, skips the
    /// rest of the input and returns false, so every caller unwinds without recursing.
    fn descend(&mut self) -> bool {
        self.depth += 1;
        if self.depth <= MAX_DEPTH && self.gave_up_at.is_none() {
            return true;
        }
        if self.gave_up_at.is_none() {
            let start = self.tok.span.start;
            let span = Span {
                start,
                end: self.tok.span.end.max(start + 1),
            };
            self.diags.push(Diagnostic::error(
                span,
                format!("nesting too deep: more than {MAX_DEPTH} levels of blocks, brackets or operators"),
            ));
            self.gave_up_at = Some(self.diags.len());
        }
        while self.tok.kind != TokenKind::Eof {
            self.next();
        }
        false
    }

    /// A placeholder for a value that was not parsed because nesting went too deep.
    fn abandoned(&self) -> Expr {
        Expr {
            kind: ExprKind::Literal(Literal {
                value: LiteralValue::Null,
                raw: "null".into(),
            }),
            span: self.tok.span,
        }
    }

    fn line_of(&self, offset: u32) -> usize {
        match self.line_starts.binary_search(&(offset as usize)) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    /// Advances to the next non-comment token, collecting comments for the formatter.
    fn next(&mut self) {
        loop {
            let tok = self.lexer.next_token();
            self.diags.extend(self.lexer.take_diagnostics());
            if tok.kind == TokenKind::Comment {
                self.comments.push(Comment {
                    text: tok.text.into_owned(),
                    span: tok.span,
                });
                continue;
            }
            self.tok = tok;
            return;
        }
    }

    /// Reports a parser error at the current token, at most one per line (as Alloy does, so one
    /// mistake does not produce a cascade of follow-on errors).
    fn error_here(&mut self, msg: String) {
        let line = self.line_of(self.tok.span.start);
        if line == self.last_error_line {
            return;
        }
        self.last_error_line = line;
        let span = if self.tok.span.start == self.tok.span.end {
            Span {
                start: self.tok.span.start,
                end: self.tok.span.start + 1,
            }
        } else {
            self.tok.span
        };
        self.diags.push(Diagnostic::error(span, msg));
    }

    /// Consumes the current token, reporting an error if it is not `kind`. Like Alloy, it
    /// advances either way so parsing can continue.
    fn expect(&mut self, kind: TokenKind) -> Token<'a> {
        let tok = self.tok.clone();
        if tok.kind != kind {
            self.error_here(format!("expected {}, got {}", kind, tok.kind));
        }
        self.next();
        tok
    }

    fn advance_to(&mut self, kind: TokenKind) {
        while self.tok.kind != TokenKind::Eof && self.tok.kind != kind {
            self.next();
        }
    }

    fn parse_body(&mut self, until: TokenKind) -> Body {
        let base = self.depth;
        let body = self.parse_body_inner(until);
        self.depth = base;
        body
    }

    fn parse_body_inner(&mut self, until: TokenKind) -> Body {
        let mut body = Body::default();
        if !self.descend() {
            return body;
        }
        while self.tok.kind != until && self.tok.kind != TokenKind::Eof {
            if let Some(stmt) = self.parse_statement() {
                body.stmts.push(stmt);
            }
            if self.tok.kind == until {
                break;
            }
            if self.tok.kind != TokenKind::Terminator {
                self.error_here(format!("expected TERMINATOR, got {}", self.tok.kind));
                self.skip_statement();
            }
            self.next();
        }
        body
    }

    /// Skips to the terminator that ends the current statement, ignoring terminators inside
    /// brackets.
    fn skip_statement(&mut self) {
        let (mut curly, mut brack, mut paren) = (0i32, 0i32, 0i32);
        while self.tok.kind != TokenKind::Eof {
            match self.tok.kind {
                TokenKind::LCurly => curly += 1,
                TokenKind::RCurly => curly -= 1,
                TokenKind::LBrack => brack += 1,
                TokenKind::RBrack => brack -= 1,
                TokenKind::LParen => paren += 1,
                TokenKind::RParen => paren -= 1,
                TokenKind::Terminator if curly <= 0 && brack <= 0 && paren <= 0 => return,
                _ => {}
            }
            self.next();
        }
    }

    fn parse_statement(&mut self) -> Option<Stmt> {
        let Some(name) = self.parse_block_name() else {
            self.advance_to(TokenKind::Ident);
            return None;
        };
        match self.tok.kind {
            TokenKind::Assign => {
                self.next();
                if name.parts.len() != 1 {
                    let first = name.parts[0].span;
                    let last = name.parts[name.parts.len() - 1].span;
                    self.diags.push(Diagnostic::error(
                        first.to(last),
                        r#"attribute names may only consist of a single identifier with no ".""#,
                    ));
                } else if let Some(label) = &name.label {
                    self.diags.push(Diagnostic::error(
                        label.span,
                        "attribute names may not have labels",
                    ));
                }
                let value = self.parse_expr();
                let ident = name.parts.into_iter().next()?;
                let span = ident.span.to(value.span);
                Some(Stmt::Attribute(Attribute {
                    name: ident,
                    value,
                    span,
                }))
            }
            TokenKind::LCurly => {
                self.expect(TokenKind::LCurly);
                let body = self.parse_body(TokenKind::RCurly);
                let rbrace = self.expect(TokenKind::RCurly).span;
                let start = name.parts[0].span;
                Some(Stmt::Block(Block {
                    name: name.parts,
                    label: name.label,
                    body,
                    span: start.to(rbrace),
                    rbrace,
                }))
            }
            other => {
                // Alloy judges by the label's text, so an empty label `""` still reads as an attribute.
                if name.parts.len() == 1 && name.label.as_ref().is_none_or(|l| l.value.is_empty()) {
                    self.error_here(format!(
                        "expected attribute assignment or block body, got {other}"
                    ));
                } else {
                    self.error_here(format!("expected block body, got {other}"));
                }
                self.advance_to(TokenKind::Ident);
                None
            }
        }
    }

    fn parse_block_name(&mut self) -> Option<BlockName> {
        if self.tok.kind != TokenKind::Ident {
            self.error_here(format!("expected identifier, got {}", self.tok.kind));
            return None;
        }
        let mut parts = vec![self.ident()];
        self.next();
        while self.tok.kind == TokenKind::Dot {
            self.next();
            if self.tok.kind != TokenKind::Ident {
                self.error_here(format!("expected identifier, got {}", self.tok.kind));
            }
            parts.push(self.ident());
            self.next();
        }
        let mut label = None;
        if self.tok.kind != TokenKind::Assign && self.tok.kind != TokenKind::LCurly {
            if self.tok.kind == TokenKind::String {
                let raw = self.tok.text.to_string();
                if !raw.starts_with('"') {
                    self.error_here(format!(
                        "expected block label to be a double quoted string, but got {}",
                        go_quote(&raw)
                    ));
                }
                // Alloy takes the bytes between the quotes as is (a label cannot need escapes,
                // since it must be an identifier). Bytes, not chars: an unterminated string
                // ends inside a multi-byte character (found by the `syntax` fuzz target).
                let value = if raw.len() > 2 {
                    String::from_utf8_lossy(&raw.as_bytes()[1..raw.len() - 1]).into_owned()
                } else {
                    String::new()
                };
                if raw.len() > 2 && !is_valid_identifier(&value) {
                    self.error_here(format!(
                        "expected block label to be a valid identifier, but got {}",
                        go_quote(&value)
                    ));
                }
                label = Some(Label {
                    value,
                    raw,
                    span: self.tok.span,
                });
            } else {
                self.error_here(format!("expected block label, got {}", self.tok.kind));
            }
            self.next();
        }
        Some(BlockName { parts, label })
    }

    fn ident(&self) -> Ident {
        Ident {
            name: self.tok.text.to_string(),
            span: self.tok.span,
        }
    }

    fn parse_expr(&mut self) -> Expr {
        self.parse_binary(1)
    }

    fn parse_binary(&mut self, min_prec: u8) -> Expr {
        let base = self.depth;
        let e = self.parse_binary_chain(min_prec);
        self.depth = base;
        e
    }

    fn parse_binary_chain(&mut self, min_prec: u8) -> Expr {
        let mut lhs = self.parse_pow();
        loop {
            let Some(op) = binary_op(self.tok.kind) else {
                return lhs;
            };
            let prec = op.precedence();
            if prec < min_prec {
                return lhs;
            }
            if !self.descend() {
                return lhs;
            }
            self.next();
            let rhs = self.parse_binary(prec + 1);
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            };
        }
    }

    /// `^` binds tighter than the other binary operators, looser than unary ones, and
    /// associates to the right.
    fn parse_pow(&mut self) -> Expr {
        let lhs = self.parse_unary();
        if self.tok.kind != TokenKind::Pow {
            return lhs;
        }
        let base = self.depth;
        if !self.descend() {
            self.depth = base;
            return lhs;
        }
        self.next();
        let rhs = self.parse_pow();
        self.depth = base;
        let span = lhs.span.to(rhs.span);
        Expr {
            kind: ExprKind::Binary {
                op: BinaryOp::Pow,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            span,
        }
    }

    fn parse_unary(&mut self) -> Expr {
        let base = self.depth;
        let e = self.parse_unary_inner();
        self.depth = base;
        e
    }

    fn parse_unary_inner(&mut self) -> Expr {
        let op = match self.tok.kind {
            TokenKind::Not => Some(UnaryOp::Not),
            TokenKind::Sub => Some(UnaryOp::Neg),
            _ => None,
        };
        if let Some(op) = op {
            if !self.descend() {
                return self.abandoned();
            }
            let start = self.tok.span;
            self.next();
            let expr = self.parse_unary();
            let span = start.to(expr.span);
            return Expr {
                kind: ExprKind::Unary {
                    op,
                    expr: Box::new(expr),
                },
                span,
            };
        }

        let mut primary = self.parse_primary();
        loop {
            if matches!(
                self.tok.kind,
                TokenKind::Dot | TokenKind::LBrack | TokenKind::LParen
            ) && !self.descend()
            {
                return primary;
            }
            match self.tok.kind {
                TokenKind::Dot => {
                    self.next();
                    let name_tok = self.expect(TokenKind::Ident);
                    let name = Ident {
                        name: name_tok.text.to_string(),
                        span: name_tok.span,
                    };
                    let span = primary.span.to(name.span);
                    primary = Expr {
                        kind: ExprKind::Access {
                            value: Box::new(primary),
                            name,
                        },
                        span,
                    };
                }
                TokenKind::LBrack => {
                    self.expect(TokenKind::LBrack);
                    let index = self.parse_expr();
                    let end = self.expect(TokenKind::RBrack).span;
                    let span = primary.span.to(end);
                    primary = Expr {
                        kind: ExprKind::Index {
                            value: Box::new(primary),
                            index: Box::new(index),
                        },
                        span,
                    };
                }
                TokenKind::LParen => {
                    self.expect(TokenKind::LParen);
                    let args = if self.tok.kind != TokenKind::RParen {
                        self.parse_expr_list(TokenKind::RParen)
                    } else {
                        Vec::new()
                    };
                    let end = self.expect(TokenKind::RParen).span;
                    let span = primary.span.to(end);
                    primary = Expr {
                        kind: ExprKind::Call {
                            func: Box::new(primary),
                            args,
                        },
                        span,
                    };
                }
                TokenKind::String | TokenKind::LCurly => {
                    // Someone wrote a block where a value belongs (`x = foo "a" { ... }`): parse
                    // the block so the error is reported once and parsing resumes after it.
                    if self.tok.kind == TokenKind::String {
                        self.next();
                    }
                    if self.expect(TokenKind::LCurly).kind != TokenKind::LCurly {
                        self.skip_statement();
                        return primary;
                    }
                    self.parse_body(TokenKind::RCurly);
                    let end = self.expect(TokenKind::RCurly);
                    if end.kind != TokenKind::RCurly {
                        self.skip_statement();
                        return primary;
                    }
                    self.diags.push(Diagnostic::error(
                        primary.span.to(end.span),
                        "cannot use a block as an expression",
                    ));
                }
                _ => return primary,
            }
        }
    }

    fn parse_primary(&mut self) -> Expr {
        let base = self.depth;
        let e = self.parse_primary_inner();
        self.depth = base;
        e
    }

    fn parse_primary_inner(&mut self) -> Expr {
        if matches!(
            self.tok.kind,
            TokenKind::LParen | TokenKind::LBrack | TokenKind::LCurly
        ) && !self.descend()
        {
            return self.abandoned();
        }
        let tok = self.tok.clone();
        let literal = |value: LiteralValue| Expr {
            kind: ExprKind::Literal(Literal {
                value,
                raw: tok.text.to_string(),
            }),
            span: tok.span,
        };
        match tok.kind {
            TokenKind::Ident => {
                self.next();
                Expr {
                    kind: ExprKind::Ident(tok.text.to_string()),
                    span: tok.span,
                }
            }
            TokenKind::String => {
                let e = literal(LiteralValue::String(unquote(&tok.text)));
                self.next();
                e
            }
            TokenKind::Number | TokenKind::Float => {
                let e = literal(LiteralValue::Number);
                self.next();
                e
            }
            TokenKind::Bool => {
                let e = literal(LiteralValue::Bool(tok.text == "true"));
                self.next();
                e
            }
            TokenKind::Null => {
                let e = literal(LiteralValue::Null);
                self.next();
                e
            }
            TokenKind::LParen => {
                self.next();
                let inner = self.parse_expr();
                let end = self.expect(TokenKind::RParen).span;
                Expr {
                    kind: ExprKind::Paren(Box::new(inner)),
                    span: tok.span.to(end),
                }
            }
            TokenKind::LBrack => {
                self.next();
                let items = if self.tok.kind != TokenKind::RBrack {
                    self.parse_expr_list(TokenKind::RBrack)
                } else {
                    Vec::new()
                };
                let end = self.expect(TokenKind::RBrack).span;
                Expr {
                    kind: ExprKind::Array(items),
                    span: tok.span.to(end),
                }
            }
            TokenKind::LCurly => {
                self.next();
                let fields = self.parse_field_list(TokenKind::RCurly);
                let end = self.expect(TokenKind::RCurly).span;
                Expr {
                    kind: ExprKind::Object(fields),
                    span: tok.span.to(end),
                }
            }
            other => {
                self.error_here(format!("expected expression, got {other}"));
                // Resynchronise at the end of the value so the next statement still parses.
                while !matches!(
                    self.tok.kind,
                    TokenKind::Eof
                        | TokenKind::Terminator
                        | TokenKind::RParen
                        | TokenKind::RCurly
                        | TokenKind::RBrack
                        | TokenKind::Comma
                ) {
                    self.next();
                }
                Expr {
                    kind: ExprKind::Literal(Literal {
                        value: LiteralValue::Null,
                        raw: "null".into(),
                    }),
                    span: tok.span,
                }
            }
        }
    }

    fn parse_expr_list(&mut self, until: TokenKind) -> Vec<Expr> {
        let mut items = Vec::new();
        while self.tok.kind != until && self.tok.kind != TokenKind::Eof {
            items.push(self.parse_expr());
            if self.tok.kind == until {
                break;
            }
            if self.tok.kind != TokenKind::Comma {
                self.error_here("missing ',' in expression list".into());
            }
            self.next();
        }
        items
    }

    fn parse_field_list(&mut self, until: TokenKind) -> Vec<Field> {
        let mut fields = Vec::new();
        while self.tok.kind != until && self.tok.kind != TokenKind::Eof {
            fields.push(self.parse_field());
            if self.tok.kind == until {
                break;
            }
            if self.tok.kind != TokenKind::Comma {
                self.error_here("missing ',' in field list".into());
            }
            self.next();
        }
        fields
    }

    fn parse_field(&mut self) -> Field {
        let tok = self.tok.clone();
        let (key, quoted) = match tok.kind {
            TokenKind::Ident => {
                self.next();
                (tok.text.to_string(), false)
            }
            TokenKind::String => {
                self.next();
                let raw = tok.text.as_ref();
                // Alloy strips the quotes without unescaping (a documented quirk we keep), as
                // bytes: an unterminated key may end inside a multi-byte character.
                if raw.len() > 2 {
                    (
                        String::from_utf8_lossy(&raw.as_bytes()[1..raw.len() - 1]).into_owned(),
                        true,
                    )
                } else {
                    (raw.to_string(), false)
                }
            }
            other => {
                self.error_here(format!(
                    "expected field name (string or identifier), got {other}"
                ));
                self.advance_to(TokenKind::Assign);
                (String::new(), false)
            }
        };
        self.expect(TokenKind::Assign);
        let value = self.parse_expr();
        Field {
            key,
            quoted,
            key_span: tok.span,
            value,
        }
    }
}

struct BlockName {
    parts: Vec<Ident>,
    label: Option<Label>,
}

fn binary_op(kind: TokenKind) -> Option<BinaryOp> {
    Some(match kind {
        TokenKind::Or => BinaryOp::Or,
        TokenKind::And => BinaryOp::And,
        TokenKind::Eq => BinaryOp::Eq,
        TokenKind::NotEq => BinaryOp::NotEq,
        TokenKind::Lt => BinaryOp::Lt,
        TokenKind::LtEq => BinaryOp::LtEq,
        TokenKind::Gt => BinaryOp::Gt,
        TokenKind::GtEq => BinaryOp::GtEq,
        TokenKind::Add => BinaryOp::Add,
        TokenKind::Sub => BinaryOp::Sub,
        TokenKind::Mul => BinaryOp::Mul,
        TokenKind::Div => BinaryOp::Div,
        TokenKind::Mod => BinaryOp::Mod,
        TokenKind::Pow => BinaryOp::Pow,
        _ => return None,
    })
}

use crate::gocompat::quote as go_quote;

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders an expression fully parenthesised, so precedence is visible in test tables.
    fn sexpr(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Literal(l) => match &l.value {
                LiteralValue::String(s) => format!("{s:?}"),
                _ => l.raw.clone(),
            },
            ExprKind::Ident(n) => n.clone(),
            ExprKind::Array(items) => {
                format!(
                    "[{}]",
                    items.iter().map(sexpr).collect::<Vec<_>>().join(" ")
                )
            }
            ExprKind::Object(fields) => format!(
                "{{{}}}",
                fields
                    .iter()
                    .map(|f| format!("{}={}", f.key, sexpr(&f.value)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            ExprKind::Access { value, name } => format!("{}.{}", sexpr(value), name.name),
            ExprKind::Index { value, index } => format!("{}[{}]", sexpr(value), sexpr(index)),
            ExprKind::Call { func, args } => format!(
                "{}({})",
                sexpr(func),
                args.iter().map(sexpr).collect::<Vec<_>>().join(" ")
            ),
            ExprKind::Unary { op, expr } => format!("({}{})", op.as_str(), sexpr(expr)),
            ExprKind::Binary { op, lhs, rhs } => {
                format!("({} {} {})", sexpr(lhs), op, sexpr(rhs))
            }
            ExprKind::Paren(inner) => format!("<{}>", sexpr(inner)),
        }
    }

    #[test]
    fn unterminated_labels_inside_multibyte_characters_are_errors_not_panics() {
        // Inputs the `syntax` fuzz target found: a label string cut inside a UTF-8 character,
        // valid or not.
        for src in [
            &b"b \"\xc3\xa9"[..],
            b"g\"\x8d",
            b"a \"\xe2\x82\xac\" {}",
            b"x = {\"\xc3\xa9",
        ] {
            let (_, diags) = parse_file_bytes(src);
            assert!(!diags.is_empty(), "{src:?}");
        }
    }

    #[test]
    fn expression_precedence_and_shape() {
        let cases = [
            ("1 + 2 * 3", "(1 + (2 * 3))"),
            ("1 * 2 + 3", "((1 * 2) + 3)"),
            ("2 ^ 3 ^ 2", "(2 ^ (3 ^ 2))"),
            ("-2 ^ 2", "((-2) ^ 2)"),
            ("2 * 3 ^ 2", "(2 * (3 ^ 2))"),
            ("a || b && c", "(a || (b && c))"),
            ("a == b || c != d", "((a == b) || (c != d))"),
            ("1 < 2 == true", "((1 < 2) == true)"),
            ("1 - 2 - 3", "((1 - 2) - 3)"),
            ("!a && !!b", "((!a) && (!(!b)))"),
            ("(1 + 2) * 3", "(<(1 + 2)> * 3)"),
            ("a.b.c[0].d(1, 2,)", "a.b.c[0].d(1 2)"),
            ("sys.env(\"HOME\")", "sys.env(\"HOME\")"),
            ("[1, [2, 3], {a = 1, \"b.c\" = 2}]", "[1 [2 3] {a=1 b.c=2}]"),
            ("{}", "{}"),
            ("[]", "[]"),
            ("\"${1}\" + \"$1:$2\"", "(\"${1}\" + \"$1:$2\")"),
            ("`(.+):(\\d+)`", "\"(.+):(\\\\d+)\""),
            ("\"(.+):(\\\\d+)\"", "\"(.+):(\\\\d+)\""),
            ("-x.y", "(-x.y)"),
            ("a % b / c", "((a % b) / c)"),
        ];
        for (src, want) in cases {
            let expr = parse_expression(src).unwrap_or_else(|d| panic!("{src}: {d:?}"));
            assert_eq!(sexpr(&expr), want, "{src}");
        }
    }

    #[test]
    fn statements_blocks_and_labels() {
        let src = "logging {\n  level = \"debug\"\n}\n\npyroscope.scrape \"default\" {\n  targets = [\n    {\"__address__\" = \"localhost:12345\"},\n  ]\n  profiling_config {\n    profile.custom \"x\" { path = \"/x\" }\n  }\n}\n";
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(file.body.stmts.len(), 2);
        let Stmt::Block(scrape) = &file.body.stmts[1] else {
            panic!("want a block")
        };
        assert_eq!(scrape.full_name(), "pyroscope.scrape");
        assert_eq!(
            scrape.label.as_ref().map(|l| l.value.as_str()),
            Some("default")
        );
        assert_eq!(
            &src[scrape.header_span().range()],
            "pyroscope.scrape \"default\""
        );
        assert!(src[scrape.span.range()].ends_with('}'));
        let Stmt::Block(pc) = &scrape.body.stmts[1] else {
            panic!("want a block")
        };
        let Stmt::Block(custom) = &pc.body.stmts[0] else {
            panic!("want a block")
        };
        assert_eq!(custom.full_name(), "profile.custom");
    }

    #[test]
    fn comments_are_collected_and_end_statements() {
        let src = "a = 1 // one\n/* two */ b = [ // three\n  2, /* four */\n]\n";
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let texts: Vec<&str> = file.comments.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["// one", "/* two */", "// three", "/* four */"]);
        assert_eq!(file.body.stmts.len(), 2);
    }

    fn first_errors(src: &str) -> Vec<String> {
        let (_, diags) = parse_file(src);
        let source = crate::syntax::diag::Source::new("t.alloy", src);
        diags.iter().map(|d| source.short(d)).collect()
    }

    #[test]
    fn errors_have_alloy_messages_and_positions() {
        let cases: &[(&str, &[&str])] = &[
            (
                "a = [\n  1,\n  2\n]\n",
                &["t.alloy:3:4: missing ',' in expression list"],
            ),
            (
                "a = {\n  b = 1\n}\n",
                &["t.alloy:2:8: missing ',' in field list"],
            ),
            (
                "a.b = 1\n",
                &[
                    "t.alloy:1:1: attribute names may only consist of a single identifier with no \".\"",
                ],
            ),
            (
                "a \"x\" = 1\n",
                &["t.alloy:1:3: attribute names may not have labels"],
            ),
            (
                "a.b \"my-job\" {}\n",
                &["t.alloy:1:5: expected block label to be a valid identifier, but got \"my-job\""],
            ),
            (
                "a.b `x` {}\n",
                &[
                    "t.alloy:1:5: expected block label to be a double quoted string, but got \"`x`\"",
                ],
            ),
            ("a = + 1\n", &["t.alloy:1:5: expected expression, got +"]),
            (
                "a = b c\n",
                &["t.alloy:1:7: expected TERMINATOR, got IDENT"],
            ),
            ("a {\n", &["t.alloy:2:1: expected }, got EOF"]),
            (
                "x = y \"l\" {}\n",
                &["t.alloy:1:5: cannot use a block as an expression"],
            ),
            (
                "a = {1 = 2}\n",
                &["t.alloy:1:6: expected field name (string or identifier), got NUMBER"],
            ),
            // Three independent mistakes on three lines are all reported.
            (
                "a = [1 2]\nb.c = 1\nd = +\n",
                &[
                    "t.alloy:1:8: missing ',' in expression list",
                    "t.alloy:2:1: attribute names may only consist of a single identifier with no \".\"",
                    "t.alloy:3:5: expected expression, got +",
                ],
            ),
        ];
        for (src, want) in cases {
            assert_eq!(&first_errors(src), want, "{src:?}");
        }
    }

    #[test]
    fn literals_keep_source_text() {
        let expr = parse_expression("010").expect("parses");
        let ExprKind::Literal(lit) = expr.kind else {
            panic!("want a literal")
        };
        assert_eq!(lit.raw, "010");
        let expr = parse_expression("\"a\\tb\"").expect("parses");
        let ExprKind::Literal(lit) = expr.kind else {
            panic!("want a literal")
        };
        assert_eq!(lit.raw, "\"a\\tb\"");
        assert_eq!(lit.value, LiteralValue::String("a\tb".into()));
    }
}
