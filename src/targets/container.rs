//! Container ids: from a process's cgroup file, and from the labels of other discoveries.
//!
//! Shared with `pyroscope.ebpf`, which matches sampled processes to targets the same way.

use std::path::Path;
use std::sync::LazyLock;

use crate::relabel::regex::Captures;
use crate::relabel::{GoRegex, LabelSet, RegexError};

/// The label `discovery.process` puts a process's container id in.
pub const CONTAINER_ID_LABEL: &str = "__container_id__";

/// Alloy's `cgroupContainerIDRe` (`^.*/(?:.*-)?([0-9a-f]{64})(?:\.|\s*$)`), restated for an
/// anchored engine: our Go-regex front end always matches the whole line, so the tail Alloy
/// leaves open after a `.` is spelled out. The capture is the same because both forms accept
/// exactly the same prefixes, in the same priority order.
const CGROUP_CONTAINER_ID: &str = r".*/(?:.*-)?([0-9a-f]{64})(?:\..*|\s*)";

static CGROUP_CONTAINER_ID_RE: LazyLock<Result<GoRegex, RegexError>> =
    LazyLock::new(|| GoRegex::new(CGROUP_CONTAINER_ID));

/// Runtime prefixes of `__meta_kubernetes_pod_container_id` (`containerd://<id>`).
const RUNTIME_PREFIXES: [&str; 3] = ["docker://", "containerd://", "cri-o://"];

/// The lines of a file as Go's `bufio.Scanner` yields them: split at `\n`, a trailing `\r`
/// dropped, and no empty last line for a final newline. Alloy reads cgroup files that way,
/// and `__meta_process_cgroup_path` shows the lines joined.
pub(crate) fn scanner_lines(text: &str) -> impl Iterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut lines = body.split('\n');
    if text.is_empty() {
        // `split` yields one empty piece for an empty input; a scanner yields nothing.
        lines.next();
    }
    lines.map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// The container id in `/proc/<pid>/cgroup` text: the 64-hex-digit id of the first line that
/// names one (Docker `/docker/<id>`, systemd `docker-<id>.scope`, containerd
/// `cri-containerd-<id>.scope`, CRI-O `crio-<id>.scope`, cgroup v1 and v2 alike).
pub fn container_id_from_cgroup(cgroup_file_contents: &str) -> Option<String> {
    let re = CGROUP_CONTAINER_ID_RE.as_ref().ok()?;
    let mut caps = Captures::default();
    for line in scanner_lines(cgroup_file_contents) {
        // Cheap precheck: most host processes' lines are short and cannot hold an id.
        if line.len() < 65 {
            continue;
        }
        if re.captures_at(line, 0, 2, &mut caps)
            && let Some((s, e)) = caps.get(1)
        {
            return Some(line[s..e].to_string());
        }
    }
    None
}

/// The container id of a running process, from `/proc/<pid>/cgroup`; `None` when the process
/// is not in a container, is gone, or the file cannot be read.
pub fn container_id_of_pid(pid: u32) -> Option<String> {
    container_id_of_pid_in(Path::new("/proc"), pid)
}

pub(crate) fn container_id_of_pid_in(proc_root: &Path, pid: u32) -> Option<String> {
    let bytes = std::fs::read(proc_root.join(pid.to_string()).join("cgroup")).ok()?;
    container_id_from_cgroup(&String::from_utf8_lossy(&bytes))
}

/// The container id a target stands for, in Alloy's order: `__container_id__`, then
/// `__meta_kubernetes_pod_container_id` (only with a known runtime prefix, which is
/// stripped), then `__meta_docker_container_id`, then `__meta_dockerswarm_task_container_id`.
pub fn container_id_from_target(labels: &LabelSet) -> Option<String> {
    lookup(labels, true).map(str::to_string)
}

/// The key `join` indexes by: as [`container_id_from_target`] but without the Docker Swarm
/// label, which Alloy's `discovery.process` does not consult (only `pyroscope.ebpf` does).
pub(crate) fn join_key(labels: &LabelSet) -> Option<&str> {
    lookup(labels, false)
}

