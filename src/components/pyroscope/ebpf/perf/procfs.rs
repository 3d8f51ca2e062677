//! The few `/proc` and `/sys` reads the fallback sampler needs.

use std::collections::HashMap;
use std::fs;
use std::io;

/// Caps the host-wide comm cache: with every process sampled, thread ids come and go without
/// the sampler hearing about it, so the cache is dropped wholesale when it grows this big.
const MAX_CACHED_COMMS: usize = 16_384;

/// The thread ids of `pid`, from `/proc/<pid>/task`. `NotFound` when the process is gone.
pub(super) fn tasks(pid: u32) -> io::Result<Vec<u32>> {
    let mut tids = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        // An entry can vanish while the directory is read: that thread exited, which is fine.
        let Ok(entry) = entry else { continue };
        if let Some(tid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// `comm` as the kernel stores it: at most 15 bytes, NUL-padded to 16.
pub(super) fn comm_bytes(raw: &[u8]) -> [u8; 16] {
    let name = raw.strip_suffix(b"\n").unwrap_or(raw);
    // Newer kernels show longer names for some kernel threads; the 16th byte stays a NUL so
    // readers can treat the array as a C string.
    let len = name.len().min(15);
    let mut comm = [0u8; 16];
    comm[..len].copy_from_slice(&name[..len]);
    comm
}

/// Thread names, read once per thread id.
#[derive(Default)]
pub(super) struct Comms {
    by_tid: HashMap<u32, [u8; 16]>,
}

impl Comms {
    /// The name of thread `tid` of process `pid`; all NULs when it cannot be read (the thread
    /// exited before its first sample was read).
    pub(super) fn get(&mut self, pid: u32, tid: u32) -> [u8; 16] {
        if let Some(comm) = self.by_tid.get(&tid) {
            return *comm;
        }
        // Not cached on failure: the thread is gone, and its id may be reused by a thread that
        // does have a name.
        let Ok(raw) = fs::read(format!("/proc/{pid}/task/{tid}/comm")) else {
            return [0; 16];
        };
        let comm = comm_bytes(&raw);
        if self.by_tid.len() >= MAX_CACHED_COMMS {
            self.by_tid.clear();
        }
        self.by_tid.insert(tid, comm);
        comm
    }

    /// Drops the name of a thread that is no longer followed, so a reused id is read afresh.
    pub(super) fn forget(&mut self, tid: u32) {
        self.by_tid.remove(&tid);
    }

    pub(super) fn clear(&mut self) {
        self.by_tid.clear();
    }
}

/// The online CPUs, from `/sys/devices/system/cpu/online`; when that cannot be read, as many
/// CPUs from 0 as `sysconf` counts.
pub(super) fn online_cpus() -> Vec<usize> {
    if let Some(cpus) = fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|list| parse_cpu_list(&list))
    {
        return cpus;
    }
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let count = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (0..usize::try_from(count).unwrap_or(1).max(1)).collect()
}

/// Parses a kernel CPU list such as `0-3,6,8-9`. `None` if it is malformed or empty.
pub(super) fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    // A bound on what a malformed file could make us allocate; far above any real machine.
    const MAX_CPUS: usize = 1 << 16;

    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (first, last): (usize, usize) = match part.split_once('-') {
            Some((first, last)) => (first.trim().parse().ok()?, last.trim().parse().ok()?),
            None => {
                let cpu = part.trim().parse().ok()?;
                (cpu, cpu)
            }
        };
        if first > last || last >= MAX_CPUS || cpus.len() + (last - first) >= MAX_CPUS {
            return None;
        }
        cpus.extend(first..=last);
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// `kernel.perf_event_paranoid`, for messages; `None` when it cannot be read.
pub(super) fn paranoid() -> Option<i32> {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// [`paranoid`] as text for a message.
pub(super) fn paranoid_text() -> String {
    match paranoid() {
        Some(level) => format!("it is {level}"),
        None => "it could not be read".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0\n"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-3"), Some(vec![0, 1, 2, 3]));
        assert_eq!(parse_cpu_list("0-1,4,6-7\n"), Some(vec![0, 1, 4, 6, 7]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(parse_cpu_list("0-99999999"), None);
    }

    #[test]
    fn online_cpus_are_listed() {
        assert!(!online_cpus().is_empty());
    }

    #[test]
    fn comm_is_nul_padded_and_truncated() {
        assert_eq!(&comm_bytes(b"sh\n")[..3], b"sh\0");
        assert_eq!(comm_bytes(b""), [0; 16]);
        let long = comm_bytes(b"kworker/u8:2-events_unbound\n");
        assert_eq!(&long[..15], b"kworker/u8:2-ev");
        assert_eq!(long[15], 0);
    }

    #[test]
    fn own_threads_and_comm() {
        let pid = std::process::id();
        let tids = tasks(pid).expect("own /proc/<pid>/task is readable");
        assert!(tids.contains(&pid));
        let mut comms = Comms::default();
        assert_ne!(comms.get(pid, pid), [0; 16]);
        assert_eq!(
            tasks(u32::MAX).map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound)
        );
    }
}
