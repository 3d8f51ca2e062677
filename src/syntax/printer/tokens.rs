//! Stage 1's output: a token stream with abstract whitespace. Whitespace is buffered until the
//! next token rather than written at once, because comment placement decides afterwards which
//! of it survives; text is wrapped in escapes where the aligner and the trimmer must leave it be.

use super::{ESCAPE, Pos, Printer};

/// Abstract whitespace, buffered until the next token so that comments can be slotted in front of
/// it and so that nothing is emitted after the last token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ws {
    /// A buffered entry cancelled by comment placement.
    Ignore,
    Blank,
    /// Column separator: text before it is aligned with the same column on adjacent lines.
    VTab,
    /// Line break that keeps the current alignment run going.
    Newline,
    /// Line break that ends the alignment run (and is printed as a plain newline).
    Formfeed,
    Indent,
    Unindent,
}

impl Ws {
    fn byte(self) -> Option<u8> {
        match self {
            Ws::Blank => Some(b' '),
            Ws::VTab => Some(b'\x0b'),
            Ws::Newline => Some(b'\n'),
            Ws::Formfeed => Some(b'\x0c'),
            Ws::Ignore | Ws::Indent | Ws::Unindent => None,
        }
    }
}

/// What was written last; only needed to keep `1` `.` and `/` `*` from fusing when re-scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Last {
    Space,
    Integer,
    Div,
    Other,
}

/// How text is protected from the column aligner and the trimmer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Protect {
    /// Punctuation and identifiers: nothing to protect.
    None,
    /// String literals: each line is protected, the line breaks stay visible to the aligner so it
    /// lays out the surrounding lines exactly as Alloy does.
    Lines,
    /// Comments: protected as a whole, as Alloy does.
    Whole,
}

/// Alloy's whitespace buffer has a fixed capacity and is force-flushed when full.
pub(super) const WS_CAPACITY: usize = 16;

impl Printer<'_> {
    // --- the token interface used by the walker ---

    pub(super) fn ws(&mut self, w: Ws) {
        if w == Ws::Ignore {
            return;
        }
        if self.ws.len() == WS_CAPACITY {
            self.write_ws(WS_CAPACITY);
        }
        self.ws.push(w);
        self.last_tok = Last::Space;
    }

    /// Pins the position of the next token to a real source offset.
    pub(super) fn at(&mut self, offset: usize) {
        self.pos = self.pos_at(offset);
    }

    /// Punctuation or an operator.
    pub(super) fn punct(&mut self, text: &str) {
        let first = text.as_bytes().first().copied().unwrap_or(b' ');
        let fuses = matches!(
            (self.last_tok, first),
            (Last::Integer, b'.') | (Last::Div, b'*')
        );
        if fuses && !self.ws.iter().any(|w| w.byte().is_some()) {
            self.ws.push(Ws::Blank);
        }
        self.last_tok = if text == "/" { Last::Div } else { Last::Other };
        self.emit(text, Protect::None);
    }

    pub(super) fn word(&mut self, text: &str, kind: Last, protect: Protect) {
        self.last_tok = kind;
        self.emit(text, protect);
    }

    fn emit(&mut self, text: &str, protect: Protect) {
        let next = self.pos;
        self.flush(next, false);
        self.write_string(Some(next), text, protect);
    }

    // --- raw output ---

    pub(super) fn write_ws(&mut self, n: usize) {
        let n = n.min(self.ws.len());
        for i in 0..n {
            match self.ws[i] {
                Ws::Ignore => {}
                Ws::Indent => self.indent += 1,
                Ws::Unindent => self.indent = self.indent.saturating_sub(1),
                w => {
                    if let Some(b) = w.byte() {
                        self.write_byte(b, 1);
                    }
                }
            }
        }
        self.ws.drain(..n);
    }

    fn write_indent(&mut self) {
        let depth = self.indent;
        self.out.extend(std::iter::repeat_n(b'\t', depth));
        self.pos.offset += depth;
        self.out_col += depth;
    }

    pub(super) fn write_byte(&mut self, ch: u8, n: usize) {
        if self.out_col == 1 {
            self.write_indent();
        }
        self.out.extend(std::iter::repeat_n(ch, n));
        self.pos.offset += n;
        if ch == b'\n' || ch == b'\x0c' {
            self.pos.line += n;
            self.out_col = 1;
        } else {
            self.out_col += n;
        }
    }

    pub(super) fn write_string(&mut self, pos: Option<Pos>, s: &str, protect: Protect) {
        if self.out_col == 1 {
            self.write_indent();
        }
        if let Some(pos) = pos {
            self.pos = pos;
        }
        match protect {
            Protect::None => self.out.extend_from_slice(s.as_bytes()),
            Protect::Whole => {
                self.out.push(ESCAPE);
                self.out.extend_from_slice(s.as_bytes());
                self.out.push(ESCAPE);
            }
            Protect::Lines => {
                for (i, line) in s.split('\n').enumerate() {
                    if i > 0 {
                        self.out.push(b'\n');
                    }
                    if !line.is_empty() {
                        self.out.push(ESCAPE);
                        self.out.extend_from_slice(line.as_bytes());
                        self.out.push(ESCAPE);
                    }
                }
            }
        }
        // Only `\n` counts: the lexer numbers source lines by it, and a form feed inside a
        // comment or raw string is protected text, not a tabwriter line break. Counting it
        // made the next line look already broken, so it was joined onto a `//` comment.
        let bytes = s.as_bytes();
        let breaks = bytes.iter().filter(|&&b| b == b'\n').count();
        self.pos.offset += bytes.len();
        if breaks > 0 {
            let last_break = bytes.iter().rposition(|&b| b == b'\n').unwrap_or(0);
            self.pos.line += breaks;
            self.out_col = bytes.len() - last_break;
        } else {
            self.out_col += bytes.len();
        }
        self.last = Some(self.pos);
    }
}
