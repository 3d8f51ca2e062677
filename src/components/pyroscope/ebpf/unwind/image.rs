//! One binary's unwind information: its call-frame information (`.eh_frame` with the
//! `.eh_frame_hdr` search table, else `.debug_frame`) and, for Go binaries, Go's own function
//! table, whose per-function SP deltas stand in for the CFI that Go code lacks.
//!
//! Only those sections are read into memory (for libc about 250 KB of a 2 MB file); an image
//! is shared by every process that maps the same file (see [`super::images`]).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::ExplicitModuleSectionInfo;
use object::read::ReadCache;
use object::{Object, ObjectSection};

use crate::budget::Reservation;
use crate::components::pyroscope::ebpf::symbolize::elf::{self, ElfInfo};
use crate::components::pyroscope::ebpf::symbolize::gopclntab::{GoFrame, GoTable};

/// Section bytes shared between the image and framehop's per-process modules.
#[derive(Clone, Debug)]
pub(crate) struct Bytes(Arc<[u8]>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ImageError {
    #[error("{0}")]
    Elf(#[from] elf::ElfError),
    #[error("reading sections: {0}")]
    Object(#[from] object::read::Error),
    #[error("reading: {0}")]
    Io(#[from] io::Error),
}

#[derive(Clone, Debug, Default)]
struct Section {
    addr: Range<u64>,
    data: Option<Bytes>,
}

/// A Go binary's function table, with the frames looked up so far (a hot loop asks for the
/// same few pcs at every sample; each lookup would otherwise read the file).
#[derive(Debug)]
struct Go {
    table: GoTable,
    frames: HashMap<u64, Option<GoFrame>>,
    failed: bool,
}

/// Distinct pcs remembered per Go binary: far more than the hot code of a service, and a
/// bound on memory (about 40 bytes an entry).
const GO_FRAMES_CAP: usize = 64 * 1024;

#[derive(Debug)]
pub(crate) struct Image {
    pub name: Arc<str>,
    pub info: ElfInfo,
    text: Option<Range<u64>>,
    got: Option<Range<u64>>,
    eh_frame: Section,
    eh_frame_hdr: Section,
    debug_frame: Option<Bytes>,
    go: Option<Go>,
    /// Where code bytes are read from (signal trampolines are recognised by their code).
    code: Code,
    /// Whether the code at a link-time address is a sigreturn trampoline, per address asked.
    sigreturn: HashMap<u64, bool>,
    /// Bytes this image holds (section copies, Go's function table).
    pub bytes: u64,
    pub(super) reservation: Option<Reservation>,
}

impl Image {
    /// Reads the unwind sections of an ELF file (an executable, a library, or the vDSO image
    /// from memory).
    pub fn load(file: File, name: Arc<str>) -> Result<Image, ImageError> {
        let info = elf::read_info(&file)?;
        let sections = read_sections(&ReadCache::new(&file))?;
        let go = match info.gopclntab {
            Some(section) => match GoTable::load(&file, section, info.text_addr) {
                Ok(table) => Some(Go {
                    table,
                    frames: HashMap::new(),
                    failed: false,
                }),
                Err(e) => {
                    tracing::debug!(module = %name, error = %e, "Go function table unreadable; unwinding with CFI and frame pointers");
                    None
                }
            },
            None => None,
        };
        Ok(Self::assemble(name, info, sections, go, Code::File(file)))
    }

    /// The same from an image in memory (the vDSO, which has no file).
    pub fn from_bytes(image: &[u8], name: Arc<str>) -> Result<Image, ImageError> {
        let info = elf::parse_info(image)?;
        let sections = read_sections(image)?;
        let code = Code::Memory(Bytes(Arc::from(image)));
        Ok(Self::assemble(name, info, sections, None, code))
    }

    fn assemble(
        name: Arc<str>,
        info: ElfInfo,
        sections: Sections,
        go: Option<Go>,
        code: Code,
    ) -> Image {
        let Sections {
            text,
            got,
            eh_frame,
            eh_frame_hdr,
            debug_frame,
        } = sections;
        let len = |s: &Option<Bytes>| s.as_ref().map_or(0, |b| b.len() as u64);
        let bytes = len(&eh_frame.data)
            + len(&eh_frame_hdr.data)
            + len(&debug_frame)
            + go.as_ref().map_or(0, |g| g.table.functions() as u64 * 8);
        Image {
            name,
            info,
            text,
            got,
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            go,
            code,
            sigreturn: HashMap::new(),
            bytes,
            reservation: None,
        }
    }

    /// Whether the file carries any call-frame information.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.data.is_some() || self.debug_frame.is_some()
    }

    pub fn is_go(&self) -> bool {
        self.go.is_some()
    }

    /// framehop's view of this image mapped at `avma` with link-time address 0 at `base_avma`.
    pub fn module(&self, avma: Range<u64>, base_avma: u64) -> framehop::Module<Bytes> {
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.clone(),
            got_svma: self.got.clone(),
            eh_frame_svma: Some(self.eh_frame.addr.clone()),
            eh_frame: self.eh_frame.data.clone(),
            eh_frame_hdr_svma: Some(self.eh_frame_hdr.addr.clone()),
            eh_frame_hdr: self.eh_frame_hdr.data.clone(),
            debug_frame: self.debug_frame.clone(),
            text: None,
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        };
        framehop::Module::new(self.name.to_string(), avma, base_avma, info)
    }

    /// The Go frame containing link-time address `vaddr`; `None` outside Go code (or when the
    /// table cannot be read, which is logged once).
    pub fn go_frame(&mut self, vaddr: u64) -> Option<GoFrame> {
        let go = self.go.as_mut()?;
        if let Some(f) = go.frames.get(&vaddr) {
            return *f;
        }
        let Code::File(file) = &self.code else {
            return None;
        };
        let frame = match go.table.frame(file, vaddr) {
            Ok(f) => f,
            Err(e) => {
                if !go.failed {
                    go.failed = true;
                    tracing::warn!(module = %self.name, error = %e, "Go function table unreadable at a sampled pc; those frames end their stacks as truncated");
                }
                None
            }
        };
        if go.frames.len() >= GO_FRAMES_CAP {
            go.frames.clear();
        }
        go.frames.insert(vaddr, frame);
        frame
    }
}

/// The bytes of the code at link-time address `vaddr`, through the `PT_LOAD` segment holding
/// it; `None` outside the file.
#[derive(Debug)]
enum Code {
    File(File),
    Memory(Bytes),
}

/// Distinct addresses remembered per image for [`Image::is_sigreturn`].
const SIGRETURN_CAP: usize = 16 * 1024;

impl Image {
    /// Whether `vaddr` starts a sigreturn trampoline, by its code (`pred` decides on the
    /// bytes; the answer is cached per address).
    pub fn is_sigreturn(&mut self, vaddr: u64, len: usize, pred: impl Fn(&[u8]) -> bool) -> bool {
        if let Some(&known) = self.sigreturn.get(&vaddr) {
            return known;
        }
        let mut buf = vec![0u8; len];
        let read = self
            .info
            .loads
            .iter()
            .find(|l| vaddr >= l.vaddr && vaddr - l.vaddr + len as u64 <= l.filesz)
            .is_some_and(|l| {
                let offset = l.offset + (vaddr - l.vaddr);
                match &self.code {
                    Code::File(f) => {
                        use std::os::unix::fs::FileExt as _;
                        f.read_exact_at(&mut buf, offset).is_ok()
                    }
                    Code::Memory(b) => usize::try_from(offset)
                        .ok()
                        .and_then(|o| b.get(o..o.checked_add(len)?))
                        .map(|code| buf.copy_from_slice(code))
                        .is_some(),
                }
            });
        let answer = read && pred(&buf);
        if self.sigreturn.len() >= SIGRETURN_CAP {
            self.sigreturn.clear();
        }
        self.sigreturn.insert(vaddr, answer);
        answer
    }
}

/// What an image keeps of the file's sections.
struct Sections {
    text: Option<Range<u64>>,
    got: Option<Range<u64>>,
    eh_frame: Section,
    eh_frame_hdr: Section,
    debug_frame: Option<Bytes>,
}

fn read_sections<'data, R: object::ReadRef<'data>>(data: R) -> Result<Sections, ImageError> {
    let obj = object::File::parse(data)?;
    let range = |name: &str| {
        obj.section_by_name(name)
            .map(|s| s.address()..s.address().saturating_add(s.size()))
    };
    let section = |name: &str| -> Result<Section, ImageError> {
        let Some(s) = obj.section_by_name(name) else {
            return Ok(Section::default());
        };
        let data = s.data()?;
        Ok(Section {
            addr: s.address()..s.address().saturating_add(s.size()),
            data: (!data.is_empty()).then(|| Bytes(Arc::from(data))),
        })
    };
    let eh_frame = section(".eh_frame")?;
    let eh_frame_hdr = section(".eh_frame_hdr")?;
    // Compressed debug sections would need a decompressor; binaries that have .debug_frame
    // but no .eh_frame are rare outside Go, whose code is stepped with its own table.
    let debug_frame = match obj.section_by_name(".debug_frame") {
        Some(s) if s.compressed_file_range()?.format == object::CompressionFormat::None => {
            let data = s.data()?;
            (!data.is_empty()).then(|| Bytes(Arc::from(data)))
        }
        _ => None,
    };
    Ok(Sections {
        text: range(".text"),
        got: range(".got"),
        eh_frame,
        eh_frame_hdr,
        debug_frame,
    })
}
