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
//!
//! Only the function table is kept in memory (8 bytes per function); `_func` records and names
//! are read from the file when an address is first resolved, which the address cache makes rare.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::elf::SectionRange;

const MAGIC_1_18: u32 = 0xffff_fff0;
const MAGIC_1_20: u32 = 0xffff_fff1;
/// Go function names are short; the longest generic instantiations are still far below this.
const MAX_NAME: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub(crate) enum GoError {
    #[error("reading .gopclntab: {0}")]
    Io(#[from] io::Error),
    #[error("unsupported .gopclntab magic {0:#010x} (only Go 1.18+ layouts are read)")]
    UnknownMagic(u32),
    #[error("malformed .gopclntab: {0}")]
    Malformed(&'static str),
}

#[derive(Debug)]
pub(crate) struct GoTable {
    text_start: u64,
    big_endian: bool,
    /// `(entryoff, funcoff)` pairs, `nfunc + 1` of them.
    functab: Box<[(u32, u32)]>,
    /// File offsets of the tables, and the end of the section for bounds checks.
    funcdata: u64,
    funcnames: u64,
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
        let big_endian = match (le, be) {
            (MAGIC_1_18 | MAGIC_1_20, _) => false,
            (_, MAGIC_1_18 | MAGIC_1_20) => true,
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
            functab,
            funcdata: section.offset + pcln_offset,
            funcnames: section.offset + funcname_offset,
            end: section.offset + size,
        })
    }

    pub fn functions(&self) -> usize {
        self.functab.len().saturating_sub(1)
    }

    /// The name of the function containing link-time address `vaddr`, if it is Go code.
    pub fn lookup(&self, file: &File, vaddr: u64) -> Result<Option<String>, GoError> {
        let Some(off) = vaddr.checked_sub(self.text_start) else {
            return Ok(None);
        };
        let Ok(off) = u32::try_from(off) else {
            return Ok(None);
        };
        let idx = self.functab.partition_point(|&(entry, _)| entry <= off);
        // Before the first function, or at/after the end marker.
        let Some(idx) = idx.checked_sub(1) else {
            return Ok(None);
        };
        if idx + 1 >= self.functab.len() {
            return Ok(None);
        }
        let (entry, funcoff) = self.functab[idx];

        let func = self.funcdata + u64::from(funcoff);
        if func + 8 > self.end {
            return Err(GoError::Malformed("function record outside the section"));
        }
        let mut rec = [0u8; 8];
        file.read_exact_at(&mut rec, func)?;
        let u32_at = |b: &[u8]| {
            let a = [b[0], b[1], b[2], b[3]];
            if self.big_endian {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        if u32_at(&rec[..4]) != entry {
            return Err(GoError::Malformed(
                "function record does not match its table entry",
            ));
        }
        let name_off = u32_at(&rec[4..]) as i32;
        let Ok(name_off) = u64::try_from(name_off) else {
            return Err(GoError::Malformed("negative name offset"));
        };
        self.read_name(file, self.funcnames + name_off).map(Some)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// A hand-made Go 1.18-layout table: three functions at text offsets 0x0, 0x40 and 0x100,
    /// text ending at 0x180.
    fn synthetic(magic: u32, text_start: u64) -> (tempfile::NamedTempFile, SectionRange) {
        let names = b"\0main.main\0main.hotSpin\0runtime.goexit\0";
        let name_offs = [1u32, 11, 24];
        let entries = [0u32, 0x40, 0x100];

        let header_len = 8 + 8 * 8;
        let funcname_offset = header_len as u64;
        let pcln_offset = funcname_offset + names.len() as u64;
        let functab_len = (entries.len() + 1) * 8;

        let mut data = Vec::new();
        data.extend_from_slice(&magic.to_le_bytes());
        data.extend_from_slice(&[0, 0, 1, 8]);
        for w in [
            entries.len() as u64,
            0,
            text_start,
            funcname_offset,
            0,
            0,
            0,
            pcln_offset,
        ] {
            data.extend_from_slice(&w.to_le_bytes());
        }
        data.extend_from_slice(names);
        let funcs_at = functab_len as u32;
        for (i, e) in entries.iter().enumerate() {
            data.extend_from_slice(&e.to_le_bytes());
            data.extend_from_slice(&(funcs_at + 8 * i as u32).to_le_bytes());
        }
        data.extend_from_slice(&0x180u32.to_le_bytes());
        data.extend_from_slice(&0u32.to_le_bytes());
        for (e, n) in entries.iter().zip(name_offs) {
            data.extend_from_slice(&e.to_le_bytes());
            data.extend_from_slice(&n.to_le_bytes());
        }

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
}
