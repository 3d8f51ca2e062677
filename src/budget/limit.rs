//! `--memory.limit`: a size, `0` for none, or `auto` (the default): 80 % of the memory limit
//! of the process's cgroup, so a scraper in a container stays clear of the OOM killer without
//! being told its limit twice. The other 20 % is headroom for what moves faster than the
//! sampler sees it.

use std::path::Path;

use crate::runtime::size::parse_size;

/// The share of a cgroup's limit `auto` budgets, in percent.
const AUTO_PERCENT: u64 = 80;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--memory.limit: {0}")]
pub struct LimitError(String);

/// The budget in bytes for a `--memory.limit` value; 0 means none.
pub fn parse_limit(value: &str) -> Result<u64, LimitError> {
    if value.trim().eq_ignore_ascii_case("auto") {
        return Ok(auto(
            Path::new("/sys/fs/cgroup"),
            Path::new("/proc/self/cgroup"),
        ));
    }
    parse_size(value).map_err(LimitError)
}

/// 80 % of the tightest memory limit on the process's cgroup path (v2 `memory.max`, or v1
/// `memory.limit_in_bytes`), 0 when there is none.
fn auto(cgroup_root: &Path, self_cgroup: &Path) -> u64 {
    cgroup_limit(cgroup_root, self_cgroup).map_or(0, |l| l / 100 * AUTO_PERCENT)
}

fn cgroup_limit(root: &Path, self_cgroup: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(self_cgroup).ok()?;
    let mut best: Option<u64> = None;
    for line in text.lines() {
        // "0::/path" (v2) or "4:memory:/path" (v1).
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (dir, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        // A limit anywhere up the path applies; in a container the path is often just "/".
        let mut at = dir.join(path.trim_start_matches('/'));
        loop {
            if let Some(limit) = read_limit(&at.join(file)) {
                best = Some(best.map_or(limit, |b| b.min(limit)));
            }
            if at == dir || !at.pop() {
                break;
            }
        }
    }
    best
}

/// A limit file's value; `max` and v1's "no limit" (a page-aligned number near 2^63) are none.
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let n: u64 = text.trim().parse().ok()?;
    (n < 1 << 62).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn sizes_zero_and_errors() {
        assert_eq!(parse_limit("256MiB"), Ok(256 << 20));
        assert_eq!(parse_limit("0"), Ok(0));
        let err = parse_limit("lots").expect_err("bad");
        assert!(
            err.to_string().starts_with("--memory.limit: invalid size"),
            "{err}"
        );
    }

    #[test]
    fn auto_takes_80_percent_of_the_tightest_cgroup_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("fs");
        let me = dir.path().join("cgroup");

        // v2, limit on a parent of the process's cgroup.
        write(&me, "0::/kubepods/pod1/ctr\n");
        write(&root.join("kubepods/pod1/ctr/memory.max"), "max\n");
        write(&root.join("kubepods/pod1/memory.max"), "1073741824\n");
        write(&root.join("kubepods/memory.max"), "4294967296\n");
        assert_eq!(auto(&root, &me), (1 << 30) / 100 * 80);

        // No limit anywhere.
        write(&root.join("kubepods/pod1/memory.max"), "max\n");
        write(&root.join("kubepods/memory.max"), "max\n");
        assert_eq!(auto(&root, &me), 0);

        // v1: the memory controller's hierarchy; its "unlimited" value is none.
        write(&me, "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n");
        write(
            &root.join("memory/docker/abc/memory.limit_in_bytes"),
            "536870912\n",
        );
        write(
            &root.join("memory/memory.limit_in_bytes"),
            "9223372036854771712\n",
        );
        assert_eq!(auto(&root, &me), (512 << 20) / 100 * 80);

        // Unreadable: none.
        assert_eq!(auto(&root, &dir.path().join("missing")), 0);
    }
}
