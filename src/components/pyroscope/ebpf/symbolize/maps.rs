//! `/proc/<pid>/maps`: which file (and where in it) backs a user address.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

/// What backs a mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Backing {
    /// No pathname: anonymous memory (JIT code, for instance).
    Anonymous,
    /// A pseudo-path such as `[vdso]`, `[heap]` or `[anon:name]`.
    Special(String),
    /// A file, by its path in the process's mount namespace.
    File {
        path: PathBuf,
        /// The kernel appends " (deleted)" once the file was unlinked; the path then no longer
        /// opens the file the process runs.
        deleted: bool,
    },
}

/// One line of `/proc/<pid>/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapsEntry {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub dev: u64,
    pub inode: u64,
    pub exec: bool,
    pub backing: Backing,
}

impl MapsEntry {
    /// The file offset an address of this mapping corresponds to.
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr.wrapping_sub(self.start).wrapping_add(self.offset)
    }

    /// The name frames in this mapping report as their module.
    pub fn module_name(&self) -> Arc<str> {
        match &self.backing {
            Backing::Anonymous => Arc::from(super::UNKNOWN),
            Backing::Special(name) => Arc::from(name.as_str()),
            Backing::File { path, .. } => match path.file_name() {
                Some(name) => Arc::from(name.to_string_lossy().as_ref()),
                None => Arc::from(path.to_string_lossy().as_ref()),
            },
        }
    }
}

/// Parses the whole text of a maps file, keeping only executable mappings (only those can hold
/// an instruction pointer or a return address), sorted by start address. Malformed lines are
/// skipped rather than failing the whole process: the kernel format is stable, and losing one
/// line costs at most a few `[unknown]` frames.
pub(crate) fn parse(text: &[u8]) -> Vec<MapsEntry> {
    let mut entries: Vec<MapsEntry> = text
        .split(|&b| b == b'\n')
        .filter_map(parse_line)
        .filter(|e| e.exec)
        .collect();
    entries.sort_by_key(|e| e.start);
    entries
}

/// Parses one line: `start-end perms offset major:minor inode [pathname]`.
pub(crate) fn parse_line(line: &[u8]) -> Option<MapsEntry> {
    let mut rest = line;
    let range = next_field(&mut rest)?;
    let perms = next_field(&mut rest)?;
    let offset = next_field(&mut rest)?;
    let dev = next_field(&mut rest)?;
    let inode = next_field(&mut rest)?;

    let (start, end) = split_once(range, b'-')?;
    let start = parse_hex(start)?;
    let end = parse_hex(end)?;
    if end <= start {
        return None;
    }
    let exec = perms.get(2) == Some(&b'x');
    let offset = parse_hex(offset)?;
    let (major, minor) = split_once(dev, b':')?;
    let dev = libc::makedev(
        u32::try_from(parse_hex(major)?).ok()?,
        u32::try_from(parse_hex(minor)?).ok()?,
    );
    let inode = std::str::from_utf8(inode).ok()?.parse::<u64>().ok()?;

    // The pathname is the rest of the line after the padding; it may itself contain spaces.
    let path = trim_start(rest);
    let backing = if path.is_empty() {
        Backing::Anonymous
    } else if path.first() == Some(&b'[') && path.last() == Some(&b']') {
        Backing::Special(String::from_utf8_lossy(path).into_owned())
    } else {
        let (path, deleted) = match path.strip_suffix(b" (deleted)") {
            Some(p) => (p, true),
            None => (path, false),
        };
        Backing::File {
            path: PathBuf::from(unescape(path)),
            deleted,
        }
    };
    Some(MapsEntry {
        start,
        end,
        offset,
        dev,
        inode,
        exec,
        backing,
    })
}

/// Index of the entry containing `addr` in entries sorted by start.
#[cfg(test)]
pub(crate) fn find(entries: &[MapsEntry], addr: u64) -> Option<usize> {
    let idx = entries.partition_point(|e| e.start <= addr);
    let idx = idx.checked_sub(1)?;
    (addr < entries[idx].end).then_some(idx)
}

