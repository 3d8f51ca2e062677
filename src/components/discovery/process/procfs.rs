//! Raw reads of one process's files under a proc root (`/proc`, or a fake tree in tests).
//!
//! Each reader does what gopsutil (Alloy's process library) does for the same value, so that
//! the labels and the failures that skip a process are the same.

use std::io;
use std::path::{Path, PathBuf};

/// A proc filesystem root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProcFs {
    root: PathBuf,
}

impl ProcFs {
    pub(crate) fn new(root: impl Into<PathBuf>) -> Self {
        ProcFs { root: root.into() }
    }

    /// The host's `/proc`.
    pub(crate) fn host() -> Self {
        ProcFs::new("/proc")
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    fn file(&self, pid: u32, name: &str) -> PathBuf {
        let mut p = self.root.join(pid.to_string());
        p.push(name);
        p
    }

    /// Every process id, ascending (the order `/proc` lists them in). Threads are not listed
    /// by the kernel, and other entries (`self`, `sys`...) are not numbers.
    pub(crate) fn pids(&self) -> io::Result<Vec<u32>> {
        let mut pids = Vec::new();
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            if let Some(pid) = entry.file_name().to_str().and_then(parse_pid) {
                pids.push(pid);
            }
        }
        pids.sort_unstable();
        Ok(pids)
    }

    /// The executable's path (`readlink exe`); fails for kernel threads.
    pub(crate) fn exe(&self, pid: u32) -> io::Result<String> {
        readlink(&self.file(pid, "exe"))
    }

    /// The working directory (`readlink cwd`).
    pub(crate) fn cwd(&self, pid: u32) -> io::Result<String> {
        readlink(&self.file(pid, "cwd"))
    }

    /// The command line with its NUL-separated arguments joined by spaces. Empty arguments
    /// disappear and consecutive separators collapse, as with Go's `strings.FieldsFunc`.
    pub(crate) fn cmdline(&self, pid: u32) -> io::Result<String> {
        let raw = std::fs::read(self.file(pid, "cmdline"))?;
        Ok(join_cmdline(&raw))
    }

    /// The real uid, from the `Uid:` line of `status`; `None` when there is no such line.
    pub(crate) fn real_uid(&self, pid: u32) -> io::Result<Option<u32>> {
        let raw = std::fs::read(self.file(pid, "status"))?;
        parse_status_uid(&String::from_utf8_lossy(&raw))
    }

    /// The `cgroup` file's text.
    pub(crate) fn cgroup(&self, pid: u32) -> io::Result<String> {
        let raw = std::fs::read(self.file(pid, "cgroup"))?;
        Ok(String::from_utf8_lossy(&raw).into_owned())
    }
}

/// True for the errors of a process that exited while it was being read: skipped without a
/// word, as Alloy does (`ENOENT`, `ESRCH`).
pub(crate) fn vanished(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
}

fn parse_pid(name: &str) -> Option<u32> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // gopsutil parses pids as int32.
    name.parse::<u32>().ok().filter(|&p| p <= i32::MAX as u32)
}

fn readlink(path: &Path) -> io::Result<String> {
    let target = std::fs::read_link(path)?;
    Ok(target.to_string_lossy().into_owned())
}

fn join_cmdline(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let args: Vec<&str> = text.split('\0').filter(|a| !a.is_empty()).collect();
    args.join(" ")
}

/// gopsutil's status parsing, for the one field we need: the `Uid:` line's tab-separated
/// numbers, the first being the real uid. A malformed number fails the read.
fn parse_status_uid(status: &str) -> io::Result<Option<u32>> {
    for line in status.split('\n') {
        let Some((key, value)) = line.split_once('\t') else {
            continue;
        };
        if key.trim_end_matches(':') != "Uid" {
            continue;
        }
        let mut first = None;
        for field in value.split('\t') {
            let uid = field.parse::<i32>().map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("status: Uid field {field:?}: {e}"),
                )
            })?;
            first.get_or_insert(uid);
        }
        // Parsed as int32 like gopsutil, so a uid above i32::MAX fails there and here alike;
        // the kernel never writes a negative one.
        return Ok(first.and_then(|u| u32::try_from(u).ok()));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_joins_arguments_like_go_fields_func() {
        assert_eq!(join_cmdline(b""), "");
        assert_eq!(
            join_cmdline(b"/usr/bin/sleep\x0030\x00"),
            "/usr/bin/sleep 30"
        );
        assert_eq!(join_cmdline(b"a\x00\x00b\x00 c\x00"), "a b  c");
        assert_eq!(
            join_cmdline(b"nginx: worker process"),
            "nginx: worker process"
        );
    }

    #[test]
    fn status_uid_is_the_real_uid() {
        let status = "Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n";
        assert_eq!(parse_status_uid(status).expect("parses"), Some(1000));
        assert_eq!(parse_status_uid("Name:\tx\n").expect("parses"), None);
        assert!(parse_status_uid("Uid:\tx\t0\n").is_err());
    }

    #[test]
    fn pids_are_numeric_entries_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["10", "2", "self", "sys", "1a", "300"] {
            std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        }
        std::fs::write(dir.path().join("uptime"), "1 2").expect("write");
        let fs = ProcFs::new(dir.path());
        assert_eq!(fs.pids().expect("lists"), [2, 10, 300]);
        assert!(ProcFs::new(dir.path().join("missing")).pids().is_err());
    }

    #[test]
    fn vanished_processes_are_recognised() {
        assert!(vanished(&io::Error::from(io::ErrorKind::NotFound)));
        assert!(vanished(&io::Error::from_raw_os_error(libc::ESRCH)));
        assert!(!vanished(&io::Error::from_raw_os_error(libc::EACCES)));
    }
}
