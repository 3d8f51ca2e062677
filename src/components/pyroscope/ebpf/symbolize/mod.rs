//! Addresses to function names for the eBPF CPU sampler.
//!
//! User addresses go through the process's `/proc/<pid>/maps` (read once per process, re-read
//! when an address falls outside every known mapping, as after `dlopen`) to a module and a
//! file offset. Modules are cached by identity (build id, else device+inode+path), resolved
//! frames by (module, file offset), so a library shared by many processes is parsed once and a
//! process that exits never needs resolving again. Names come from, in order:
//! * Go's `.gopclntab` for Go binaries, which stripped Go binaries still carry ([`gopclntab`]);
//! * blazesym on the file's ELF symbols;
//! * blazesym on a host debug file with the same build id (`/usr/lib/debug/.build-id`), whose
//!   symbol table covers what a stripped library's `.dynsym` does not;
//! * blazesym on the file's DWARF, for files that have debug info but no symbol table.
//!
//! The vDSO is read from our own process ([`vdso`]); kernel addresses come from
//! `/proc/kallsyms` through blazesym ([`kernel`]). blazesym's `map_files` route is never used:
//! it needs CAP_SYS_ADMIN. Files are opened as `/proc/<pid>/root/<path>`, which works for
//! processes in containers.
//!
//! The symbolizer is not `Send`: blazesym's caches are built on `Rc`. Create it on the thread
//! that uses it.

mod cache;
mod demangle;
pub(crate) mod elf;
pub(crate) mod gopclntab;
mod kernel;
pub(crate) mod maps;
pub(crate) mod module;
mod vdso;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as Blaze};

pub use demangle::{Demangle, ParseDemangleError};

use cache::{AddrCache, Interner};
use gopclntab::GoTable;
use kernel::Kernel;
use maps::{Backing, MapsEntry};
use module::{FileKey, GoState, KERNEL_ID, Module, ModuleId, Modules, VDSO_ID};
use vdso::Vdso;

/// Function (and module) name of what could not be resolved.
pub const UNKNOWN: &str = "[unknown]";
/// Module name of kernel frames.
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";
const VDSO_MODULE: &str = "[vdso]";

/// Open modules (each holds a file descriptor and blazesym's parsed tables).
const MAX_MODULES: usize = 128;
/// Resolved frames per cache generation; two generations are kept. An entry costs about
/// 100 bytes with the hash table's slack, plus its interned name, so the bound is a few MB;
/// two sampled processes rarely show more than a few thousand distinct addresses.
const ADDR_GENERATION: usize = 8 * 1024;
const INTERN_CAP: usize = 16 * 1024;
/// Addresses outside every mapping are common (frame-pointer unwinding through code built
/// without frame pointers yields garbage return addresses), so a miss re-reads the maps at most
/// this often per process.
const MAPS_REREAD_MIN: Duration = Duration::from_millis(250);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub demangle: Demangle,
    /// Resolve kernel addresses (from `/proc/kallsyms`); when false, [`Symbolizer::kernel`]
    /// returns no frames.
    pub kernel: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: Arc<str>,
    /// File name of the binary or library; `[kernel.kallsyms]`, `[vdso]`, or `[unknown]`.
    pub module: Arc<str>,
    /// Source file and line, when known (Python frames; native frames are named by function
    /// only).
    pub source: Option<SourceLine>,
}

/// Where a frame's code is in its source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLine {
    pub file: Arc<str>,
    pub line: i64,
}

/// Sizes for debug info and memory accounting.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Processes whose maps are held.
    pub pids: usize,
    /// Executable mappings held over all those processes.
    pub maps_entries: usize,
    /// Open binaries and libraries.
    pub modules: usize,
    /// Of those, Go binaries (with a `.gopclntab`).
    pub go_modules: usize,
    pub cached_addresses: usize,
    pub interned_names: usize,
    pub address_hits: u64,
    pub address_misses: u64,
    /// Times a `/proc/<pid>/maps` was read.
    pub maps_reads: u64,
    /// Whether kernel symbols were loaded (they are on the first kernel lookup).
    pub kernel_symbols: bool,
}

#[derive(Debug)]
struct Proc {
    maps: Vec<Mapping>,
    read_at: Instant,
}

#[derive(Debug)]
struct Mapping {
    entry: MapsEntry,
    name: Arc<str>,
    module: ModState,
}

#[derive(Clone, Copy, Debug)]
enum ModState {
    Unresolved,
    Module(ModuleId),
    /// Not openable (gone, deleted, not ELF): logged once, frames stay `[unknown]`.
    Failed,
}

#[derive(Debug)]
enum VdsoState {
    Unloaded,
    Loaded(Vdso),
    Failed,
}

