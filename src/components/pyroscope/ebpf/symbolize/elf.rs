//! What the symbolizer needs from an ELF file's headers: its build id (module identity), its
//! `PT_LOAD` segments (file offset → virtual address) and where `.gopclntab` lives.
//!
//! Only headers, notes and the section-name table are read, through a [`ReadCache`], so a large
//! binary costs a few small reads rather than being loaded (its symbol tables are left to
//! blazesym, which maps the file).

use std::fs::File;
use std::io;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::read::{ReadCache, ReadRef};
use object::{Endianness, FileKind};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ElfError {
    #[error("reading ELF file: {0}")]
    Io(#[from] io::Error),
    #[error("not an ELF file")]
    NotElf,
    #[error("malformed ELF file: {0}")]
    Parse(#[from] object::read::Error),
}

/// A `PT_LOAD` segment's file range and where it is linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Load {
    pub offset: u64,
    pub filesz: u64,
    pub vaddr: u64,
}

/// A section's place in the file and in the address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SectionRange {
    pub offset: u64,
    pub size: u64,
    pub addr: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ElfInfo {
    pub build_id: Option<Box<[u8]>>,
    pub loads: Vec<Load>,
    pub gopclntab: Option<SectionRange>,
    /// `.text`'s address: Go's function table is relative to it when its header has none.
    pub text_addr: Option<u64>,
    /// Whether a full symbol table (`.symtab`) is present, not just `.dynsym`.
    pub has_symtab: bool,
}

impl ElfInfo {
    /// The link-time virtual address of a file offset, via the `PT_LOAD` segment containing it.
    pub fn vaddr(&self, file_offset: u64) -> Option<u64> {
        file_offset_to_vaddr(&self.loads, file_offset)
    }
}

pub(crate) fn file_offset_to_vaddr(loads: &[Load], file_offset: u64) -> Option<u64> {
    loads
        .iter()
        .find(|l| file_offset >= l.offset && file_offset - l.offset < l.filesz)
        .and_then(|l| l.vaddr.checked_add(file_offset - l.offset))
}

/// Reads the header information of an open ELF file.
pub(crate) fn read_info(file: &File) -> Result<ElfInfo, ElfError> {
    let cache = ReadCache::new(file);
    parse_info(&cache)
}

/// Parses the header information of ELF data (a file through a cache, or bytes in memory).
pub(crate) fn parse_info<'data, R: ReadRef<'data>>(data: R) -> Result<ElfInfo, ElfError> {
    match FileKind::parse(data) {
        Ok(FileKind::Elf64) => parse_typed::<elf::FileHeader64<Endianness>, R>(data),
        Ok(FileKind::Elf32) => parse_typed::<elf::FileHeader32<Endianness>, R>(data),
        Ok(_) => Err(ElfError::NotElf),
        // A file too short to hold a header is not an ELF file either.
        Err(_) => Err(ElfError::NotElf),
    }
}

fn parse_typed<'data, Elf, R>(data: R) -> Result<ElfInfo, ElfError>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let header = Elf::parse(data)?;
    let endian = header.endian()?;

    let mut info = ElfInfo::default();
    for ph in header.program_headers(endian, data)? {
        match ph.p_type(endian) {
            elf::PT_LOAD => info.loads.push(Load {
                offset: ph.p_offset(endian).into(),
                filesz: ph.p_filesz(endian).into(),
                vaddr: ph.p_vaddr(endian).into(),
            }),
            elf::PT_NOTE if info.build_id.is_none() => {
                // A truncated or odd note segment only costs us the build id.
                if let Ok(Some(mut notes)) = ph.notes(endian, data) {
                    while let Ok(Some(note)) = notes.next() {
                        if note.name() == elf::ELF_NOTE_GNU
                            && note.n_type(endian) == elf::NT_GNU_BUILD_ID
                            && !note.desc().is_empty()
                        {
                            info.build_id = Some(note.desc().into());
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    // Section headers are optional at run time; a file without them still symbolizes from its
    // segments through blazesym, it just cannot be a Go table source.
    if let Ok(sections) = header.sections(endian, data) {
        let range = |name: &[u8]| {
            sections.section_by_name(endian, name).and_then(|(_, s)| {
                let (offset, size) = s.file_range(endian)?;
                Some(SectionRange {
                    offset,
                    size,
                    addr: s.sh_addr(endian).into(),
                })
            })
        };
        // Position-independent Go binaries keep it in relocatable read-only data, named so.
        info.gopclntab = range(b".gopclntab").or_else(|| range(b".data.rel.ro.gopclntab"));
        info.has_symtab = sections.section_by_name(endian, b".symtab").is_some();
        info.text_addr = sections
            .section_by_name(endian, b".text")
            .map(|(_, s)| s.sh_addr(endian).into());
        if info.build_id.is_none() {
            info.build_id = sections
                .section_by_name(endian, b".note.gnu.build-id")
                .and_then(|(_, s)| s.notes(endian, data).ok().flatten())
                .and_then(|mut notes| notes.next().ok().flatten())
                .filter(|n| n.n_type(endian) == elf::NT_GNU_BUILD_ID && !n.desc().is_empty())
                .map(|n| n.desc().into());
        }
    }
    Ok(info)
}

/// Renders a build id the way debug directories name files by it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_offset_to_vaddr_table() {
        // Shaped like a PIE executable: read-only headers, text, data with a bss tail.
        let loads = [
            Load {
                offset: 0,
                filesz: 0x1000,
                vaddr: 0,
            },
            Load {
                offset: 0x1000,
                filesz: 0x2345,
                vaddr: 0x1000,
            },
            Load {
                offset: 0x3df0,
                filesz: 0x220,
                vaddr: 0x4df0,
            },
        ];
        let cases: &[(u64, Option<u64>)] = &[
            (0, Some(0)),
            (0xfff, Some(0xfff)),
            (0x1000, Some(0x1000)),
            (0x1234, Some(0x1234)),
            (0x3344, Some(0x3344)),
            (0x3345, None),
            (0x3df0, Some(0x4df0)),
            (0x3e00, Some(0x4e00)),
            (0x4010, None),
        ];
        for (off, want) in cases {
            assert_eq!(file_offset_to_vaddr(&loads, *off), *want, "offset {off:#x}");
        }
        // Non-PIE: linked high.
        let loads = [Load {
            offset: 0x1000,
            filesz: 0x5000,
            vaddr: 0x401000,
        }];
        assert_eq!(file_offset_to_vaddr(&loads, 0x1abc), Some(0x401abc));
        assert_eq!(file_offset_to_vaddr(&loads, 0x0abc), None);
    }

    #[test]
    fn reads_own_executable() {
        let file = File::open("/proc/self/exe").expect("open own executable");
        let info = read_info(&file).expect("own executable parses");
        assert!(!info.loads.is_empty());
        assert!(info.text_addr.is_some());
        assert!(info.has_symtab);
        assert!(info.gopclntab.is_none());

        // The offset of our own code, mapped back through the segments, is where it is linked:
        // a stable distance (the load bias) from where it runs.
        let maps = std::fs::read("/proc/self/maps").expect("own maps");
        let entries = super::super::maps::parse(&maps);
        let here = reads_own_executable as fn() as usize as u64;
        let idx = super::super::maps::find(&entries, here).expect("own code is mapped");
        let vaddr = info
            .vaddr(entries[idx].file_offset(here))
            .expect("code offset lies in a segment");
        let there = file_offset_to_vaddr as fn(&[Load], u64) -> Option<u64> as usize as u64;
        let idx2 = super::super::maps::find(&entries, there).expect("mapped");
        let vaddr2 = info
            .vaddr(entries[idx2].file_offset(there))
            .expect("in a segment");
        assert_eq!(here.wrapping_sub(vaddr), there.wrapping_sub(vaddr2));
    }

    #[test]
    fn rejects_non_elf() {
        let cases: &[&[u8]] = &[b"", b"#!/bin/sh\necho hi\n", &[0x7f, b'E', b'L', b'F']];
        for data in cases {
            assert!(
                matches!(parse_info(*data), Err(ElfError::NotElf)),
                "{data:?}"
            );
        }
    }

    #[test]
    fn hex_renders_lowercase() {
        assert_eq!(hex(&[0x93, 0xac, 0x01]), "93ac01");
    }
}