/// The kernel writes a newline in a path as `\012` so that lines stay lines.
fn unescape(path: &[u8]) -> OsString {
    if !path.windows(4).any(|w| w == b"\\012") {
        return OsStr::from_bytes(path).to_os_string();
    }
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        if path[i..].starts_with(b"\\012") {
            out.push(b'\n');
            i += 4;
        } else {
            out.push(path[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

fn next_field<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let s = trim_start(rest);
    let end = s.iter().position(|&b| b == b' ').unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let (field, tail) = s.split_at(end);
    *rest = tail;
    Some(field)
}

fn trim_start(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b' ').unwrap_or(s.len());
    &s[start..]
}

fn split_once(s: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == sep)?;
    Some((&s[..i], &s[i + 1..]))
}

fn parse_hex(s: &[u8]) -> Option<u64> {
    u64::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, deleted: bool) -> Backing {
        Backing::File {
            path: PathBuf::from(path),
            deleted,
        }
    }

    /// start, end, offset, inode, exec, backing
    type Parsed = (u64, u64, u64, u64, bool, Backing);

    #[test]
    fn parses_lines() {
        let cases: &[(&str, &str, Option<Parsed>)] = &[
            (
                "library",
                "7f3c1a428000-7f3c1a5bd000 r-xp 00028000 fe:01 1835223                    /usr/lib/x86_64-linux-gnu/libc.so.6",
                Some((
                    0x7f3c1a428000,
                    0x7f3c1a5bd000,
                    0x28000,
                    1835223,
                    true,
                    file("/usr/lib/x86_64-linux-gnu/libc.so.6", false),
                )),
            ),
            (
                "deleted file",
                "55d0c0a00000-55d0c0a01000 r-xp 00001000 08:02 42 /tmp/busy (deleted)",
                Some((
                    0x55d0c0a00000,
                    0x55d0c0a01000,
                    0x1000,
                    42,
                    true,
                    file("/tmp/busy", true),
                )),
            ),
            (
                "path with spaces",
                "1000-2000 r-xp 00000000 08:02 7   /opt/my app/bin/a b",
                Some((
                    0x1000,
                    0x2000,
                    0,
                    7,
                    true,
                    file("/opt/my app/bin/a b", false),
                )),
            ),
            (
                "path with spaces, deleted",
                "1000-2000 r-xp 00000000 08:02 7 /opt/my app/x (deleted)",
                Some((0x1000, 0x2000, 0, 7, true, file("/opt/my app/x", true))),
            ),
            (
                "anonymous",
                "7f3c1a200000-7f3c1a300000 rwxp 00000000 00:00 0 ",
                Some((
                    0x7f3c1a200000,
                    0x7f3c1a300000,
                    0,
                    0,
                    true,
                    Backing::Anonymous,
                )),
            ),
            (
                "anonymous without trailing space",
                "7f3c1a200000-7f3c1a300000 rw-p 00000000 00:00 0",
                Some((
                    0x7f3c1a200000,
                    0x7f3c1a300000,
                    0,
                    0,
                    false,
                    Backing::Anonymous,
                )),
            ),
            (
                "vdso",
                "7ffd5e5f2000-7ffd5e5f4000 r-xp 00000000 00:00 0                          [vdso]",
                Some((
                    0x7ffd5e5f2000,
                    0x7ffd5e5f4000,
                    0,
                    0,
                    true,
                    Backing::Special("[vdso]".into()),
                )),
            ),
            (
                "named anonymous",
                "1000-2000 rw-p 00000000 00:00 0 [anon:glibc: malloc arena]",
                Some((
                    0x1000,
                    0x2000,
                    0,
                    0,
                    false,
                    Backing::Special("[anon:glibc: malloc arena]".into()),
                )),
            ),
            (
                "escaped newline",
                "1000-2000 r-xp 00000000 08:02 7 /tmp/a\\012b",
                Some((0x1000, 0x2000, 0, 7, true, file("/tmp/a\nb", false))),
            ),
            ("empty", "", None),
            ("truncated", "1000-2000 r-xp 00000000", None),
            ("bad range", "2000-1000 r-xp 00000000 08:02 7 /x", None),
            ("not hex", "zz-2000 r-xp 00000000 08:02 7 /x", None),
        ];
        for (name, line, want) in cases {
            let got = parse_line(line.as_bytes())
                .map(|e| (e.start, e.end, e.offset, e.inode, e.exec, e.backing));
            assert_eq!(&got, want, "case {name}");
        }
    }

    #[test]
    fn device_numbers() {
        let e = parse_line(b"1000-2000 r-xp 00000000 fe:01 5 /x").expect("parses");
        assert_eq!(e.dev, libc::makedev(0xfe, 1));
    }

    #[test]
    fn keeps_executable_sorted_and_finds() {
        let text = b"\
3000-4000 r-xp 00001000 08:02 9 /lib/b.so
1000-2000 r-xp 00000000 08:02 8 /bin/a
2000-3000 rw-p 00000000 00:00 0 [heap]
5000-6000 r-xp 00000000 00:00 0 [vdso]
";
        let entries = parse(text);
        let starts: Vec<u64> = entries.iter().map(|e| e.start).collect();
        assert_eq!(starts, vec![0x1000, 0x3000, 0x5000]);
        let cases: &[(u64, Option<u64>)] = &[
            (0x0fff, None),
            (0x1000, Some(0x1000)),
            (0x1fff, Some(0x1000)),
            (0x2000, None),
            (0x3abc, Some(0x3000)),
            (0x5fff, Some(0x5000)),
            (0x6000, None),
        ];
        for (addr, want) in cases {
            let got = find(&entries, *addr).map(|i| entries[i].start);
            assert_eq!(got, *want, "addr {addr:#x}");
        }
        let b = &entries[1];
        assert_eq!(b.file_offset(0x3abc), 0x1abc);
        assert_eq!(&*b.module_name(), "b.so");
        assert_eq!(&*entries[2].module_name(), "[vdso]");
    }

    #[test]
    fn own_maps_parse() {
        let text = std::fs::read("/proc/self/maps").expect("read own maps");
        let entries = parse(&text);
        let here = own_maps_parse as fn() as usize as u64;
        let idx = find(&entries, here).expect("own code is mapped");
        assert!(matches!(entries[idx].backing, Backing::File { .. }));
    }
}
