//! Go's function table (`.gopclntab`), which every Go binary keeps even when stripped, because
//! the runtime needs it for tracebacks and garbage collection.
//!
//! Only the layout of Go 1.18 and later is understood (header magic `0xfffffff0` for 1.18/1.19,
//! `0xfffffff1` for 1.20+; both share the layout). The header is followed by the tables at the
//! offsets it names; of those, this reader needs:
//! * `functab` at `pclnOffset`: `nfunc + 1` pairs of `(entryoff u32, funcoff u32)`, sorted,
//!   `entryoff` relative to `textStart`; the last pair only marks the end of the text.
//! * `_func` records at `pclnOffset + funcoff`, starting with `entryOff u32, nameOff i32`.
//! * `funcnametab` at `funcnameOffset`: NUL-terminated names.
//! * `pctab` at `pctabOffset`: the pc-value tables; `_func.pcsp` is the offset of a function's
//!   SP-delta table in it ([`GoTable::frame`], for stepping Go frames without DWARF).
//!
//! Only the function table is kept in memory (8 bytes per function); `_func` records, names and
//! pc-value tables are read from the file when an address is first resolved, which the caller's
//! caches make rare.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::elf::SectionRange;

const MAGIC_1_18: u32 = 0xffff_fff0;
const MAGIC_1_20: u32 = 0xffff_fff1;
/// Go function names are short; the longest generic instantiations are still far below this.
const MAX_NAME: usize = 4096;

/// `_func` records, up to and including `nfuncdata`: Go 1.20 added `startLine` (4 bytes) after
/// `cuOffset`, which moved `funcID` and `flag` but nothing before them.
const FUNC_LEN_1_18: usize = 40;
const FUNC_LEN_1_20: usize = 44;
/// Byte offsets in a `_func` record: `entryOff, nameOff, args, deferreturn` precede `pcsp`.
const FUNC_PCSP: usize = 16;
const FUNC_FLAG_1_18: usize = 37;
const FUNC_FLAG_1_20: usize = 41;
/// Bits of `_func.flag` (`funcFlag_*` in 1.17-1.20, `abi.FuncFlag*` since 1.21; same values).
///
/// Top frames come from this flag for every layout read here. Go's traceback (gentraceback up
/// to 1.20, the unwinder since 1.21) stops at a TOPFRAME function and calls the walk complete;
/// the assembler sets it from the `TOPFRAME` attribute of the `TEXT` directive, which
/// `runtime.rt0_go`, `runtime.mstart` and `runtime.goexit` carry on every architecture, and
/// `runtime.sigtramp` on most systems (Linux included: a signal handler's stack, whose
/// interrupted code is only reachable through the signal context, not by stepping). The
/// flag byte exists since Go 1.17 (before the 1.18 layout), so no funcID or name fallback is
/// needed: funcID numbering is a per-version enum, and matching it or names would only
/// approximate what the flag states directly.
const FLAG_TOPFRAME: u8 = 1 << 0;
/// The function writes SP with a value the pcsp table cannot describe (context switches:
/// `runtime.mcall`, `gogo`, `systemstack`, `morestack`, `asmcgocall`, ...). Go's traceback
/// stops there and treats the walk as incomplete.
const FLAG_SPWRITE: u8 = 1 << 1;
/// Bytes read from a pc-value table per read; an SP-delta table is usually a few dozen bytes.
const TABLE_CHUNK: usize = 64;

