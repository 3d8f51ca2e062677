//! Is a process CPython, where is its `_PyRuntime`, and which version is it?
//!
//! `_PyRuntime` and `Py_Version` (3.11+) are exported, so they are in `.dynsym` even of
//! Debian's stripped `python3.11`, whose interpreter is linked into the executable; builds with
//! `--enable-shared` (pyenv's, the official images') export them from `libpython3.X.so`. The
//! candidates are the executable and any mapped `libpython*`; each is opened through
//! `/proc/<pid>/root` (the process's mount namespace) and only its dynamic symbols are read.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use object::read::elf::{ElfFile64, FileHeader as _, ProgramHeader as _};
use object::{Object as _, ObjectSymbol as _, ReadCache};

use super::super::symbolize::maps::{Backing, MapsEntry, parse_line};

/// Where a process's interpreter is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Address of `_PyRuntime` in the process.
    pub runtime: u64,
    /// `PY_VERSION_HEX` (`0x030b02f0` for 3.11.2 final).
    pub version: u32,
    /// The file that exports it, as the process sees it.
    pub file: PathBuf,
}

impl Found {
    pub fn major_minor(&self) -> (u8, u8) {
        ((self.version >> 24) as u8, (self.version >> 16) as u8)
    }

    pub fn version_text(&self) -> String {
        format!(
            "{}.{}.{}",
            self.version >> 24,
            (self.version >> 16) & 0xff,
            (self.version >> 8) & 0xff
        )
    }
}

/// Why a process that looks like CPython could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error("reading /proc/{pid}/maps: {source}")]
    Maps { pid: u32, source: std::io::Error },
    #[error("opening the executable of pid {pid}: {source}")]
    Exe { pid: u32, source: std::io::Error },
    #[error("{file}: {message}")]
    Elf { file: String, message: String },
    #[error("{file} exports _PyRuntime but not Py_Version: CPython older than 3.11 (unsupported)")]
    NoVersion { file: String },
    #[error("reading Py_Version from the memory of pid {pid}: {source}")]
    Memory { pid: u32, source: std::io::Error },
}

impl DetectError {
    /// The process could not be examined at all (its maps or executable are not readable): no
    /// sign that it is CPython, so not a failure of the Python walk.
    pub fn is_inaccessible(&self) -> bool {
        matches!(self, DetectError::Maps { .. } | DetectError::Exe { .. })
    }
}

/// The target of `/proc/<pid>/exe` as maps shows it: without the " (deleted)" the kernel adds
/// to a running binary that was replaced or removed (maps' paths are parsed without it).
fn exe_path(link: PathBuf) -> PathBuf {
    use std::os::unix::ffi::OsStrExt as _;
    let b = link.as_os_str().as_bytes();
    match b.strip_suffix(b" (deleted)") {
        Some(p) => PathBuf::from(std::ffi::OsStr::from_bytes(p)),
        None => link,
    }
}

