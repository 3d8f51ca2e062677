//! The Alloy tokenizer.
//!
//! It follows Alloy's scanner token for token, because error positions in the conformance corpus
//! depend on exactly where terminators are inserted: a newline (or EOF, or a comment that runs to
//! the end of the line) becomes a TERMINATOR only after a token that can end a statement
//! (identifier, literal, `)`, `]`, `}`), exactly like Go's automatic semicolons.

use std::fmt;

use super::ast::Span;
use super::diag::Diagnostic;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    Illegal,
    Eof,
    Comment,
    Ident,
    Number,
    Float,
    String,
    Bool,
    Null,
    Or,
    And,
    Not,
    Assign,
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
    LCurly,
    RCurly,
    LParen,
    RParen,
    LBrack,
    RBrack,
    Comma,
    Dot,
    Terminator,
}

impl TokenKind {
    /// The name Alloy prints for this token in "expected X, got Y" messages.
    pub fn as_str(self) -> &'static str {
        use TokenKind::*;
        match self {
            Illegal => "ILLEGAL",
            Eof => "EOF",
            Comment => "COMMENT",
            Ident => "IDENT",
            Number => "NUMBER",
            Float => "FLOAT",
            String => "STRING",
            Bool => "BOOL",
            Null => "NULL",
            Or => "||",
            And => "&&",
            Not => "!",
            Assign => "=",
            Eq => "==",
            NotEq => "!=",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            GtEq => ">=",
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            Pow => "^",
            LCurly => "{",
            RCurly => "}",
            LParen => "(",
            RParen => ")",
            LBrack => "[",
            RBrack => "]",
            Comma => ",",
            Dot => ".",
            Terminator => "TERMINATOR",
        }
    }
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One token. `text` is the source text of the token (for a comment: the comment with CRs
/// stripped; for a terminator: "\n").
#[derive(Clone, Debug, PartialEq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    pub span: Span,
    pub text: std::borrow::Cow<'a, str>,
}

const EOF: i32 = -1;
const BOM: i32 = 0xFEFF;

