//! Binaries and libraries the symbolizer has opened, keyed by identity rather than by process,
//! so a library mapped by many processes is opened and parsed once.
//!
//! Identity is the GNU build id when the file has one, else (device, inode, path) as the maps
//! line shows them. Each module keeps its file open: the descriptor is what makes the module
//! usable after the process that mapped it exits (or the file is deleted or lives in another
//! mount namespace), and `/proc/self/fd/<n>` is the stable path blazesym knows it by.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::elf::{self, ElfInfo};
use super::gopclntab::GoTable;
use super::maps::{Backing, MapsEntry};

pub(crate) type ModuleId = u64;
/// Reserved ids for the address cache's non-file "modules".
pub(crate) const KERNEL_ID: ModuleId = 0;
pub(crate) const VDSO_ID: ModuleId = 1;
const FIRST_ID: ModuleId = 2;

/// Where split debug files named by build id live on the host.
const DEBUG_DIR: &str = "/usr/lib/debug/.build-id";

#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    #[error("{name} is not a file mapping")]
    NotAFile { name: String },
    #[error("opening {path}: {source}")]
    Open { path: String, source: io::Error },
    #[error("{path} was deleted and is not the process's executable")]
    Deleted { path: String },
    #[error("{path}: {source}")]
    Elf { path: String, source: elf::ElfError },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    dev: u64,
    inode: u64,
    path: PathBuf,
}