/// Looks for CPython in process `pid`: `Ok(None)` when neither the executable nor a mapped
/// library exports `_PyRuntime`.
pub fn detect(pid: u32) -> Result<Option<Found>, DetectError> {
    let maps = std::fs::read(format!("/proc/{pid}/maps"))
        .map_err(|source| DetectError::Maps { pid, source })?;
    let entries: Vec<MapsEntry> = maps.split(|&b| b == b'\n').filter_map(parse_line).collect();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(exe_path);
    let mut seen: Vec<&Path> = Vec::new();
    for e in &entries {
        let Backing::File { path, deleted } = &e.backing else {
            continue;
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let is_exe = exe.as_deref() == Some(path.as_path());
        let candidate = is_exe || name.is_some_and(|n| n.starts_with("libpython"));
        if !candidate || seen.contains(&path.as_path()) {
            continue;
        }
        seen.push(path);
        // The executable opens through /proc/<pid>/exe and a deleted library through
        // map_files: both reach the file the process runs even when its path no longer does;
        // other files through the process's root (its mount namespace).
        let open = if is_exe {
            File::open(format!("/proc/{pid}/exe"))
                .map_err(|source| DetectError::Exe { pid, source })
        } else if *deleted {
            File::open(format!("/proc/{pid}/map_files/{:x}-{:x}", e.start, e.end))
                .map_err(|err| elf_error(path, err.to_string()))
        } else {
            File::open(
                Path::new(&format!("/proc/{pid}/root"))
                    .join(path.strip_prefix("/").unwrap_or(path)),
            )
            .map_err(|err| elf_error(path, err.to_string()))
        };
        if let Some(found) = in_file(pid, open?, path, &entries)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

fn elf_error(path: &Path, message: String) -> DetectError {
    DetectError::Elf {
        file: path.display().to_string(),
        message,
    }
}

/// The dynamic symbols `_PyRuntime` and `Py_Version` of one mapped file (`file`, mapped from
/// `path`), relocated to where the process mapped it.
fn in_file(
    pid: u32,
    file: File,
    path: &Path,
    entries: &[MapsEntry],
) -> Result<Option<Found>, DetectError> {
    let shown = path.display().to_string();
    let elf_err = |message: String| elf_error(path, message);
    let cache = ReadCache::new(file);
    let Ok(elf) = ElfFile64::<object::Endianness, _>::parse(&cache) else {
        // Not a 64-bit ELF file: not a CPython we can walk.
        return Ok(None);
    };
    let mut runtime = None;
    let mut version = None;
    for sym in elf.dynamic_symbols() {
        match sym.name() {
            Ok("_PyRuntime") => runtime = Some(sym.address()),
            Ok("Py_Version") => version = Some(sym.address()),
            _ => {}
        }
    }
    let Some(runtime) = runtime else {
        return Ok(None);
    };
    let Some(version) = version else {
        return Err(DetectError::NoVersion { file: shown });
    };
    let bias = load_bias(&elf, path, entries)
        .ok_or_else(|| elf_err("no mapping of its first loadable segment in the process".into()))?;
    let mut word = [0u8; 4];
    File::open(format!("/proc/{pid}/mem"))
        .and_then(|m| m.read_exact_at(&mut word, version.wrapping_add(bias)))
        .map_err(|source| DetectError::Memory { pid, source })?;
    Ok(Some(Found {
        runtime: runtime.wrapping_add(bias),
        version: u32::from_ne_bytes(word),
        file: path.to_path_buf(),
    }))
}

/// How far the process moved the file from its link-time addresses: where the mapping of file
/// offset 0 starts, less the page-aligned address of the segment that holds offset 0 (0 for a
/// non-PIE executable).
fn load_bias<'a, R: object::ReadRef<'a>>(
    elf: &ElfFile64<'a, object::Endianness, R>,
    path: &Path,
    entries: &[MapsEntry],
) -> Option<u64> {
    let endian = elf.endian();
    let first = elf
        .elf_header()
        .program_headers(endian, elf.data())
        .ok()?
        .iter()
        .find(|p| p.p_type(endian) == object::elf::PT_LOAD && p.p_offset(endian) == 0)?;
    let vaddr = first.p_vaddr(endian) & !0xfff;
    let start = entries
        .iter()
        .filter(|e| e.offset == 0)
        .find(|e| matches!(&e.backing, Backing::File { path: p, .. } if p == path))?
        .start;
    Some(start.wrapping_sub(vaddr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_render_from_the_hex() {
        // (PY_VERSION_HEX, major.minor, text)
        let cases = [
            (0x030b02f0u32, (3, 11), "3.11.2"),
            (0x030b07f0, (3, 11), "3.11.7"),
            (0x030c01f0, (3, 12), "3.12.1"),
        ];
        for (hex, mm, text) in cases {
            let f = Found {
                runtime: 0,
                version: hex,
                file: PathBuf::new(),
            };
            assert_eq!(f.major_minor(), mm);
            assert_eq!(f.version_text(), text);
        }
    }

    /// A live interpreter (skipped when the machine has none): found, with its version, and
    /// its `_PyRuntime` inside one of its mappings.
    #[test]
    fn finds_the_runtime_of_live_interpreters() {
        // (interpreter, expected major.minor)
        let cases = [
            ("/usr/bin/python3.11", (3, 11)),
            ("/root/.pyenv/versions/3.11.7/bin/python3", (3, 11)),
            ("/root/.pyenv/versions/3.12.1/bin/python3", (3, 12)),
            ("/root/.pyenv/versions/3.13.0/bin/python3", (3, 13)),
        ];
        for (python, want) in cases {
            if !Path::new(python).exists() {
                eprintln!("skipped: {python} not installed");
                continue;
            }
            let mut child = std::process::Command::new(python)
                .args(["-c", "import time; time.sleep(30)"])
                .spawn()
                .expect("spawn python");
            // The interpreter maps its libraries before running the script.
            std::thread::sleep(std::time::Duration::from_millis(300));
            let found = detect(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let found = found.expect(python).expect("is CPython");
            assert_eq!(found.major_minor(), want, "{python}");
            assert_ne!(found.runtime, 0);
        }
    }

    #[test]
    fn unreadable_processes_are_inaccessible_not_failed() {
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        // (error, inaccessible)
        let cases = [
            (
                DetectError::Maps {
                    pid: 1,
                    source: denied(),
                },
                true,
            ),
            (
                DetectError::Exe {
                    pid: 1,
                    source: denied(),
                },
                true,
            ),
            (
                DetectError::Memory {
                    pid: 1,
                    source: denied(),
                },
                false,
            ),
            (DetectError::NoVersion { file: "x".into() }, false),
        ];
        for (e, want) in cases {
            assert_eq!(e.is_inaccessible(), want, "{e}");
        }
    }

    #[test]
    fn deleted_executables_match_their_maps_path() {
        // (readlink of /proc/<pid>/exe, path in maps)
        let cases = [
            ("/usr/bin/python3.11", "/usr/bin/python3.11"),
            ("/tmp/py (deleted)", "/tmp/py"),
            ("/tmp/a (deleted) (deleted)", "/tmp/a (deleted)"),
        ];
        for (link, want) in cases {
            assert_eq!(exe_path(PathBuf::from(link)), PathBuf::from(want));
        }
    }

    /// A deleted CPython executable (a copy run, then removed) is still found.
    #[test]
    fn finds_a_deleted_interpreter() {
        let python = "/usr/bin/python3.11";
        if !Path::new(python).exists() {
            eprintln!("skipped: {python} not installed");
            return;
        }
        let dir = std::env::temp_dir().join(format!("scraper-pydel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let copy = dir.join("python3.11");
        std::fs::copy(python, &copy).expect("copy python");
        let mut child = std::process::Command::new(&copy)
            .args(["-c", "import time; time.sleep(30)"])
            .spawn()
            .expect("spawn python");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let _ = std::fs::remove_dir_all(&dir);
        let found = detect(child.id());
        let _ = child.kill();
        let _ = child.wait();
        let found = found.expect("detect").expect("is CPython");
        assert_eq!(found.major_minor(), (3, 11));
    }

    #[test]
    fn this_test_process_is_not_python() {
        let found = detect(std::process::id()).expect("own maps readable");
        assert_eq!(found, None);
    }
}
