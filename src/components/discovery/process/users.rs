//! User names for `__meta_process_username`, from a passwd file.
//!
//! Go's pure `os/user` lookup reads `/etc/passwd` on every call; with a thousand processes per
//! refresh that is a thousand reads of the same file, so the file is parsed once and parsed
//! again only when its size, modification time or inode change.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;

/// What identifies one version of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
    ino: u64,
}

/// A cached passwd file.
#[derive(Debug)]
pub(crate) struct Users {
    path: PathBuf,
    stamp: Option<Stamp>,
    /// Uid as written in the file → user name; the first line for a uid wins.
    names: HashMap<String, String>,
}

impl Users {
    pub(crate) fn new(path: impl Into<PathBuf>) -> Self {
        Users {
            path: path.into(),
            stamp: None,
            names: HashMap::new(),
        }
    }

    /// The host's `/etc/passwd`.
    pub(crate) fn host() -> Self {
        Users::new("/etc/passwd")
    }

    /// Re-reads the file if it changed. On error no names are known until a later refresh
    /// succeeds.
    pub(crate) fn refresh(&mut self) -> io::Result<()> {
        let result = self.reload();
        if result.is_err() {
            self.stamp = None;
            self.names.clear();
        }
        result
    }

    fn reload(&mut self) -> io::Result<()> {
        let meta = std::fs::metadata(&self.path)?;
        let stamp = Stamp {
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ino: meta.ino(),
        };
        if self.stamp == Some(stamp) {
            return Ok(());
        }
        let raw = std::fs::read(&self.path)?;
        self.names = parse_passwd(&String::from_utf8_lossy(&raw));
        self.stamp = Some(stamp);
        Ok(())
    }

    /// The user name of `uid`, if the file has one.
    pub(crate) fn name(&self, uid: u32) -> Option<&str> {
        self.names.get(&uid.to_string()).map(String::as_str)
    }
}

/// The rows Go's `os/user` would accept for a uid lookup: blank and `#` lines skipped, at least
/// seven fields, a name that is not empty and not a NIS `+`/`-` entry, numeric uid and gid.
fn parse_passwd(text: &str) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for line in text.split('\n') {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.splitn(7, ':').collect();
        let [name, _, uid, gid, _, _, _] = parts.as_slice() else {
            continue;
        };
        if name.is_empty() || name.starts_with(['+', '-']) || !go_atoi(uid) || !go_atoi(gid) {
            continue;
        }
        names
            .entry((*uid).to_string())
            .or_insert_with(|| (*name).to_string());
    }
    names
}

/// True when Go's `strconv.Atoi` accepts `s`.
fn go_atoi(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && s.parse::<i64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "\
# comment
root:x:0:0:root:/root:/bin/bash
  daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
short:x:2:2
+nis:x:3:3::/:/bin/sh
badgid:x:4:x::/:/bin/sh
alice:x:1000:1000:Alice,,,:/home/alice:/bin/zsh
alias:x:1000:1000::/home/alias:/bin/sh
:x:5:5::/:/bin/sh
";

    #[test]
    fn parses_like_go_os_user() {
        let names = parse_passwd(PASSWD);
        assert_eq!(names.get("0").map(String::as_str), Some("root"));
        assert_eq!(names.get("1").map(String::as_str), Some("daemon"));
        assert_eq!(names.get("1000").map(String::as_str), Some("alice"));
        for uid in ["2", "3", "4", "5"] {
            assert_eq!(names.get(uid), None, "uid {uid}");
        }
    }

    #[test]
    fn reloads_when_the_file_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("passwd");
        let mut users = Users::new(&path);
        assert!(users.refresh().is_err());
        assert_eq!(users.name(0), None);

        std::fs::write(&path, "root:x:0:0::/root:/bin/sh\n").expect("write");
        users.refresh().expect("reads");
        assert_eq!(users.name(0), Some("root"));
        assert_eq!(users.name(7), None);

        std::fs::write(&path, "root:x:0:0::/root:/bin/sh\nseven:x:7:7::/:/bin/sh\n")
            .expect("write");
        users.refresh().expect("reads");
        assert_eq!(users.name(7), Some("seven"));
    }
}