pub struct Lexer<'a> {
    src: &'a [u8],
    /// Where the text to scan starts in `src` (0 but for a file of a directory: see
    /// [`Lexer::from_bytes_at`]).
    start: usize,
    /// The current character, or EOF. Kept as i32 so EOF and invalid bytes need no Option.
    ch: i32,
    offset: usize,
    read_offset: usize,
    insert_term: bool,
    insert_terms_enabled: bool,
    diags: Vec<Diagnostic>,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Self::from_bytes(src.as_bytes())
    }

    /// Lexes raw bytes: configs read from disk may contain invalid UTF-8, which is an error
    /// Alloy reports at its exact offset, so we must not reject the file up front.
    pub fn from_bytes(src: &'a [u8]) -> Self {
        Self::from_bytes_at(src, 0)
    }

    /// Lexes `src[start..]`, with spans that are offsets into `src`: how the files of a
    /// directory, laid out one after the other, are each scanned as a file of their own.
    pub fn from_bytes_at(src: &'a [u8], start: usize) -> Self {
        let start = start.min(src.len());
        let mut lx = Lexer {
            src,
            start,
            ch: b' ' as i32,
            offset: start,
            read_offset: start,
            insert_term: false,
            insert_terms_enabled: true,
            diags: Vec::new(),
        };
        lx.next();
        if lx.ch == BOM {
            lx.next();
        }
        lx
    }

    /// Scanning without terminator insertion, used to check whether a label is an identifier.
    fn without_terminators(mut self) -> Self {
        self.insert_terms_enabled = false;
        self
    }

    pub fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diags)
    }

    fn error(&mut self, offset: usize, msg: impl Into<String>) {
        self.diags
            .push(Diagnostic::error(Span::new(offset, offset + 1), msg));
    }

    fn peek_byte(&self) -> u8 {
        self.src.get(self.read_offset).copied().unwrap_or(0)
    }

    fn next(&mut self) {
        if self.read_offset >= self.src.len() {
            self.offset = self.src.len();
            self.ch = EOF;
            return;
        }
        self.offset = self.read_offset;
        let b = self.src[self.read_offset];
        let (ch, width) = if b == 0 {
            self.error(self.offset, "illegal character NUL");
            (0, 1)
        } else if b < 0x80 {
            (b as i32, 1)
        } else {
            match decode_utf8(&self.src[self.read_offset..]) {
                Some((c, w)) => {
                    if c as i32 == BOM && self.offset > self.start {
                        self.error(self.offset, "illegal byte order mark");
                    }
                    (c as i32, w)
                }
                None => {
                    self.error(self.offset, "illegal UTF-8 encoding");
                    (0xFFFD, 1)
                }
            }
        };
        self.read_offset += width;
        self.ch = ch;
    }

    fn text(&self, start: usize, end: usize) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(&self.src[start..end])
    }

    fn token(&self, kind: TokenKind, start: usize) -> Token<'a> {
        Token {
            kind,
            span: Span::new(start, self.offset),
            text: self.text(start, self.offset),
        }
    }

    /// Returns the next token. After EOF it keeps returning EOF.
    pub fn next_token(&mut self) -> Token<'a> {
        self.skip_whitespace();
        let start = self.offset;
        let ch = self.ch;
        let mut insert_term = false;
        let tok;

        if is_letter(ch) {
            self.scan_identifier();
            let text = self.text(start, self.offset);
            let kind = match text.as_ref() {
                "true" | "false" => TokenKind::Bool,
                "null" => TokenKind::Null,
                _ => TokenKind::Ident,
            };
            insert_term = true;
            tok = Token {
                kind,
                span: Span::new(start, self.offset),
                text,
            };
        } else if is_decimal(ch) || (ch == '.' as i32 && is_decimal(self.peek_byte() as i32)) {
            insert_term = true;
            let kind = self.scan_number(start);
            tok = self.token(kind, start);
        } else {
            self.next();
            let kind = match ch {
                EOF => {
                    if self.insert_term {
                        self.insert_term = false;
                        return Token {
                            kind: TokenKind::Terminator,
                            span: Span::new(start, start),
                            text: "\n".into(),
                        };
                    }
                    TokenKind::Eof
                }
                0x0A => {
                    self.insert_term = false;
                    return Token {
                        kind: TokenKind::Terminator,
                        span: Span::new(start, start + 1),
                        text: "\n".into(),
                    };
                }
                0x27 => {
                    self.error(start, "illegal single-quoted string; use double quotes");
                    insert_term = true;
                    self.scan_string(start, '\'' as i32, true, false);
                    TokenKind::Illegal
                }
                0x22 => {
                    insert_term = true;
                    self.scan_string(start, '"' as i32, true, false);
                    TokenKind::String
                }
                0x60 => {
                    insert_term = true;
                    self.scan_string(start, '`' as i32, false, true);
                    TokenKind::String
                }
                0x7C => {
                    if self.ch != '|' as i32 {
                        self.error(self.offset, "missing second | in ||");
                    } else {
                        self.next();
                    }
                    TokenKind::Or
                }
                0x26 => {
                    if self.ch != '&' as i32 {
                        self.error(self.offset, "missing second & in &&");
                    } else {
                        self.next();
                    }
                    TokenKind::And
                }
                0x21 => self.switch2(TokenKind::Not, TokenKind::NotEq),
                0x3D => self.switch2(TokenKind::Assign, TokenKind::Eq),
                0x3C => self.switch2(TokenKind::Lt, TokenKind::LtEq),
                0x3E => self.switch2(TokenKind::Gt, TokenKind::GtEq),
                0x2B => TokenKind::Add,
                0x2D => TokenKind::Sub,
                0x2A => TokenKind::Mul,
                0x2F => {
                    if self.ch == '/' as i32 || self.ch == '*' as i32 {
                        if self.insert_term && self.comment_ends_line() {
                            // The comment ends the statement: emit the terminator now and
                            // scan the comment itself on the next call.
                            self.rewind_to(start);
                            self.insert_term = false;
                            return Token {
                                kind: TokenKind::Terminator,
                                span: Span::new(start, start),
                                text: "\n".into(),
                            };
                        }
                        let text = self.scan_comment(start);
                        self.insert_term = false;
                        return Token {
                            kind: TokenKind::Comment,
                            span: Span::new(start, self.offset),
                            text: text.into(),
                        };
                    }
                    TokenKind::Div
                }
                0x25 => TokenKind::Mod,
                0x5E => TokenKind::Pow,
                0x7B => TokenKind::LCurly,
                0x7D => {
                    insert_term = true;
                    TokenKind::RCurly
                }
                0x28 => TokenKind::LParen,
                0x29 => {
                    insert_term = true;
                    TokenKind::RParen
                }
                0x5B => TokenKind::LBrack,
                0x5D => {
                    insert_term = true;
                    TokenKind::RBrack
                }
                0x2C => TokenKind::Comma,
                0x2E => TokenKind::Dot,
                other => {
                    if other != BOM {
                        self.error(start, format!("illegal character {}", go_rune_u(other)));
                    }
                    insert_term = self.insert_term;
                    TokenKind::Illegal
                }
            };
            tok = self.token(kind, start);
        }

        if self.insert_terms_enabled {
            self.insert_term = insert_term;
        }
        tok
    }

    fn rewind_to(&mut self, offset: usize) {
        self.offset = offset;
        self.read_offset = offset + 1;
        self.ch = '/' as i32;
    }

    fn switch2(&mut self, single: TokenKind, with_eq: TokenKind) -> TokenKind {
        if self.ch == '=' as i32 {
            self.next();
            with_eq
        } else {
            single
        }
    }

    fn skip_whitespace(&mut self) {
        while self.ch == ' ' as i32
            || self.ch == '\t' as i32
            || self.ch == '\r' as i32
            || (self.ch == '\n' as i32 && !self.insert_term)
        {
            self.next();
        }
    }

    fn scan_identifier(&mut self) {
        while is_letter(self.ch) || is_digit(self.ch) {
            self.next();
        }
    }

    fn digits(&mut self) -> usize {
        let mut n = 0;
        while is_decimal(self.ch) {
            self.next();
            n += 1;
        }
        n
    }

    fn scan_number(&mut self, start: usize) -> TokenKind {
        let mut kind = TokenKind::Number;
        if self.ch != '.' as i32 {
            self.digits();
        }
        if self.ch == '.' as i32 {
            kind = TokenKind::Float;
            self.next();
            self.digits();
        }
        if self.ch == 'e' as i32 || self.ch == 'E' as i32 {
            kind = TokenKind::Float;
            self.next();
            if self.ch == '+' as i32 || self.ch == '-' as i32 {
                self.next();
            }
            if self.digits() == 0 {
                self.error(start, "exponent has no digits");
            }
        }
        kind
    }

    /// Scans a string whose opening quote (at `start`) was already consumed.
    fn scan_string(&mut self, start: usize, until: i32, escapes: bool, multiline: bool) {
        loop {
            let ch = self.ch;
            if (!multiline && ch == '\n' as i32) || ch == EOF {
                self.error(start, "string literal not terminated");
                break;
            }
            self.next();
            if ch == until {
                break;
            }
            if escapes && ch == '\\' as i32 {
                self.scan_escape();
            }
        }
    }

    fn scan_escape(&mut self) {
        let off = self.offset;
        let (mut n, base, max): (u32, u32, u32) = match self.ch {
            c if "abfnrtv\\\"".chars().any(|e| e as i32 == c) => {
                self.next();
                return;
            }
            c if ('0' as i32..='7' as i32).contains(&c) => (3, 8, 255),
            c if c == 'x' as i32 => {
                self.next();
                (2, 16, 255)
            }
            c if c == 'u' as i32 => {
                self.next();
                (4, 16, char::MAX as u32)
            }
            c if c == 'U' as i32 => {
                self.next();
                (8, 16, char::MAX as u32)
            }
            c => {
                let msg = if c == EOF {
                    "escape sequence not terminated"
                } else {
                    "unknown escape sequence"
                };
                self.error(off, msg);
                return;
            }
        };
        let mut x: u32 = 0;
        while n > 0 {
            let d = digit_val(self.ch);
            if d >= base {
                let msg = if self.ch == EOF {
                    "escape sequence not terminated".to_string()
                } else {
                    format!(
                        "illegal character {} in escape sequence",
                        go_rune_u(self.ch)
                    )
                };
                self.error(off, msg);
                return;
            }
            x = x.saturating_mul(base).saturating_add(d);
            self.next();
            n -= 1;
        }
        if x > max || (0xD800..0xE000).contains(&x) {
            self.error(off, "escape sequence is invalid Unicode code point");
        }
    }

    /// Scans a comment whose `/` (at `start`) was consumed; `self.ch` is the second character.
    fn scan_comment(&mut self, start: usize) -> String {
        let block = self.ch == '*' as i32;
        if !block {
            while self.ch != '\n' as i32 && self.ch != EOF {
                self.next();
            }
        } else {
            self.next();
            let mut closed = false;
            while self.ch != EOF {
                let ch = self.ch;
                self.next();
                if ch == '*' as i32 && self.ch == '/' as i32 {
                    self.next();
                    closed = true;
                    break;
                }
            }
            if !closed {
                self.error(start, "block comment not terminated");
            }
        }
        let raw = String::from_utf8_lossy(&self.src[start..self.offset]);
        // Windows line endings must not leak into comments the formatter writes back.
        let mut text = raw.trim_end_matches('\r').to_string();
        if text.contains('\r') {
            text = strip_cr(&text, block);
        }
        text
    }

    /// Whether the comment being scanned (`self.ch` is its second character) is followed
    /// only by whitespace or more comments up to the end of the line. Leaves the position as it
    /// found it.
    fn comment_ends_line(&mut self) -> bool {
        let saved = (self.ch, self.offset, self.read_offset, self.diags.len());
        let result = loop {
            if self.ch == '/' as i32 {
                break true;
            }
            if self.ch != '*' as i32 {
                break false;
            }
            self.next();
            let mut newline = false;
            while self.ch != EOF {
                let ch = self.ch;
                if ch == '\n' as i32 {
                    newline = true;
                    break;
                }
                self.next();
                if ch == '*' as i32 && self.ch == '/' as i32 {
                    self.next();
                    break;
                }
            }
            if newline {
                break true;
            }
            self.skip_whitespace();
            if self.ch == EOF || self.ch == '\n' as i32 {
                break true;
            }
            if self.ch != '/' as i32 {
                break false;
            }
            self.next();
        };
        self.ch = saved.0;
        self.offset = saved.1;
        self.read_offset = saved.2;
        // Errors seen while looking ahead are reported when the comment is really scanned.
        self.diags.truncate(saved.3);
        result
    }
}

