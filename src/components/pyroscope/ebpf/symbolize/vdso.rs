//! The vDSO: the kernel maps the same small ELF image into every (64-bit) process, so our own
//! copy, read from `/proc/self/mem`, stands for the target's.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use object::read::elf::ElfFile64;
use object::{Endianness, Object, ObjectSymbol, SymbolKind};

use super::elf::{self, ElfInfo};
use super::maps::{self, Backing};

/// Larger than any vDSO image; a bound against a corrupt maps line.
const MAX_IMAGE: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub(crate) enum VdsoError {
    #[error("reading own vDSO: {0}")]
    Io(#[from] io::Error),
    #[error("no [vdso] mapping in /proc/self/maps")]
    Missing,
    #[error("vDSO image: {0}")]
    Elf(#[from] elf::ElfError),
    #[error("vDSO symbols: {0}")]
    Symbols(#[from] object::read::Error),
}

#[derive(Debug)]
pub(crate) struct Vdso {
    info: ElfInfo,
    /// `(start, end, name)` by start.
    syms: Vec<(u64, u64, Arc<str>)>,
}

impl Vdso {
    pub fn load_own() -> Result<Self, VdsoError> {
        let text = std::fs::read("/proc/self/maps")?;
        let entry = maps::parse(&text)
            .into_iter()
            .find(|e| matches!(&e.backing, Backing::Special(s) if s == "[vdso]"))
            .ok_or(VdsoError::Missing)?;
        let len = (entry.end - entry.start).min(MAX_IMAGE);
        let mut image = vec![0u8; len as usize];
        File::open("/proc/self/mem")?.read_exact_at(&mut image, entry.start)?;
        Self::from_image(&image)
    }

    pub fn from_image(image: &[u8]) -> Result<Self, VdsoError> {
        let info = elf::parse_info(image)?;
        let file = ElfFile64::<Endianness>::parse(image)?;
        let mut syms: Vec<(u64, u64, Arc<str>)> = file
            .dynamic_symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
            .filter_map(|s| {
                let name = s.name().ok()?;
                Some((
                    s.address(),
                    s.address().saturating_add(s.size()),
                    Arc::from(name),
                ))
            })
            .collect();
        // Aliases share an address (`clock_gettime` and `__vdso_clock_gettime`): keep the
        // public name, as perf and blazesym report it.
        syms.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.2.starts_with("__vdso_").cmp(&b.2.starts_with("__vdso_")))
        });
        syms.dedup_by_key(|s| s.0);
        // A symbol without a size reaches the next one.
        for i in 0..syms.len() {
            if syms[i].1 == syms[i].0 {
                syms[i].1 = syms.get(i + 1).map_or(u64::MAX, |n| n.0);
            }
        }
        Ok(Vdso { info, syms })
    }

    /// The function at an offset into the `[vdso]` mapping (mapped from the image's start).
    pub fn lookup(&self, offset: u64) -> Option<Arc<str>> {
        let vaddr = self.info.vaddr(offset)?;
        let idx = self.syms.partition_point(|s| s.0 <= vaddr).checked_sub(1)?;
        let (_, end, name) = &self.syms[idx];
        (vaddr < *end).then(|| Arc::clone(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_own_clock_gettime() {
        let vdso = Vdso::load_own().expect("vDSO loads");
        assert!(!vdso.syms.is_empty());
        // Every symbol resolves to itself (modulo the preferred alias) at its start and end-1.
        for (start, end, name) in &vdso.syms {
            let seg = vdso
                .info
                .loads
                .iter()
                .find(|l| *start >= l.vaddr && *start - l.vaddr < l.filesz)
                .expect("symbol inside a segment");
            let offset = start - seg.vaddr + seg.offset;
            assert_eq!(vdso.lookup(offset).as_deref(), Some(&**name));
            let last = (end - 1).min(start + 0x10);
            assert_eq!(
                vdso.lookup(offset + (last - start)).as_deref(),
                Some(&**name)
            );
        }
        assert!(
            vdso.syms.iter().any(|s| &*s.2 == "clock_gettime"),
            "public alias preferred: {:?}",
            vdso.syms
        );
    }
}