#[derive(Debug, thiserror::Error)]
pub(crate) enum GoError {
    #[error("reading .gopclntab: {0}")]
    Io(#[from] io::Error),
    #[error("unsupported .gopclntab magic {0:#010x} (only Go 1.18+ layouts are read)")]
    UnknownMagic(u32),
    #[error("malformed .gopclntab: {0}")]
    Malformed(&'static str),
}

/// How to leave the Go function containing a pc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GoFrame {
    /// The function's entry address (same address space as the `vaddr` passed in).
    pub entry: u64,
    /// pcsp value at the pc: bytes the function has pushed/allocated since entry. The return
    /// address is at SP + sp_delta, and the caller's SP is SP + sp_delta + 8 (amd64).
    pub sp_delta: u32,
    /// The function ends a goroutine or thread stack (`funcFlag_TOPFRAME`: `runtime.goexit`,
    /// `runtime.mstart`, `runtime.rt0_go`, and `runtime.sigtramp` for the signal handler), so
    /// unwinding must stop here as complete.
    pub top: bool,
    /// The function switches stacks by writing SP (`funcFlag_SPWRITE`: `runtime.mcall`,
    /// `gogo`, `systemstack`, `morestack`, `asmcgocall`, ...), so `sp_delta` need not lead to
    /// its caller: this frame is real, but unwinding must stop after it as incomplete, as Go's
    /// own traceback does. (In `systemstack` and `mcall` the slot `sp_delta` points at holds
    /// whatever is on the g0 stack; `systemstack` plants `runtime.mstart` there on purpose.)
    #[allow(
        dead_code,
        reason = "for the unwinder's step, which does not read it yet"
    )]
    pub spwrite: bool,
}

#[derive(Debug)]
pub(crate) struct GoTable {
    text_start: u64,
    big_endian: bool,
    /// Go 1.20+ `_func` layout (magic `0xfffffff1`), with `startLine`.
    layout_1_20: bool,
    /// `minLC`: pc-value tables count pc deltas in these units (1 on x86, 4 on arm64).
    pc_quantum: u8,
    /// `(entryoff, funcoff)` pairs, `nfunc + 1` of them.
    functab: Box<[(u32, u32)]>,
    /// File offsets of the tables, and the end of the section for bounds checks. `pctab` is
    /// only checked when a table is read: name lookups do not need it.
    funcdata: u64,
    funcnames: u64,
    pctab: u64,
    end: u64,
}