/// Decodes one UTF-8 character, or `None` for an invalid sequence.
fn decode_utf8(bytes: &[u8]) -> Option<(char, usize)> {
    let width = match bytes.first()? {
        b if *b < 0x80 => 1,
        b if *b & 0xE0 == 0xC0 => 2,
        b if *b & 0xF0 == 0xE0 => 3,
        b if *b & 0xF8 == 0xF0 => 4,
        _ => return None,
    };
    let s = std::str::from_utf8(bytes.get(..width)?).ok()?;
    s.chars().next().map(|c| (c, width))
}

fn strip_cr(s: &str, block: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    for (j, &ch) in b.iter().enumerate() {
        // A CR right before the closing `*/` of a block comment is content, not a line ending.
        let keep_in_block =
            block && out.len() > 2 && out.last() == Some(&b'*') && b.get(j + 1) == Some(&b'/');
        if ch != b'\r' || keep_in_block {
            out.push(ch);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_letter(ch: i32) -> bool {
    if ch < 0 {
        return false;
    }
    if ch < 0x80 {
        let c = ch as u8;
        return c.is_ascii_alphabetic() || c == b'_';
    }
    char::from_u32(ch as u32).is_some_and(|c| c.is_alphabetic() && c != '\u{FEFF}')
}

fn is_decimal(ch: i32) -> bool {
    ('0' as i32..='9' as i32).contains(&ch)
}

fn is_digit(ch: i32) -> bool {
    is_decimal(ch) || (ch >= 0x80 && char::from_u32(ch as u32).is_some_and(|c| c.is_numeric()))
}

fn digit_val(ch: i32) -> u32 {
    match char::from_u32(ch.max(0) as u32) {
        Some(c) => c.to_digit(16).unwrap_or(16),
        None => 16,
    }
}

/// Go's `%#U` rendering of a rune: `U+0007` or `U+2026 '…'` for printable characters.
fn go_rune_u(ch: i32) -> String {
    let code = ch.max(0) as u32;
    match char::from_u32(code) {
        Some(c) if !c.is_control() && !c.is_whitespace() => format!("U+{code:04X} '{c}'"),
        _ => format!("U+{code:04X}"),
    }
}

/// Whether `s` is exactly one identifier token (so it can be a block label).
pub fn is_valid_identifier(s: &str) -> bool {
    let mut lx = Lexer::new(s).without_terminators();
    let tok = lx.next_token();
    tok.kind == TokenKind::Ident && tok.text == s
}

/// The value of a string literal: Go's `strconv.Unquote` for double quotes, verbatim minus
/// carriage returns for backticks. Escape errors were already reported by the lexer, so a bad
/// escape here just keeps the rest of the text.
pub fn unquote(raw: &str) -> String {
    let Some(first) = raw.chars().next() else {
        return String::new();
    };
    if first == '`' {
        let inner = raw.strip_prefix('`').unwrap_or(raw);
        let inner = inner.strip_suffix('`').unwrap_or(inner);
        return inner.replace('\r', "");
    }
    let inner = raw.strip_prefix('"').unwrap_or(raw);
    let inner = inner.strip_suffix('"').unwrap_or(inner);
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        let Some(&e) = b.get(i) else { break };
        i += 1;
        let simple = match e {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0C),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0B),
            b'\\' => Some(b'\\'),
            b'"' => Some(b'"'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let (digits, radix) = match e {
            b'0'..=b'7' => {
                i -= 1;
                (3, 8)
            }
            b'x' => (2, 16),
            b'u' => (4, 16),
            b'U' => (8, 16),
            _ => continue,
        };
        let Some(text) = inner.get(i..i + digits) else {
            break;
        };
        i += digits;
        let Ok(v) = u32::from_str_radix(text, radix) else {
            continue;
        };
        // \x and octal escapes are bytes (they may build multi-byte UTF-8 by hand);
        // \u and \U are code points.
        if e == b'x' || (b'0'..=b'7').contains(&e) {
            out.push(v.min(255) as u8);
        } else if let Some(c) = char::from_u32(v) {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        let mut lx = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            let t = lx.next_token();
            out.push(t.kind);
            if t.kind == TokenKind::Eof {
                return out;
            }
        }
    }

    fn errors(src: &[u8]) -> Vec<std::string::String> {
        let mut lx = Lexer::from_bytes(src);
        while lx.next_token().kind != TokenKind::Eof {}
        lx.take_diagnostics()
            .into_iter()
            .map(|d| format!("{}: {}", d.span.map(|s| s.start).unwrap_or(0), d.message))
            .collect()
    }

    use TokenKind::*;

    #[test]
    fn terminators_follow_go_rules() {
        let cases: &[(&str, Vec<TokenKind>)] = &[
            ("a = 1\n", vec![Ident, Assign, Number, Terminator, Eof]),
            ("a = 1", vec![Ident, Assign, Number, Terminator, Eof]),
            (
                "a = [\n1,\n]\n",
                vec![
                    Ident, Assign, LBrack, Number, Comma, RBrack, Terminator, Eof,
                ],
            ),
            (
                "a = [\n1\n]",
                vec![
                    Ident, Assign, LBrack, Number, Terminator, RBrack, Terminator, Eof,
                ],
            ),
            ("x {\n}\n", vec![Ident, LCurly, RCurly, Terminator, Eof]),
            (
                "a = b // c\n",
                vec![Ident, Assign, Ident, Terminator, Comment, Eof],
            ),
            (
                "a = b /* c */\n",
                vec![Ident, Assign, Ident, Terminator, Comment, Eof],
            ),
            (
                "a = b /* c */ + d\n",
                vec![Ident, Assign, Ident, Comment, Add, Ident, Terminator, Eof],
            ),
            (
                "a = (\n1)",
                vec![Ident, Assign, LParen, Number, RParen, Terminator, Eof],
            ),
            ("true null false", vec![Bool, Null, Bool, Terminator, Eof]),
            (
                "x = .5 + 1e3 + 2.",
                vec![
                    Ident, Assign, Float, Add, Float, Add, Float, Terminator, Eof,
                ],
            ),
        ];
        for (src, want) in cases {
            assert_eq!(&kinds(src), want, "{src:?}");
        }
    }

    #[test]
    fn operators() {
        assert_eq!(
            kinds("|| && ! == != < <= > >= + - * / % ^ = { } ( ) [ ] , ."),
            vec![
                Or, And, Not, Eq, NotEq, Lt, LtEq, Gt, GtEq, Add, Sub, Mul, Div, Mod, Pow, Assign,
                LCurly, RCurly, LParen, RParen, LBrack, RBrack, Comma, Dot, Eof
            ]
        );
    }

    #[test]
    fn scanner_errors_match_alloy() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x07", "0: illegal character U+0007"),
            ("…".as_bytes(), "0: illegal character U+2026 '…'"),
            (b"'a'", "0: illegal single-quoted string; use double quotes"),
            (b"\"abc", "0: string literal not terminated"),
            (b"\"ab\nc\"", "0: string literal not terminated"),
            (b"\"\\q\"", "2: unknown escape sequence"),
            (
                b"\"\\x4g\"",
                "2: illegal character U+0067 'g' in escape sequence",
            ),
            (
                b"\"\\uD800\"",
                "2: escape sequence is invalid Unicode code point",
            ),
            (
                b"\"\\400\"",
                "2: escape sequence is invalid Unicode code point",
            ),
            (b"1e", "0: exponent has no digits"),
            (b"/* abc", "0: block comment not terminated"),
            (b"a\x00", "1: illegal character NUL"),
            (b"a\x80", "1: illegal UTF-8 encoding"),
            (b"a \xEF\xBB\xBF", "2: illegal byte order mark"),
            (b"a | b", "3: missing second | in ||"),
        ];
        for (src, want) in cases {
            let got = errors(src);
            assert_eq!(
                got.first().map(std::string::String::as_str),
                Some(*want),
                "{:?}: {got:?}",
                src
            );
        }
        assert!(
            errors(b"\xEF\xBB\xBFa = 1").is_empty(),
            "leading BOM is allowed"
        );
    }

    #[test]
    fn unquote_handles_go_escapes() {
        let cases = [
            (r#""a\nb""#, "a\nb"),
            (r#""\a\b\f\r\t\v\\\"""#, "\x07\x08\x0c\r\t\x0b\\\""),
            (r#""\x41\101\u00e9\U0001F600""#, "AAé😀"),
            (r#""\xc3\xa9""#, "é"),
            (r#""${1}""#, "${1}"),
            ("`a\\nb\r\nc`", "a\\nb\nc"),
            (r#""""#, ""),
        ];
        for (raw, want) in cases {
            assert_eq!(unquote(raw), want, "{raw}");
        }
    }

    #[test]
    fn identifiers() {
        assert!(is_valid_identifier("my_job"));
        assert!(is_valid_identifier("_x9"));
        assert!(is_valid_identifier("é"));
        assert!(!is_valid_identifier("my-job"));
        assert!(!is_valid_identifier("with space"));
        assert!(!is_valid_identifier("true"));
        assert!(!is_valid_identifier("9a"));
        assert!(!is_valid_identifier(""));
    }
}