impl FileKey {
    pub fn of(entry: &MapsEntry) -> Option<FileKey> {
        match &entry.backing {
            Backing::File { path, .. } => Some(FileKey {
                dev: entry.dev,
                inode: entry.inode,
                path: path.clone(),
            }),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub(crate) enum GoState {
    NotGo,
    Unloaded,
    Loaded(GoTable),
    /// Unreadable or an unsupported layout: logged once, then blazesym only.
    Failed,
}

#[derive(Debug)]
pub(crate) struct Module {
    pub name: Arc<str>,
    pub file: File,
    pub info: ElfInfo,
    /// `/proc/self/fd/<n>` of `file`: unique while the module lives.
    pub source_path: PathBuf,
    /// Cleared when blazesym cannot load the debug info (compressed sections, for instance),
    /// so it is not tried again.
    pub dwarf: bool,
    /// A host debug file with the same build id: its full symbol table covers what a stripped
    /// library's `.dynsym` does not.
    pub debug_file: Option<PathBuf>,
    pub go: GoState,
    last_used: u64,
    keys: Vec<FileKey>,
}

/// What eviction leaves for the caller to forget in blazesym.
#[derive(Debug)]
pub(crate) struct Evicted {
    pub source_path: PathBuf,
    pub debug_file: Option<PathBuf>,
}

#[derive(Debug)]
pub(crate) struct Modules {
    by_id: HashMap<ModuleId, Module>,
    by_file: HashMap<FileKey, ModuleId>,
    by_build_id: HashMap<Box<[u8]>, ModuleId>,
    next_id: ModuleId,
    tick: u64,
    max: usize,
}

impl Modules {
    pub fn new(max: usize) -> Self {
        Modules {
            by_id: HashMap::new(),
            by_file: HashMap::new(),
            by_build_id: HashMap::new(),
            next_id: FIRST_ID,
            tick: 0,
            max: max.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn go_modules(&self) -> usize {
        self.by_id
            .values()
            .filter(|m| !matches!(m.go, GoState::NotGo))
            .count()
    }

    pub fn by_key(&self, key: &FileKey) -> Option<ModuleId> {
        self.by_file.get(key).copied()
    }

    pub fn contains(&self, id: ModuleId) -> bool {
        self.by_id.contains_key(&id)
    }

    /// The module, marked as just used.
    pub fn touch(&mut self, id: ModuleId) -> Option<&mut Module> {
        self.tick += 1;
        let tick = self.tick;
        let m = self.by_id.get_mut(&id)?;
        m.last_used = tick;
        Some(m)
    }

    /// Evicts the least recently used module when full, so the next `open` stays in bounds.
    pub fn make_room(&mut self) -> Option<Evicted> {
        if self.by_id.len() < self.max {
            return None;
        }
        let (&id, _) = self.by_id.iter().min_by_key(|(_, m)| m.last_used)?;
        let m = self.by_id.remove(&id)?;
        for key in &m.keys {
            self.by_file.remove(key);
        }
        if let Some(build_id) = &m.info.build_id
            && self.by_build_id.get(build_id) == Some(&id)
        {
            self.by_build_id.remove(build_id);
        }
        Some(Evicted {
            source_path: m.source_path,
            debug_file: m.debug_file,
        })
    }

    /// Opens the file behind a maps entry of `pid`, or finds the module it is a copy of.
    pub fn open(
        &mut self,
        pid: u32,
        entry: &MapsEntry,
        name: &Arc<str>,
    ) -> Result<ModuleId, OpenError> {
        let Backing::File { path, deleted } = &entry.backing else {
            return Err(OpenError::NotAFile {
                name: name.to_string(),
            });
        };
        let key = FileKey {
            dev: entry.dev,
            inode: entry.inode,
            path: path.clone(),
        };
        let file = open_mapped(pid, path, *deleted)?;
        if entry.inode != 0
            && let Ok(meta) = file.metadata()
            && meta.ino() != entry.inode
        {
            // Overlay file systems can report other inode numbers than the maps line; a real
            // replacement would show the mapping as deleted instead.
            tracing::debug!(pid, path = %path.display(), maps_inode = entry.inode, file_inode = meta.ino(), "mapped file's inode differs from the maps line");
        }
        let info = elf::read_info(&file).map_err(|source| OpenError::Elf {
            path: path.display().to_string(),
            source,
        })?;

        if let Some(build_id) = &info.build_id
            && let Some(&id) = self.by_build_id.get(build_id)
            && let Some(m) = self.by_id.get_mut(&id)
        {
            m.keys.push(key.clone());
            self.by_file.insert(key, id);
            return Ok(id);
        }

        let id = self.next_id;
        self.next_id += 1;
        let debug_file = info.build_id.as_deref().and_then(debug_file_for);
        let go = if info.gopclntab.is_some() {
            GoState::Unloaded
        } else {
            GoState::NotGo
        };
        if let Some(build_id) = &info.build_id {
            self.by_build_id.insert(build_id.clone(), id);
        }
        self.by_file.insert(key.clone(), id);
        self.tick += 1;
        let source_path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        tracing::debug!(
            pid,
            module = %name,
            build_id = info.build_id.as_deref().map(elf::hex).unwrap_or_default(),
            go = info.gopclntab.is_some(),
            "opened module"
        );
        self.by_id.insert(
            id,
            Module {
                name: Arc::clone(name),
                file,
                info,
                source_path,
                dwarf: true,
                debug_file,
                go,
                last_used: self.tick,
                keys: vec![key],
            },
        );
        Ok(id)
    }
}

/// Opens a mapped file through the process's root, so paths inside containers resolve. A
/// deleted file is only reachable if it is the executable (`/proc/<pid>/exe`): the
/// alternative, `map_files`, needs CAP_SYS_ADMIN.
pub(crate) fn open_mapped(pid: u32, path: &Path, deleted: bool) -> Result<File, OpenError> {
    let shown = || path.display().to_string();
    if deleted {
        let exe = PathBuf::from(format!("/proc/{pid}/exe"));
        let target = std::fs::read_link(&exe).map_err(|source| OpenError::Open {
            path: shown(),
            source,
        })?;
        let mut want = path.as_os_str().to_os_string();
        want.push(" (deleted)");
        if target.as_os_str() != want {
            return Err(OpenError::Deleted { path: shown() });
        }
        return File::open(&exe).map_err(|source| OpenError::Open {
            path: shown(),
            source,
        });
    }
    if !path.is_absolute() {
        return Err(OpenError::Open {
            path: shown(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "relative path in maps"),
        });
    }
    let mut full = OsString::from(format!("/proc/{pid}/root"));
    full.push(path.as_os_str());
    File::open(&full).map_err(|source| OpenError::Open {
        path: shown(),
        source,
    })
}

fn debug_file_for(build_id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = build_id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let path = PathBuf::from(format!(
        "{DEBUG_DIR}/{}/{}.debug",
        elf::hex(&[*first]),
        elf::hex(rest)
    ));
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::pyroscope::ebpf::symbolize::maps;
    use std::os::unix::ffi::OsStrExt;

    fn own_exe_entry() -> MapsEntry {
        let text = std::fs::read("/proc/self/maps").expect("own maps");
        let entries = maps::parse(&text);
        let here = own_exe_entry as fn() -> MapsEntry as usize as u64;
        let idx = maps::find(&entries, here).expect("own code mapped");
        entries[idx].clone()
    }

    #[test]
    fn dedupes_and_evicts() {
        let entry = own_exe_entry();
        let pid = std::process::id();
        let name = entry.module_name();
        let mut modules = Modules::new(1);
        let id = modules
            .open(pid, &entry, &name)
            .expect("opens own executable");
        assert!(modules.contains(id));
        let key = FileKey::of(&entry).expect("file mapping");
        assert_eq!(modules.by_key(&key), Some(id));
        let m = modules.touch(id).expect("present");
        assert!(
            m.source_path
                .as_os_str()
                .as_bytes()
                .starts_with(b"/proc/self/fd/")
        );

        // A second sighting under another key (another process's view) is the same module
        // when the build id matches.
        let mut other = entry.clone();
        other.inode = other.inode.wrapping_add(1);
        let again = modules.open(pid, &other, &name).expect("opens");
        if modules.touch(id).is_some_and(|m| m.info.build_id.is_some()) {
            assert_eq!(again, id);
        }

        let evicted = modules.make_room().expect("full at one module");
        assert!(
            evicted
                .source_path
                .as_os_str()
                .as_bytes()
                .starts_with(b"/proc/self/fd/")
        );
        assert_eq!(modules.len(), 0);
        assert_eq!(modules.by_key(&key), None);
    }

    #[test]
    fn open_errors() {
        let pid = std::process::id();
        let entry =
            maps::parse_line(b"1000-2000 r-xp 00000000 08:02 7 /nonexistent/lib.so").expect("line");
        let name = entry.module_name();
        let mut modules = Modules::new(4);
        assert!(matches!(
            modules.open(pid, &entry, &name),
            Err(OpenError::Open { .. })
        ));
        let entry = maps::parse_line(b"1000-2000 r-xp 00000000 08:02 7 /tmp/gone.so (deleted)")
            .expect("line");
        assert!(matches!(
            modules.open(pid, &entry, &name),
            Err(OpenError::Deleted { .. })
        ));
        let entry =
            maps::parse_line(b"1000-2000 r-xp 00000000 08:02 7 /etc/hostname").expect("line");
        let res = modules.open(pid, &entry, &name);
        assert!(
            matches!(
                res,
                Err(OpenError::Elf { .. }) | Err(OpenError::Open { .. })
            ),
            "{res:?}"
        );
    }
}
