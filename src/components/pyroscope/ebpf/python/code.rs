//! Reads a CPython code object out of a process: its qualified name, file name, first line
//! and location table, and maps an instruction to its line (the 3.11+ location table format,
//! CPython's Objects/locations.md).

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::Arc;

use super::offsets::CodeLayout;

/// Longest name or path read (longer ones are cut).
const MAX_STRING: usize = 4096;
/// Largest location table read; a function this large is rare, and lines past it show as
/// the function's first line.
const MAX_LINETABLE: usize = 64 * 1024;

/// What a profile needs of one code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub qualname: Arc<str>,
    pub filename: Arc<str>,
    pub firstlineno: i32,
    /// Address of its first instruction in the process.
    pub start: u64,
    pub linetable: Vec<u8>,
}

impl Code {
    /// Bytes this cache entry holds, for bounding the cache.
    pub fn size(&self) -> usize {
        self.qualname.len() + self.filename.len() + self.linetable.len() + 64
    }

    /// The line of the instruction at `instr` (a frame's last instruction); the first line
    /// when it is before the first instruction (a frame that has not started yet) or has no
    /// location.
    pub fn line(&self, instr: u64) -> i32 {
        if instr < self.start {
            return self.firstlineno;
        }
        let unit = (instr - self.start) / 2;
        line_at(&self.linetable, self.firstlineno, unit).unwrap_or(self.firstlineno)
    }
}

/// Why a code object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error("reading {len} bytes at {addr:#x}: {source}")]
    Read {
        addr: u64,
        len: usize,
        source: std::io::Error,
    },
    #[error("string at {0:#x} is not a compact unicode object")]
    NotCompact(u64),
}

fn read(mem: &File, addr: u64, len: usize) -> Result<Vec<u8>, CodeError> {
    let mut buf = vec![0u8; len];
    mem.read_exact_at(&mut buf, addr)
        .map_err(|source| CodeError::Read { addr, len, source })?;
    Ok(buf)
}

fn word(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// Reads the code object at `addr` from process memory `mem` (`/proc/<pid>/mem`).
pub fn read_code(mem: &File, addr: u64, l: &CodeLayout) -> Result<Code, CodeError> {
    let head = read(mem, addr, l.code)?;
    let firstlineno = head
        .get(l.firstlineno..l.firstlineno + 4)
        .and_then(|w| w.try_into().ok())
        .map_or(0, i32::from_ne_bytes);
    let qualname = read_str(mem, word(&head, l.qualname), l)?;
    let filename = read_str(mem, word(&head, l.filename), l)?;
    let table = word(&head, l.linetable);
    let table_head = read(mem, table, l.bytes_data)?;
    let len = (word(&table_head, l.var_size) as usize).min(MAX_LINETABLE);
    let linetable = read(mem, table + l.bytes_data as u64, len)?;
    Ok(Code {
        qualname: qualname.into(),
        filename: filename.into(),
        firstlineno,
        start: addr + l.code as u64,
        linetable,
    })
}

/// A `str` object's text. Names and paths are compact strings (their text follows the
/// header): ASCII ones right after `PyASCIIObject`, others after `PyCompactUnicodeObject` in
/// 1, 2 or 4 bytes per character.
fn read_str(mem: &File, addr: u64, l: &CodeLayout) -> Result<String, CodeError> {
    let head = read(mem, addr, l.compact_size)?;
    let len = (word(&head, 16) as usize).min(MAX_STRING);
    let state = head.get(32).copied().unwrap_or(0);
    let kind = ((state >> 2) & 7) as usize;
    let compact = state & 0x20 != 0;
    let ascii = state & 0x40 != 0;
    if !compact {
        return Err(CodeError::NotCompact(addr));
    }
    if ascii {
        let text = read(mem, addr + l.ascii_size as u64, len)?;
        return Ok(String::from_utf8_lossy(&text).into_owned());
    }
    let kind = kind.clamp(1, 4);
    let raw = read(mem, addr + l.compact_size as u64, len * kind)?;
    Ok(raw
        .chunks_exact(kind)
        .map(|c| {
            let mut v = [0u8; 4];
            v[..kind].copy_from_slice(c);
            char::from_u32(u32::from_le_bytes(v)).unwrap_or(char::REPLACEMENT_CHARACTER)
        })
        .collect())
}

/// Reads a location table varint: 6 bits per byte, bit 6 set when more follow.
fn varint(t: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = t.get(*i) {
        *i += 1;
        v |= u64::from(b & 63) << shift.min(63);
        shift += 6;
        if b & 64 == 0 {
            break;
        }
    }
    v
}

/// A signed varint: the sign in the lowest bit.
fn svarint(t: &[u8], i: &mut usize) -> i64 {
    let v = varint(t, i);
    if v & 1 != 0 {
        -((v >> 1) as i64)
    } else {
        (v >> 1) as i64
    }
}

/// The line of code unit `unit` from a location table, starting at `first`; `None` past the
/// table's end or for an instruction without a location.
pub fn line_at(t: &[u8], first: i32, unit: u64) -> Option<i32> {
    let mut line = i64::from(first);
    let mut at = 0u64;
    let mut i = 0;
    while let Some(&b) = t.get(i) {
        i += 1;
        let code = (b >> 3) & 15;
        let units = u64::from(b & 7) + 1;
        let mut located = true;
        match code {
            15 => located = false,
            14 => {
                line += svarint(t, &mut i);
                // End line, start and end columns.
                for _ in 0..3 {
                    varint(t, &mut i);
                }
            }
            13 => line += svarint(t, &mut i),
            10..=12 => {
                line += i64::from(code - 10);
                i += 2;
            }
            _ => i += 1,
        }
        if unit < at + units {
            return located.then(|| line.clamp(0, i32::MAX as i64) as i32);
        }
        at += units;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_tables_give_lines() {
        // Entries: 0x80 | code << 3 | (units - 1).
        // A: code 13 (no columns), delta +1 (svarint 2), 2 units -> line 11 for units 0-1.
        // B: code 11 (one-line form, +1), two column bytes, 1 unit -> line 12 for unit 2.
        // C: code 15 (no location), 1 unit -> unit 3 has no line.
        // D: code 14 (long form), delta -2 (svarint 5), end line, two columns, 3 units -> 10.
        // E: code 0 (short form), one column byte, 1 unit -> still 10.
        let t = [
            0x80 | 13 << 3 | 1,
            2,
            0x80 | 11 << 3,
            4,
            8,
            0x80 | 15 << 3,
            0x80 | 14 << 3 | 2,
            5,
            0,
            1,
            9,
            0x80,
            7,
        ];
        // (code unit, expected line)
        let cases = [
            (0, Some(11)),
            (1, Some(11)),
            (2, Some(12)),
            (3, None),
            (4, Some(10)),
            (6, Some(10)),
            (7, Some(10)),
            (8, None),
        ];
        for (unit, want) in cases {
            assert_eq!(line_at(&t, 10, unit), want, "unit {unit}");
        }
    }

    #[test]
    fn varints_are_six_bits_per_byte() {
        // (bytes, unsigned, signed)
        let cases: [(&[u8], u64, i64); 4] = [
            (&[0], 0, 0),
            (&[3], 3, -1),
            (&[64 | 1, 1], 65, -32),
            (&[64 | 2, 2], 130, 65),
        ];
        for (bytes, u, s) in cases {
            let (mut i, mut j) = (0, 0);
            assert_eq!(varint(bytes, &mut i), u);
            assert_eq!(svarint(bytes, &mut j), s);
            assert_eq!(i, bytes.len());
        }
    }
}