#[derive(Debug)]
pub struct Symbolizer {
    opts: Options,
    blaze: Blaze,
    pids: HashMap<u32, Proc>,
    modules: Modules,
    addrs: AddrCache,
    names: Interner,
    kernel: Kernel,
    vdso: VdsoState,
    unknown: Arc<str>,
    kernel_module: Arc<str>,
    vdso_module: Arc<str>,
    maps_reads: u64,
}

impl Symbolizer {
    pub fn new(opts: Options) -> Self {
        let blaze = Blaze::builder()
            // Files are addressed through `/proc/self/fd/<n>` of descriptors we hold, which
            // cannot change under us; skipping the `stat` per lookup is also what keeps them
            // usable once the process that mapped them is gone.
            .enable_auto_reload(false)
            .enable_code_info(false)
            .enable_inlined_fns(false)
            .enable_demangling(opts.demangle != Demangle::None)
            .build();
        Symbolizer {
            opts,
            blaze,
            pids: HashMap::new(),
            modules: Modules::new(MAX_MODULES),
            addrs: AddrCache::new(ADDR_GENERATION),
            names: Interner::new(INTERN_CAP),
            kernel: Kernel::new(),
            vdso: VdsoState::Unloaded,
            unknown: Arc::from(UNKNOWN),
            kernel_module: Arc::from(KERNEL_MODULE),
            vdso_module: Arc::from(VDSO_MODULE),
            maps_reads: 0,
        }
    }

    /// User addresses of `pid`, leaf first (index 0 is the sampled IP, the rest are return
    /// addresses: look up addr-1 for those so a call at the end of a function resolves to the
    /// caller). Called right when the sample arrives, while the process is alive; one Frame
    /// per address.
    pub fn user(&mut self, pid: u32, addrs: &[u64]) -> Vec<Frame> {
        let mut frames = Vec::with_capacity(addrs.len());
        for (i, &addr) in addrs.iter().enumerate() {
            let addr = if i == 0 { addr } else { addr.saturating_sub(1) };
            frames.push(self.user_frame(pid, addr));
        }
        frames
    }

    /// Kernel addresses, leaf first, same convention. Empty when kernel symbolization is off;
    /// `[unknown]` frames when kallsyms hides its addresses (no CAP_SYSLOG).
    pub fn kernel(&mut self, addrs: &[u64]) -> Vec<Frame> {
        if !self.opts.kernel {
            return Vec::new();
        }
        let mut frames = Vec::with_capacity(addrs.len());
        for (i, &addr) in addrs.iter().enumerate() {
            let addr = if i == 0 { addr } else { addr.saturating_sub(1) };
            let key = (KERNEL_ID, addr);
            if let Some(f) = self.addrs.get(key) {
                frames.push(f);
                continue;
            }
            let name = self
                .kernel
                .lookup(&self.blaze, addr)
                .map(|n| demangle::shape(&n, self.opts.demangle));
            let frame = self.frame(name.as_deref(), Arc::clone(&self.kernel_module));
            self.addrs.insert(key, frame.clone());
            frames.push(frame);
        }
        frames
    }

    /// Forgets per-process state (parsed maps) of processes for which `alive(pid)` is false;
    /// module symbol caches stay (they are keyed by binary, not pid).
    pub fn retain_pids(&mut self, alive: &dyn Fn(u32) -> bool) {
        self.pids.retain(|&pid, _| alive(pid));
    }

    pub fn stats(&self) -> Stats {
        Stats {
            pids: self.pids.len(),
            maps_entries: self.pids.values().map(|p| p.maps.len()).sum(),
            modules: self.modules.len(),
            go_modules: self.modules.go_modules(),
            cached_addresses: self.addrs.len(),
            interned_names: self.names.len(),
            address_hits: self.addrs.hits,
            address_misses: self.addrs.misses,
            maps_reads: self.maps_reads,
            kernel_symbols: self.kernel.loaded(),
        }
    }

    fn frame(&mut self, function: Option<&str>, module: Arc<str>) -> Frame {
        let function = match function {
            Some(f) if !f.is_empty() => self.names.intern(f),
            _ => Arc::clone(&self.unknown),
        };
        Frame {
            function,
            module,
            source: None,
        }
    }

