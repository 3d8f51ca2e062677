//! Stage 2: elastic tabstops, Go's `text/tabwriter` with minwidth 0, tabwidth 8, padding 1,
//! padchar ' ', `DiscardEmptyColumns | TabIndent` and escape characters passed through. Alloy's
//! alignment of `=` and of trailing comments is whatever this algorithm makes of its output, so
//! it is reproduced rather than approximated.

use super::ESCAPE;

const TAB_WIDTH: usize = 8;
const PADDING: usize = 1;

#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    /// Bytes of text, escape characters included.
    size: usize,
    /// Width in characters, escape characters excluded.
    width: usize,
    /// Terminated by a hard tab (indentation) rather than a soft one (alignment).
    htab: bool,
}

#[derive(Default)]
struct Aligner {
    out: Vec<u8>,
    /// Text of the buffered lines, without the separators.
    buf: Vec<u8>,
    /// How much of the current cell's text has been measured.
    measured: usize,
    cell: Cell,
    escaped: bool,
    lines: Vec<Vec<Cell>>,
    widths: Vec<usize>,
}

/// Aligns the cells (text terminated by `\t` or `\v`) of consecutive lines into columns. A
/// formfeed ends the run of lines that align with each other.
pub(super) fn align_columns(input: &[u8]) -> Vec<u8> {
    let mut a = Aligner {
        lines: vec![Vec::new()],
        ..Aligner::default()
    };
    a.write(input);
    a.flush();
    a.out
}

impl Aligner {
    fn write(&mut self, input: &[u8]) {
        let mut start = 0;
        for (i, &ch) in input.iter().enumerate() {
            if self.escaped {
                if ch == ESCAPE {
                    self.append(&input[start..=i]);
                    start = i + 1;
                    self.measure();
                    // The two escape characters take no room in the output.
                    self.cell.width = self.cell.width.saturating_sub(2);
                    self.escaped = false;
                }
                continue;
            }
            match ch {
                b'\t' | b'\x0b' | b'\n' | b'\x0c' => {
                    self.append(&input[start..i]);
                    self.measure();
                    start = i + 1;
                    let cells = self.terminate_cell(ch == b'\t');
                    if ch == b'\n' || ch == b'\x0c' {
                        self.lines.push(Vec::new());
                        // A line with a single cell cannot affect the columns of later lines, so
                        // everything so far can be laid out now.
                        if ch == b'\x0c' || cells == 1 {
                            self.flush();
                        }
                    }
                }
                ESCAPE => {
                    self.append(&input[start..i]);
                    self.measure();
                    start = i;
                    self.escaped = true;
                }
                _ => {}
            }
        }
        self.append(&input[start..]);
    }

    fn append(&mut self, text: &[u8]) {
        self.buf.extend_from_slice(text);
        self.cell.size += text.len();
    }

    fn measure(&mut self) {
        self.cell.width += char_count(&self.buf[self.measured..]);
        self.measured = self.buf.len();
    }

    fn terminate_cell(&mut self, htab: bool) -> usize {
        self.cell.htab = htab;
        let cell = std::mem::take(&mut self.cell);
        match self.lines.last_mut() {
            Some(line) => {
                line.push(cell);
                line.len()
            }
            None => {
                self.lines.push(vec![cell]);
                1
            }
        }
    }

    fn flush(&mut self) {
        if self.cell.size > 0 {
            if self.escaped {
                self.measure();
                self.cell.width = self.cell.width.saturating_sub(2);
                self.escaped = false;
            }
            self.terminate_cell(false);
        }
        let n = self.lines.len();
        self.format(0, 0, n);
        self.buf.clear();
        self.measured = 0;
        self.cell = Cell::default();
        self.escaped = false;
        self.lines.clear();
        self.lines.push(Vec::new());
        self.widths.clear();
    }

    /// Lays out lines `line0..line1` (text starting at `pos`), finding for each column the runs of
    /// consecutive lines that have a cell in it. The last cell of a line is not in any column.
    fn format(&mut self, pos: usize, mut line0: usize, line1: usize) -> usize {
        let mut pos = pos;
        let column = self.widths.len();
        let mut this = line0;
        while this < line1 {
            if column + 1 < self.lines[this].len() {
                pos = self.write_lines(pos, line0, this);
                line0 = this;
                let mut width = 0;
                let mut discardable = true;
                while this < line1 {
                    let line = &self.lines[this];
                    if column + 1 < line.len() {
                        let c = line[column];
                        width = width.max(c.width + PADDING);
                        if c.width > 0 || c.htab {
                            discardable = false;
                        }
                        this += 1;
                    } else {
                        break;
                    }
                }
                if discardable {
                    width = 0;
                }
                self.widths.push(width);
                pos = self.format(pos, line0, this);
                self.widths.pop();
                line0 = this;
            }
            this += 1;
        }
        self.write_lines(pos, line0, line1)
    }

    fn write_lines(&mut self, pos: usize, line0: usize, line1: usize) -> usize {
        let mut pos = pos;
        for i in line0..line1 {
            // Leading empty cells are indentation and padded with tabs.
            let mut leading = true;
            for j in 0..self.lines[i].len() {
                let c = self.lines[i][j];
                if c.size == 0 {
                    if let Some(&w) = self.widths.get(j) {
                        self.pad(c.width, w, leading);
                    }
                } else {
                    leading = false;
                    self.out.extend_from_slice(&self.buf[pos..pos + c.size]);
                    pos += c.size;
                    if let Some(&w) = self.widths.get(j) {
                        self.pad(c.width, w, false);
                    }
                }
            }
            if i + 1 == self.lines.len() {
                // The unterminated text of the last line.
                let end = pos + self.cell.size;
                self.out.extend_from_slice(&self.buf[pos..end]);
                pos = end;
            } else {
                self.out.push(b'\n');
            }
        }
        pos
    }

    fn pad(&mut self, text_width: usize, cell_width: usize, tabs: bool) {
        if tabs {
            let cell_width = cell_width.div_ceil(TAB_WIDTH) * TAB_WIDTH;
            let n = cell_width.saturating_sub(text_width);
            self.out
                .extend(std::iter::repeat_n(b'\t', n.div_ceil(TAB_WIDTH)));
        } else {
            self.out.extend(std::iter::repeat_n(
                b' ',
                cell_width.saturating_sub(text_width),
            ));
        }
    }
}

/// Characters in UTF-8 text; each escape byte counts as one, as in Go's `utf8.RuneCount`.
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xc0) != 0x80).count()
}