impl GoTable {
    /// Reads the header and the function table of the section.
    ///
    /// `text_addr` (the `.text` section address) stands in for a zero `textStart`, which is what
    /// position-independent binaries carry in the file (the runtime relocates it at start).
    pub fn load(
        file: &File,
        section: SectionRange,
        text_addr: Option<u64>,
    ) -> Result<Self, GoError> {
        let mut head = [0u8; 8];
        file.read_exact_at(&mut head, section.offset)?;
        let le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let be = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let (big_endian, magic) = match (le, be) {
            (MAGIC_1_18 | MAGIC_1_20, _) => (false, le),
            (_, MAGIC_1_18 | MAGIC_1_20) => (true, be),
            _ => return Err(GoError::UnknownMagic(le)),
        };
        if head[4] != 0 || head[5] != 0 {
            return Err(GoError::Malformed("header padding is not zero"));
        }
        let ptr_size = usize::from(head[7]);
        if ptr_size != 4 && ptr_size != 8 {
            return Err(GoError::Malformed("pointer size is neither 4 nor 8"));
        }

        // nfunc, nfiles, textStart, funcnameOffset, cuOffset, filetabOffset, pctabOffset,
        // pclnOffset: eight pointer-sized words.
        let mut words = [0u8; 64];
        let words = &mut words[..8 * ptr_size];
        file.read_exact_at(words, section.offset + 8)?;
        let word = |i: usize| -> u64 {
            let b = &words[i * ptr_size..(i + 1) * ptr_size];
            let mut v = 0u64;
            if big_endian {
                for &x in b {
                    v = (v << 8) | u64::from(x);
                }
            } else {
                for &x in b.iter().rev() {
                    v = (v << 8) | u64::from(x);
                }
            }
            v
        };
        let nfunc = word(0);
        let mut text_start = word(2);
        let funcname_offset = word(3);
        let pctab_offset = word(6);
        let pcln_offset = word(7);
        if text_start == 0 {
            text_start =
                text_addr.ok_or(GoError::Malformed("no textStart and no .text section"))?;
        }

        let size = section.size;
        let table_bytes = nfunc
            .checked_add(1)
            .and_then(|n| n.checked_mul(8))
            .ok_or(GoError::Malformed("function count overflows"))?;
        if pcln_offset
            .checked_add(table_bytes)
            .is_none_or(|end| end > size)
        {
            return Err(GoError::Malformed("function table exceeds the section"));
        }
        if funcname_offset >= size {
            return Err(GoError::Malformed("name table offset exceeds the section"));
        }
        let table_len = usize::try_from(table_bytes)
            .map_err(|_| GoError::Malformed("function table too large"))?;
        let mut raw = vec![0u8; table_len];
        file.read_exact_at(&mut raw, section.offset + pcln_offset)?;
        let u32_at = |b: &[u8]| {
            let a = [b[0], b[1], b[2], b[3]];
            if big_endian {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let functab: Box<[(u32, u32)]> = raw
            .chunks_exact(8)
            .map(|c| (u32_at(&c[..4]), u32_at(&c[4..])))
            .collect();
        if functab.windows(2).any(|w| w[0].0 > w[1].0) {
            return Err(GoError::Malformed("function table is not sorted"));
        }

        Ok(GoTable {
            text_start,
            big_endian,
            layout_1_20: magic == MAGIC_1_20,
            pc_quantum: head[6],
            functab,
            funcdata: section.offset + pcln_offset,
            funcnames: section.offset + funcname_offset,
            pctab: section.offset.saturating_add(pctab_offset),
            end: section.offset + size,
        })
    }

    pub fn functions(&self) -> usize {
        self.functab.len().saturating_sub(1)
    }

    /// The function table entry of the function containing link-time address `vaddr`: its
    /// `(entryoff, funcoff)` and the `entryoff` of the next function (the end of its range).
    fn find(&self, vaddr: u64) -> Option<(u32, u32, u32)> {
        let off = u32::try_from(vaddr.checked_sub(self.text_start)?).ok()?;
        let idx = self.functab.partition_point(|&(entry, _)| entry <= off);
        // Before the first function (`checked_sub`), or at/after the end marker (no next).
        let idx = idx.checked_sub(1)?;
        let &(entry, funcoff) = self.functab.get(idx)?;
        let &(next, _) = self.functab.get(idx + 1)?;
        Some((entry, funcoff, next))
    }

    /// The first `buf.len()` bytes of the `_func` record at `funcoff`, checked against the
    /// function table entry it belongs to.
    fn read_func(
        &self,
        file: &File,
        entry: u32,
        funcoff: u32,
        buf: &mut [u8],
    ) -> Result<(), GoError> {
        let func = self.funcdata + u64::from(funcoff);
        if func + buf.len() as u64 > self.end {
            return Err(GoError::Malformed("function record outside the section"));
        }
        file.read_exact_at(buf, func)?;
        if self.u32_at(buf, 0)? != entry {
            return Err(GoError::Malformed(
                "function record does not match its table entry",
            ));
        }
        Ok(())
    }

    fn u32_at(&self, buf: &[u8], at: usize) -> Result<u32, GoError> {
        let b: [u8; 4] = buf
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or(GoError::Malformed("short function record"))?;
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    /// The name of the function containing link-time address `vaddr`, if it is Go code.
    pub fn lookup(&self, file: &File, vaddr: u64) -> Result<Option<String>, GoError> {
        let Some((entry, funcoff, _)) = self.find(vaddr) else {
            return Ok(None);
        };
        let mut rec = [0u8; 8];
        self.read_func(file, entry, funcoff, &mut rec)?;
        let name_off = self.u32_at(&rec, 4)? as i32;
        let Ok(name_off) = u64::try_from(name_off) else {
            return Err(GoError::Malformed("negative name offset"));
        };
        self.read_name(file, self.funcnames + name_off).map(Some)
    }

    /// The frame of the function containing `vaddr` (a link-time virtual address, same
    /// convention as `lookup`): `vaddr` is the pc to evaluate (the caller passes pc-1 for
    /// return addresses). `None` when `vaddr` is outside the Go text or the table has no pcsp
    /// entry covering it (no table at all, or `vaddr` in the padding after the function's code,
    /// which the function table's ranges include but the pcsp table does not).
    pub fn frame(&self, file: &File, vaddr: u64) -> Result<Option<GoFrame>, GoError> {
        let Some((entry, funcoff, next)) = self.find(vaddr) else {
            return Ok(None);
        };
        let (len, flag_at) = if self.layout_1_20 {
            (FUNC_LEN_1_20, FUNC_FLAG_1_20)
        } else {
            (FUNC_LEN_1_18, FUNC_FLAG_1_18)
        };
        let mut rec = [0u8; FUNC_LEN_1_20];
        let rec = rec
            .get_mut(..len)
            .ok_or(GoError::Malformed("short function record"))?;
        self.read_func(file, entry, funcoff, rec)?;
        let pcsp = self.u32_at(rec, FUNC_PCSP)?;
        let flag = *rec
            .get(flag_at)
            .ok_or(GoError::Malformed("short function record"))?;
        // Offset 0 is reserved in pctab to mean "no table" (the linker pads its first byte).
        if pcsp == 0 {
            return Ok(None);
        }
        // `find` guarantees text_start + entry <= vaddr < text_start + next.
        let target = vaddr - self.text_start - u64::from(entry);
        let func_len = next - entry;
        let Some(value) = self.pc_value(file, pcsp, target, func_len)? else {
            return Ok(None);
        };
        let sp_delta = u32::try_from(value).map_err(|_| GoError::Malformed("negative SP delta"))?;
        Ok(Some(GoFrame {
            entry: vaddr - target,
            sp_delta,
            top: flag & FLAG_TOPFRAME != 0,
            spwrite: flag & FLAG_SPWRITE != 0,
        }))
    }

    /// Evaluates the pc-value table at `table` (an offset into `pctab`) at `target`, an offset
    /// from the function's entry, as the runtime's `pcvalue` does.
    ///
    /// The table is a sequence of (value delta, pc delta) pairs of unsigned varints; the value
    /// delta is zigzag-encoded (low bit = sign) and the first one is relative to -1; the pc delta
    /// counts `minLC` units. Each pair gives the value for `[pc, pc + delta)` after applying it.
    /// A zero value-delta byte ends the table, except while the pc is still at the entry (the
    /// runtime lets the first pair have a zero value delta).
    fn pc_value(
        &self,
        file: &File,
        table: u32,
        target: u64,
        func_len: u32,
    ) -> Result<Option<i32>, GoError> {
        if self.pc_quantum == 0 {
            return Err(GoError::Malformed("zero pc quantum"));
        }
        let start = self.pctab.saturating_add(u64::from(table));
        if start >= self.end {
            return Err(GoError::Malformed("pc-value table outside the section"));
        }
        let mut reader = TableReader::new(file, start, self.end);
        let quantum = u64::from(self.pc_quantum);
        let mut pc = 0u64;
        let mut value: i32 = -1;
        // Each pair after the first advances the pc in a table the linker wrote, so a function
        // has at most one pair per byte of code; more means a table that never advances.
        for _ in 0..=u64::from(func_len) + 1 {
            let first = reader.byte()?;
            if first == 0 && pc != 0 {
                return Ok(None);
            }
            let uv = reader.varint(first)?;
            // Zigzag: even values are non-negative, odd ones negative (1 is -1, 3 is -2, ...).
            let delta = ((uv >> 1) as i32) ^ -((uv & 1) as i32);
            value = value.wrapping_add(delta);
            let b = reader.byte()?;
            pc += u64::from(reader.varint(b)?) * quantum;
            if target < pc {
                return Ok(Some(value));
            }
        }
        Err(GoError::Malformed("pc-value table does not advance"))
    }

    fn read_name(&self, file: &File, at: u64) -> Result<String, GoError> {
        let mut name = Vec::new();
        let mut pos = at;
        let mut chunk = [0u8; 128];
        loop {
            let avail = self.end.saturating_sub(pos).min(chunk.len() as u64) as usize;
            if avail == 0 || name.len() >= MAX_NAME {
                return Err(GoError::Malformed("unterminated function name"));
            }
            let buf = &mut chunk[..avail];
            file.read_exact_at(buf, pos)?;
            if let Some(nul) = buf.iter().position(|&b| b == 0) {
                name.extend_from_slice(&buf[..nul]);
                return Ok(String::from_utf8_lossy(&name).into_owned());
            }
            name.extend_from_slice(buf);
            pos += avail as u64;
        }
    }
}

/// Sequential reads of a pc-value table, a small chunk at a time, never past the section.
struct TableReader<'a> {
    file: &'a File,
    next: u64,
    end: u64,
    buf: [u8; TABLE_CHUNK],
    len: usize,
    pos: usize,
}

impl<'a> TableReader<'a> {
    fn new(file: &'a File, start: u64, end: u64) -> Self {
        TableReader {
            file,
            next: start,
            end,
            buf: [0; TABLE_CHUNK],
            len: 0,
            pos: 0,
        }
    }

    fn byte(&mut self) -> Result<u8, GoError> {
        if self.pos >= self.len {
            let n = self.end.saturating_sub(self.next).min(TABLE_CHUNK as u64) as usize;
            if n == 0 {
                return Err(GoError::Malformed("pc-value table runs past the section"));
            }
            let buf = self
                .buf
                .get_mut(..n)
                .ok_or(GoError::Malformed("pc-value table chunk"))?;
            self.file.read_exact_at(buf, self.next)?;
            self.next += n as u64;
            self.len = n;
            self.pos = 0;
        }
        let b = *self
            .buf
            .get(self.pos)
            .ok_or(GoError::Malformed("pc-value table chunk"))?;
        self.pos += 1;
        Ok(b)
    }

    /// A little-endian base-128 varint of at most 32 bits whose first byte is `first`. Bits
    /// past the 32nd are dropped, as the runtime does; a sixth byte is malformed.
    fn varint(&mut self, first: u8) -> Result<u32, GoError> {
        let mut v = u32::from(first & 0x7f);
        let mut b = first;
        let mut shift = 0;
        while b & 0x80 != 0 {
            shift += 7;
            if shift > 28 {
                return Err(GoError::Malformed("varint longer than 32 bits"));
            }
            b = self.byte()?;
            v |= u32::from(b & 0x7f) << shift;
        }
        Ok(v)
    }
}

#[cfg(test)]
#[path = "gopclntab_frame_tests.rs"]
mod frame_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// A function of a synthetic table.
    struct Func {
        entry: u32,
        name: &'static str,
        pcsp: Pcsp,
        flag: u8,
    }

    enum Pcsp {
        /// `pcsp` 0: the function has no table.
        Absent,
        /// Encoded table bytes, appended to `pctab`.
        Table(&'static [u8]),
        /// A raw `pcsp` value, for out-of-range offsets.
        Raw(u32),
    }

    /// The hand-encoded SP-delta tables of [`synthetic`]'s functions. Each pair is (zigzag
    /// value delta, pc delta); the first value delta applies to -1; `00` ends the table.
    ///
    /// main.main: `02 04` = +1 → 0 for [0x0, 0x4); `30 2c` = +0x18 → 0x18 for [0x4, 0x30);
    /// `2f 10` = -0x18 → 0 for [0x30, 0x40). It fills its range (0x40 bytes).
    const MAIN_PCSP: &[u8] = &[0x02, 0x04, 0x30, 0x2c, 0x2f, 0x10, 0x00];
    /// main.hotSpin, with two-byte varints: `02 05` → 0 for [0x0, 0x5); `90 08` = zigzag 0x410
    /// = +0x208, `a0 01` = 0xa0 → 0x208 for [0x5, 0xa5); `8f 08` = zigzag 0x40f = -0x208,
    /// `0b` → 0 for [0xa5, 0xb0). The function's range is 0xc0 bytes: [0xb0, 0xc0) is padding
    /// that no pcsp entry covers.
    const HOT_PCSP: &[u8] = &[0x02, 0x05, 0x90, 0x08, 0xa0, 0x01, 0x8f, 0x08, 0x0b, 0x00];
    /// runtime.goexit: `02 80 01` → 0 for [0x0, 0x80).
    const GOEXIT_PCSP: &[u8] = &[0x02, 0x80, 0x01, 0x00];

    /// A hand-made table of `funcs` (sorted by entry; text ends at `text_end`), laid out as Go
    /// 1.18+ does apart from the order of the tables: header, names, function table and `_func`
    /// records (of the layout `magic` names), then `pctab` last, so that a table can run into
    /// the end of the section.
    fn build(
        magic: u32,
        text_start: u64,
        funcs: &[Func],
        text_end: u32,
    ) -> (tempfile::NamedTempFile, SectionRange) {
        let rec_len = if magic == MAGIC_1_20 {
            FUNC_LEN_1_20
        } else {
            FUNC_LEN_1_18
        };
        let mut names = vec![0u8];
        let mut name_offs = Vec::new();
        // pctab's offset 0 means "no table", so the linker starts it with a padding byte.
        let mut pctab = vec![0u8];
        let mut pcsp_offs = Vec::new();
        for f in funcs {
            name_offs.push(names.len() as u32);
            names.extend_from_slice(f.name.as_bytes());
            names.push(0);
            pcsp_offs.push(match f.pcsp {
                Pcsp::Absent => 0,
                Pcsp::Raw(off) => off,
                Pcsp::Table(t) => {
                    pctab.extend_from_slice(t);
                    (pctab.len() - t.len()) as u32
                }
            });
        }

        let header_len = 8 + 8 * 8;
        let funcname_offset = header_len as u64;
        let pcln_offset = funcname_offset + names.len() as u64;
        let functab_len = (funcs.len() + 1) * 8;
        let pctab_offset = pcln_offset + (functab_len + funcs.len() * rec_len) as u64;

        let mut data = Vec::new();
        data.extend_from_slice(&magic.to_le_bytes());
        data.extend_from_slice(&[0, 0, 1, 8]);
        for w in [
            funcs.len() as u64,
            0,
            text_start,
            funcname_offset,
            0,
            0,
            pctab_offset,
            pcln_offset,
        ] {
            data.extend_from_slice(&w.to_le_bytes());
        }
        data.extend_from_slice(&names);
        for (i, f) in funcs.iter().enumerate() {
            data.extend_from_slice(&f.entry.to_le_bytes());
            data.extend_from_slice(&((functab_len + rec_len * i) as u32).to_le_bytes());
        }
        data.extend_from_slice(&text_end.to_le_bytes());
        data.extend_from_slice(&0u32.to_le_bytes());
        for ((f, name_off), pcsp) in funcs.iter().zip(name_offs).zip(pcsp_offs) {
            let mut rec = vec![0u8; rec_len];
            rec[0..4].copy_from_slice(&f.entry.to_le_bytes());
            rec[4..8].copy_from_slice(&name_off.to_le_bytes());
            rec[FUNC_PCSP..FUNC_PCSP + 4].copy_from_slice(&pcsp.to_le_bytes());
            // pcfile and pcln: plausible non-zero offsets that `frame` must not confuse with
            // pcsp.
            rec[20..24].copy_from_slice(&0x7777u32.to_le_bytes());
            rec[24..28].copy_from_slice(&0x8888u32.to_le_bytes());
            let flag_at = if magic == MAGIC_1_20 {
                // startLine, in the 1.20 layout only.
                rec[36..40].copy_from_slice(&12u32.to_le_bytes());
                FUNC_FLAG_1_20
            } else {
                FUNC_FLAG_1_18
            };
            // funcID precedes flag; a non-zero one shows the flag alone decides `top`.
            rec[flag_at - 1] = 21;
            rec[flag_at] = f.flag;
            data.extend_from_slice(&rec);
        }
        assert_eq!(data.len() as u64, pctab_offset);
        data.extend_from_slice(&pctab);

        // Put the section at a non-zero file offset, as in a real binary.
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        let prefix = vec![0xccu8; 0x200];
        file.write_all(&prefix).expect("write");
        file.write_all(&data).expect("write");
        let range = SectionRange {
            offset: prefix.len() as u64,
            size: data.len() as u64,
            addr: 0x4a0000,
        };
        (file, range)
    }

    /// Three functions at text offsets 0x0, 0x40 and 0x100, text ending at 0x180.
    fn synthetic(magic: u32, text_start: u64) -> (tempfile::NamedTempFile, SectionRange) {
        let funcs = [
            Func {
                entry: 0,
                name: "main.main",
                pcsp: Pcsp::Table(MAIN_PCSP),
                flag: 0,
            },
            Func {
                entry: 0x40,
                name: "main.hotSpin",
                pcsp: Pcsp::Table(HOT_PCSP),
                flag: 0,
            },
            Func {
                entry: 0x100,
                name: "runtime.goexit",
                pcsp: Pcsp::Table(GOEXIT_PCSP),
                flag: FLAG_TOPFRAME,
            },
        ];
        build(magic, text_start, &funcs, 0x180)
    }

    #[test]
    fn synthetic_lookups() {
        for magic in [MAGIC_1_18, MAGIC_1_20] {
            for (text_start, text_addr) in [(0x401000u64, None), (0, Some(0x401000u64))] {
                let (tmp, range) = synthetic(magic, text_start);
                let file = tmp.reopen().expect("reopen");
                let table = GoTable::load(&file, range, text_addr).expect("loads");
                assert_eq!(table.functions(), 3);
                let cases: &[(u64, Option<&str>)] = &[
                    (0x400fff, None),
                    (0x401000, Some("main.main")),
                    (0x40103f, Some("main.main")),
                    (0x401040, Some("main.hotSpin")),
                    (0x4010ff, Some("main.hotSpin")),
                    (0x401100, Some("runtime.goexit")),
                    (0x40117f, Some("runtime.goexit")),
                    (0x401180, None),
                    (0x1_0040_1000, None),
                ];
                for (addr, want) in cases {
                    let got = table.lookup(&file, *addr).expect("lookup");
                    assert_eq!(got.as_deref(), *want, "magic {magic:#x} addr {addr:#x}");
                }
            }
        }
    }

    #[test]
    fn rejects_unknown_magic_and_bad_tables() {
        let (tmp, range) = synthetic(0xffff_fffb, 0x401000);
        let file = tmp.reopen().expect("reopen");
        assert!(matches!(
            GoTable::load(&file, range, None),
            Err(GoError::UnknownMagic(0xffff_fffb))
        ));

        let (tmp, range) = synthetic(MAGIC_1_18, 0);
        let file = tmp.reopen().expect("reopen");
        assert!(matches!(
            GoTable::load(&file, range, None),
            Err(GoError::Malformed(_))
        ));

        let (tmp, mut range) = synthetic(MAGIC_1_20, 0x401000);
        range.size = 90;
        let file = tmp.reopen().expect("reopen");
        assert!(matches!(
            GoTable::load(&file, range, None),
            Err(GoError::Malformed(_))
        ));
    }

    fn frame(entry: u64, sp_delta: u32, top: bool) -> Option<GoFrame> {
        Some(GoFrame {
            entry,
            sp_delta,
            top,
            spwrite: false,
        })
    }

    #[test]
    fn synthetic_frames() {
        let (main, hot, goexit) = (0x401000, 0x401040, 0x401100);
        let cases: &[(u64, Option<GoFrame>)] = &[
            (0x400fff, None),
            (0x401000, frame(main, 0, false)),
            (0x401003, frame(main, 0, false)),
            (0x401004, frame(main, 0x18, false)),
            (0x40102f, frame(main, 0x18, false)),
            (0x401030, frame(main, 0, false)),
            (0x40103f, frame(main, 0, false)),
            (0x401040, frame(hot, 0, false)),
            (0x401044, frame(hot, 0, false)),
            (0x401045, frame(hot, 0x208, false)),
            (0x4010e4, frame(hot, 0x208, false)),
            (0x4010e5, frame(hot, 0, false)),
            (0x4010ef, frame(hot, 0, false)),
            // Alignment padding: in the function's range, past its table.
            (0x4010f0, None),
            (0x4010ff, None),
            (0x401100, frame(goexit, 0, true)),
            (0x40117f, frame(goexit, 0, true)),
            (0x401180, None),
            (0x1_0040_1000, None),
        ];
        for magic in [MAGIC_1_18, MAGIC_1_20] {
            for (text_start, text_addr) in [(0x401000u64, None), (0, Some(0x401000u64))] {
                let (tmp, range) = synthetic(magic, text_start);
                let file = tmp.reopen().expect("reopen");
                let table = GoTable::load(&file, range, text_addr).expect("loads");
                for (addr, want) in cases {
                    let got = table.frame(&file, *addr).expect("frame");
                    assert_eq!(got, *want, "magic {magic:#x} addr {addr:#x}");
                }
            }
        }
    }

    /// Tables that stress the reader: reads across chunks, flags, and malformed tables, each
    /// an error rather than a panic or a made-up frame.
    #[test]
    fn synthetic_frame_edge_cases() {
        // 0x31 pairs, 98 bytes (more than one read chunk): `02 01` → 0 at pc 0, then each
        // `04 01` adds 2 for the next byte, so the value at pc k is 2k, up to pc 0x30.
        static STEPS: [u8; 99] = {
            let mut t = [0u8; 99];
            t[0] = 0x02;
            t[1] = 0x01;
            let mut i = 2;
            while i < 98 {
                t[i] = 0x04;
                t[i + 1] = 0x01;
                i += 2;
            }
            t
        };
        // `02 00` pairs: the value grows, the pc stays at the entry (where a zero byte would
        // not even end the table), more pairs than the function has bytes.
        static STUCK: [u8; 0xa0] = {
            let mut t = [0u8; 0xa0];
            let mut i = 0;
            while i < 0xa0 {
                t[i] = 0x02;
                i += 2;
            }
            t
        };
        let funcs = [
            Func {
                entry: 0,
                name: "runtime.mcall",
                pcsp: Pcsp::Table(&[0x02, 0x08, 0x10, 0x38, 0x00]),
                flag: FLAG_SPWRITE,
            },
            Func {
                entry: 0x40,
                name: "no.table",
                pcsp: Pcsp::Absent,
                flag: 0,
            },
            Func {
                entry: 0x80,
                name: "many.steps",
                pcsp: Pcsp::Table(&STEPS),
                flag: 0,
            },
            Func {
                entry: 0xc0,
                name: "negative",
                // zigzag 1 = -1: the value becomes -2.
                pcsp: Pcsp::Table(&[0x01, 0x40, 0x00]),
                flag: 0,
            },
            Func {
                entry: 0x100,
                name: "long.varint",
                pcsp: Pcsp::Table(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x40, 0x00]),
                flag: 0,
            },
            Func {
                entry: 0x140,
                name: "stuck",
                pcsp: Pcsp::Table(&STUCK),
                flag: 0,
            },
            Func {
                entry: 0x180,
                name: "out.of.range",
                pcsp: Pcsp::Raw(0x10_0000),
                flag: 0,
            },
            Func {
                entry: 0x1c0,
                name: "unterminated",
                // The last table in the section, without its terminator: [0x0, 0x4) → 0.
                pcsp: Pcsp::Table(&[0x02, 0x04]),
                flag: 0,
            },
        ];
        for magic in [MAGIC_1_18, MAGIC_1_20] {
            let (tmp, range) = build(magic, 0x401000, &funcs, 0x200);
            let file = tmp.reopen().expect("reopen");
            let table = GoTable::load(&file, range, None).expect("loads");
            let mcall = |sp_delta| {
                Some(GoFrame {
                    entry: 0x401000,
                    sp_delta,
                    top: false,
                    spwrite: true,
                })
            };
            assert_eq!(table.frame(&file, 0x401007).unwrap(), mcall(0));
            assert_eq!(table.frame(&file, 0x401008).unwrap(), mcall(8));
            assert_eq!(table.frame(&file, 0x401040).unwrap(), None);
            for k in 0..0x31 {
                let got = table.frame(&file, 0x401080 + k).unwrap();
                assert_eq!(got, frame(0x401080, 2 * k as u32, false), "pc {k:#x}");
            }
            assert_eq!(table.frame(&file, 0x4010b1).unwrap(), None);
            assert_eq!(
                table.frame(&file, 0x4011c3).unwrap(),
                frame(0x4011c0, 0, false)
            );
            for addr in [0x4010c0, 0x401100, 0x401140, 0x401180, 0x4011c4] {
                let got = table.frame(&file, addr);
                assert!(
                    matches!(got, Err(GoError::Malformed(_))),
                    "magic {magic:#x} addr {addr:#x}: {got:?}"
                );
            }
            // Names still resolve where frames do not.
            let name = table.lookup(&file, 0x401140).unwrap();
            assert_eq!(name.as_deref(), Some("stuck"));
        }

        // A function record that disagrees with the function table.
        let (tmp, range) = synthetic(MAGIC_1_18, 0x401000);
        let file = tmp.reopen().expect("reopen");
        let table = GoTable::load(&file, range, None).expect("loads");
        let rec = table.funcdata + u64::from(table.functab[1].1);
        std::os::unix::fs::FileExt::write_all_at(tmp.as_file(), &0x41u32.to_le_bytes(), rec)
            .expect("write");
        assert!(matches!(
            table.frame(&file, 0x401040),
            Err(GoError::Malformed(_))
        ));
    }
}