    fn user_frame(&mut self, pid: u32, addr: u64) -> Frame {
        let Some(idx) = self.mapping_index(pid, addr) else {
            return self.frame(None, Arc::clone(&self.unknown));
        };
        let Some(mapping) = self.pids.get(&pid).and_then(|p| p.maps.get(idx)) else {
            return self.frame(None, Arc::clone(&self.unknown));
        };
        let file_offset = mapping.entry.file_offset(addr);
        let name = Arc::clone(&mapping.name);
        let (is_file, is_vdso) = match &mapping.entry.backing {
            Backing::File { .. } => (true, false),
            Backing::Special(s) => (false, s == VDSO_MODULE),
            Backing::Anonymous => (false, false),
        };
        if is_vdso {
            return self.vdso_frame(file_offset);
        }
        if !is_file {
            return self.frame(None, name);
        }
        // Frames resolved earlier stay valid even if their module was evicted since (and the
        // process is gone, so it could not be reopened).
        let known = match mapping.module {
            ModState::Module(id) => Some(id),
            ModState::Unresolved | ModState::Failed => None,
        };
        if let Some(f) = known.and_then(|id| self.addrs.get((id, file_offset))) {
            return f;
        }
        let Some(id) = self.module_of(pid, idx) else {
            return self.frame(None, name);
        };
        let key = (id, file_offset);
        if known != Some(id)
            && let Some(f) = self.addrs.get(key)
        {
            return f;
        }
        let (function, module) = match self.modules.touch(id) {
            Some(m) => (
                resolve_in_module(&self.blaze, m, file_offset, self.opts.demangle),
                Arc::clone(&m.name),
            ),
            None => (None, name),
        };
        let frame = self.frame(function.as_deref(), module);
        self.addrs.insert(key, frame.clone());
        frame
    }

    fn vdso_frame(&mut self, offset: u64) -> Frame {
        let key = (VDSO_ID, offset);
        if let Some(f) = self.addrs.get(key) {
            return f;
        }
        if matches!(self.vdso, VdsoState::Unloaded) {
            self.vdso = match Vdso::load_own() {
                Ok(v) => VdsoState::Loaded(v),
                Err(error) => {
                    tracing::warn!(%error, "cannot read the vDSO; its frames will be [unknown]");
                    VdsoState::Failed
                }
            };
        }
        let name = match &self.vdso {
            VdsoState::Loaded(v) => v.lookup(offset),
            _ => None,
        };
        let frame = self.frame(name.as_deref(), Arc::clone(&self.vdso_module));
        self.addrs.insert(key, frame.clone());
        frame
    }