fn lookup(labels: &LabelSet, swarm: bool) -> Option<&str> {
    if let Some(id) = labels.get(CONTAINER_ID_LABEL) {
        return Some(id);
    }
    if let Some(id) = labels.get("__meta_kubernetes_pod_container_id") {
        // Alloy stops here even when the prefix is unknown: a pod container id never falls
        // through to the Docker labels.
        return RUNTIME_PREFIXES
            .iter()
            .find_map(|p| id.strip_prefix(p))
            .filter(|id| !id.is_empty());
    }
    if let Some(id) = labels.get("__meta_docker_container_id") {
        return Some(id);
    }
    if swarm {
        return labels.get("__meta_dockerswarm_task_container_id");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "9a7c3b2f0e1d4c5b6a7980716253443526170809a0b1c2d3e4f5061728394a5b";
    const ID2: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn the_pattern_compiles() {
        assert!(CGROUP_CONTAINER_ID_RE.is_ok(), "{CGROUP_CONTAINER_ID_RE:?}");
    }

    #[test]
    fn container_ids_from_cgroup_lines() {
        let cases: Vec<(&str, String, Option<&str>)> = vec![
            ("empty file", String::new(), None),
            ("host process, cgroup v2", "0::/init.scope\n".into(), None),
            (
                "systemd user session",
                "0::/user.slice/user-1000.slice/session-2.scope\n".into(),
                None,
            ),
            ("docker, cgroup v2", format!("0::/docker/{ID}\n"), Some(ID)),
            (
                "docker with systemd driver",
                format!("0::/system.slice/docker-{ID}.scope\n"),
                Some(ID),
            ),
            (
                "containerd under kubelet (systemd driver)",
                format!(
                    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c.slice/cri-containerd-{ID}.scope\n"
                ),
                Some(ID),
            ),
            (
                "containerd under kubelet (cgroupfs driver)",
                format!("0::/kubepods/besteffort/pod5e6f7a8b-1111-2222-3333-444455556666/{ID}\n"),
                Some(ID),
            ),
            (
                "cri-o",
                format!("0::/kubepods.slice/kubepods-pod1.slice/crio-{ID}.scope\n"),
                Some(ID),
            ),
            (
                "cri-o conmon carries its container's id",
                format!("0::/kubepods.slice/crio-conmon-{ID}.scope\n"),
                Some(ID),
            ),
            (
                "cgroup v1: first line with an id wins",
                format!(
                    "12:pids:/docker/{ID}\n11:memory:/docker/{ID}\n1:name=systemd:/docker/{ID}\n"
                ),
                Some(ID),
            ),
            (
                "cgroup v1: lines without ids are skipped",
                format!("12:pids:/\n11:cpu,cpuacct:/system.slice/docker-{ID2}.scope\n"),
                Some(ID2),
            ),
            (
                "trailing whitespace and CRLF",
                format!("0::/docker/{ID}  \r\n"),
                Some(ID),
            ),
            ("no trailing newline", format!("0::/docker/{ID}"), Some(ID)),
            ("63 hex digits", format!("0::/docker/{}\n", &ID[..63]), None),
            ("65 hex digits", format!("0::/docker/{ID}0\n"), None),
            (
                "upper-case hex is not an id",
                format!("0::/docker/{}\n", ID.to_uppercase()),
                None,
            ),
            (
                "id must be followed by a dot or the end",
                format!("0::/docker/{ID}-x\n"),
                None,
            ),
            (
                "no slash before the id",
                format!("0::docker-{ID}.scope\n"),
                None,
            ),
            (
                "an id in an earlier path segment followed by a dot",
                format!("0::/x-{ID}.slice/other\n"),
                Some(ID),
            ),
            (
                "the last candidate on a line wins",
                format!("0::/a-{ID2}.slice/b-{ID}.scope\n"),
                Some(ID),
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(
                container_id_from_cgroup(&text).as_deref(),
                want,
                "{name}: {text:?}"
            );
        }
    }

    #[test]
    fn scanner_lines_match_go() {
        let lines = |s| scanner_lines(s).collect::<Vec<_>>();
        assert!(lines("").is_empty());
        assert_eq!(lines("\n"), [""]);
        assert_eq!(lines("a\nb\n"), ["a", "b"]);
        assert_eq!(lines("a\r\n\nb"), ["a", "", "b"]);
    }

    fn labels(pairs: &[(&str, &str)]) -> LabelSet {
        pairs.iter().copied().collect()
    }

    #[test]
    fn container_ids_from_target_labels() {
        /// Labels, the id for `pyroscope.ebpf`, the id `join` uses.
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, Option<&'a str>);
        let cases: &[Case<'_>] = &[
            (&[], None, None),
            (&[("__container_id__", "abc")], Some("abc"), Some("abc")),
            (
                &[
                    ("__container_id__", "abc"),
                    ("__meta_kubernetes_pod_container_id", "containerd://def"),
                ],
                Some("abc"),
                Some("abc"),
            ),
            (
                &[("__meta_kubernetes_pod_container_id", "containerd://def")],
                Some("def"),
                Some("def"),
            ),
            (
                &[("__meta_kubernetes_pod_container_id", "docker://def")],
                Some("def"),
                Some("def"),
            ),
            (
                &[("__meta_kubernetes_pod_container_id", "cri-o://def")],
                Some("def"),
                Some("def"),
            ),
            (
                &[
                    ("__meta_kubernetes_pod_container_id", "rkt://def"),
                    ("__meta_docker_container_id", "ghi"),
                ],
                None,
                None,
            ),
            (
                &[("__meta_docker_container_id", "ghi")],
                Some("ghi"),
                Some("ghi"),
            ),
            (
                &[("__meta_dockerswarm_task_container_id", "jkl")],
                Some("jkl"),
                None,
            ),
            (
                &[
                    ("__meta_docker_container_id", "ghi"),
                    ("__meta_dockerswarm_task_container_id", "jkl"),
                ],
                Some("ghi"),
                Some("ghi"),
            ),
        ];
        for (pairs, want, want_join) in cases {
            let l = labels(pairs);
            assert_eq!(container_id_from_target(&l).as_deref(), *want, "{pairs:?}");
            assert_eq!(join_key(&l), *want_join, "join {pairs:?}");
        }
    }

    #[test]
    fn container_id_of_pid_reads_the_cgroup_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_dir = dir.path().join("42");
        std::fs::create_dir(&pid_dir).expect("mkdir");
        std::fs::write(pid_dir.join("cgroup"), format!("0::/docker/{ID}\n")).expect("write");
        assert_eq!(container_id_of_pid_in(dir.path(), 42).as_deref(), Some(ID));
        assert_eq!(container_id_of_pid_in(dir.path(), 43), None);
        // Our own process is real and, in any case, readable.
        let _ = container_id_of_pid(std::process::id());
    }
}