    /// Index of `pid`'s mapping containing `addr`, reading or re-reading the maps as needed.
    fn mapping_index(&mut self, pid: u32, addr: u64) -> Option<usize> {
        if let Some(p) = self.pids.get(&pid) {
            if let Some(i) = find_mapping(&p.maps, addr) {
                return Some(i);
            }
            if p.read_at.elapsed() < MAPS_REREAD_MIN {
                return None;
            }
        }
        self.maps_reads += 1;
        let text = match std::fs::read(format!("/proc/{pid}/maps")) {
            Ok(t) => t,
            Err(error) => {
                // Gone already, or not ours to read; the cached maps (if any) stay usable.
                tracing::debug!(pid, %error, "cannot read process maps");
                if let Some(p) = self.pids.get_mut(&pid) {
                    p.read_at = Instant::now();
                }
                return None;
            }
        };
        let old: HashMap<(u64, u64, u64, u64), ModState> = self
            .pids
            .remove(&pid)
            .map(|p| {
                p.maps
                    .into_iter()
                    .map(|m| {
                        (
                            (m.entry.start, m.entry.end, m.entry.offset, m.entry.inode),
                            m.module,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let maps: Vec<Mapping> = maps::parse(&text)
            .into_iter()
            .map(|entry| {
                let module = old
                    .get(&(entry.start, entry.end, entry.offset, entry.inode))
                    .copied()
                    .unwrap_or(ModState::Unresolved);
                Mapping {
                    name: entry.module_name(),
                    entry,
                    module,
                }
            })
            .collect();
        let idx = find_mapping(&maps, addr);
        self.pids.insert(
            pid,
            Proc {
                maps,
                read_at: Instant::now(),
            },
        );
        idx
    }

    /// The module behind a file mapping, opened on first use.
    fn module_of(&mut self, pid: u32, idx: usize) -> Option<ModuleId> {
        let mapping = self.pids.get_mut(&pid)?.maps.get_mut(idx)?;
        match mapping.module {
            ModState::Failed => return None,
            ModState::Module(id) if self.modules.contains(id) => return Some(id),
            ModState::Module(_) | ModState::Unresolved => {}
        }
        if let Some(id) = FileKey::of(&mapping.entry).and_then(|k| self.modules.by_key(&k)) {
            mapping.module = ModState::Module(id);
            return Some(id);
        }
        if let Some(evicted) = self.modules.make_room() {
            // Before the descriptor number can be reused by the next open.
            forget(&mut self.blaze, &evicted.source_path);
            if let Some(debug_file) = &evicted.debug_file {
                forget(&mut self.blaze, debug_file);
            }
        }
        match self.modules.open(pid, &mapping.entry, &mapping.name) {
            Ok(id) => {
                mapping.module = ModState::Module(id);
                Some(id)
            }
            Err(error) => {
                tracing::debug!(pid, module = %mapping.name, %error, "cannot open mapped file; its frames will be [unknown]");
                mapping.module = ModState::Failed;
                None
            }
        }
    }
}

fn find_mapping(maps: &[Mapping], addr: u64) -> Option<usize> {
    let idx = maps
        .partition_point(|m| m.entry.start <= addr)
        .checked_sub(1)?;
    (addr < maps[idx].entry.end).then_some(idx)
}

fn forget(blaze: &mut Blaze, path: &Path) {
    let evict = blazesym::symbolize::evict::Evict::Elf(blazesym::symbolize::evict::Elf::new(path));
    if let Err(error) = blaze.evict(&evict) {
        tracing::debug!(path = %path.display(), %error, "blazesym eviction failed");
    }
}

/// The function name at a file offset of a module, shaped for `mode`.
fn resolve_in_module(
    blaze: &Blaze,
    m: &mut Module,
    file_offset: u64,
    mode: Demangle,
) -> Option<String> {
    let vaddr = m.info.vaddr(file_offset)?;
    if let Some(name) = go_lookup(m, vaddr) {
        // Go names are not mangled, and their `(*T).m` receivers must stay as they are.
        return Some(name);
    }
    let name = blaze_lookup(blaze, m, vaddr)?;
    if m.info.gopclntab.is_some() {
        return Some(name);
    }
    Some(demangle::shape(&name, mode))
}

fn go_lookup(m: &mut Module, vaddr: u64) -> Option<String> {
    if matches!(m.go, GoState::Unloaded) {
        let section = m.info.gopclntab?;
        m.go = match GoTable::load(&m.file, section, m.info.text_addr) {
            Ok(table) => {
                tracing::debug!(module = %m.name, functions = table.functions(), "loaded Go function table");
                GoState::Loaded(table)
            }
            Err(error) => {
                tracing::warn!(module = %m.name, %error, "no Go symbolization for this binary");
                GoState::Failed
            }
        };
    }
    let GoState::Loaded(table) = &m.go else {
        return None;
    };
    match table.lookup(&m.file, vaddr) {
        Ok(name) => name,
        Err(error) => {
            tracing::debug!(module = %m.name, vaddr, %error, "Go function table lookup failed");
            None
        }
    }
}

/// ELF symbols first, then a host debug file's symbols, then DWARF only for files without a
/// symbol table: for function names DWARF rarely adds anything a symbol table lacks, and it is
/// costly (a 31 MB test binary: 490 ms and about 7 MB of heap plus 22 MB of touched file
/// pages for 2000 addresses, against a few ms and a few hundred kB from its symbol table).
fn blaze_lookup(blaze: &Blaze, m: &mut Module, vaddr: u64) -> Option<String> {
    match elf_lookup(blaze, &m.source_path, false, vaddr) {
        Ok(Some(name)) => return Some(name),
        Ok(None) => {}
        Err(error) => {
            tracing::debug!(module = %m.name, vaddr, %error, "ELF symbol lookup failed")
        }
    }
    if let Some(debug_file) = m.debug_file.as_deref() {
        match elf_lookup(blaze, debug_file, false, vaddr) {
            Ok(Some(name)) => return Some(name),
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(module = %m.name, debug_file = %debug_file.display(), %error, "debug file unusable");
                m.debug_file = None;
            }
        }
    }
    if !m.dwarf || m.info.has_symtab {
        return None;
    }
    match elf_lookup(blaze, &m.source_path, true, vaddr) {
        Ok(name) => name,
        Err(error) => {
            // Typically compressed debug sections (blazesym is built without zlib).
            tracing::debug!(module = %m.name, %error, "debug info unusable; using ELF symbols only");
            m.dwarf = false;
            None
        }
    }
}

fn elf_lookup(
    blaze: &Blaze,
    path: &Path,
    debug_syms: bool,
    vaddr: u64,
) -> Result<Option<String>, blazesym::Error> {
    let mut elf = Elf::new(path);
    elf.debug_syms = debug_syms;
    match blaze.symbolize_single(&Source::Elf(elf), Input::VirtOffset(vaddr))? {
        Symbolized::Sym(sym) if !sym.name.is_empty() => Ok(Some(sym.name.into_owned())),
        Symbolized::Sym(_) | Symbolized::Unknown(_) => Ok(None),
    }
}
