//! Which target a sampled process belongs to, and the labels its profiles carry (Alloy's
//! pyroscope.ebpf rules, spec §6.1).
//!
//! A target names its processes by `__process_pid__`, or by container id (`__container_id__`,
//! or a Kubernetes/Docker container id label with the runtime prefix stripped). A sampled
//! process is matched by pid first, then by the container id in its cgroup. With
//! `targets_only = false` unmatched processes go to a default target
//! (`service_name="ebpf/unspecified"`); with `true` they are not profiled.

use std::collections::HashMap;

use crate::labels::LabelSet;
use crate::targets::Shared;
use crate::targets::container::container_id_from_target;

/// `__name__` of CPU profiles.
pub const PROFILE_NAME: &str = "process_cpu";
/// Where a process's pid goes (private: `pyroscope.write` strips it).
pub const PID_LABEL: &str = "__process_pid__";
/// Where a process's container id goes (private).
pub const CONTAINER_LABEL: &str = "__container_id__";

/// One target, ready to label profiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Public labels plus `service_name` and `__name__`; per-process labels are added when a
    /// profile is built. Shares its strings with the discovered target, and every profile
    /// shares them again.
    pub labels: LabelSet,
    pub pid: Option<u32>,
    pub container_id: Option<String>,
}

/// The current targets, indexed for lookup by pid and by container id.
#[derive(Debug, Default)]
pub struct Targets {
    list: Vec<Target>,
    by_pid: HashMap<u32, usize>,
    by_container: HashMap<String, usize>,
    default: Option<Target>,
}

impl Targets {
    pub fn new(targets: &[Shared], targets_only: bool) -> Self {
        let mut t = Targets::default();
        for shared in targets {
            let labels = &shared.0;
            let pid = labels.get(PID_LABEL).and_then(|p| p.parse::<u32>().ok());
            let container_id = container_id_from_target(labels);
            if pid.is_none() && container_id.is_none() {
                // Alloy drops such targets too: nothing identifies their processes.
                continue;
            }
            // A clone of the discovered set (reference counts), filtered in place.
            let mut out = LabelSet::clone(labels);
            out.retain(|k, _| !k.starts_with("__") || k == "__name__");
            if !out.contains("service_name") {
                out.set("service_name", &infer_service_name(labels));
            }
            out.set("__name__", PROFILE_NAME);
            let idx = t.list.len();
            if let Some(pid) = pid {
                t.by_pid.entry(pid).or_insert(idx);
            }
            if let Some(id) = &container_id {
                t.by_container.entry(id.clone()).or_insert(idx);
            }
            t.list.push(Target {
                labels: out,
                pid,
                container_id,
            });
        }
        if !targets_only {
            t.default = Some(Target {
                labels: [
                    ("service_name", "ebpf/unspecified"),
                    ("__name__", PROFILE_NAME),
                ]
                .into_iter()
                .collect(),
                pid: None,
                container_id: None,
            });
        }
        t
    }

    /// The target of process `pid`, the default one when no target names it; `container_of` is
    /// asked only when no target names the pid.
    pub fn resolve(
        &self,
        pid: u32,
        container_of: impl FnOnce() -> Option<String>,
    ) -> Option<&Target> {
        self.named(pid, container_of).or(self.default.as_ref())
    }

    /// The target that names process `pid` by pid or container id; never the default one.
    pub fn named(
        &self,
        pid: u32,
        container_of: impl FnOnce() -> Option<String>,
    ) -> Option<&Target> {
        if let Some(&i) = self.by_pid.get(&pid) {
            return self.list.get(i);
        }
        if !self.by_container.is_empty()
            && let Some(id) = container_of()
            && let Some(&i) = self.by_container.get(&id)
        {
            return self.list.get(i);
        }
        None
    }

    /// What processes no target names are profiled as (`targets_only = false`).
    pub fn default_target(&self) -> Option<&Target> {
        self.default.as_ref()
    }

    /// Pids targets name directly.
    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_pid.keys().copied()
    }

    /// Whether some target names a process by pid, as `discovery.process` targets do: a process
    /// newer than the targets may then still be named once discovery has walked /proc again.
    pub fn has_pids(&self) -> bool {
        !self.by_pid.is_empty()
    }

    /// Whether some target is matched by container id (the session then scans cgroups).
    pub fn has_containers(&self) -> bool {
        !self.by_container.is_empty()
    }

    /// Whether processes with no target are profiled too (`targets_only = false`).
    pub fn profiles_everything(&self) -> bool {
        self.default.is_some()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Alloy's inference when a target has no `service_name`, with the `ebpf/` prefix.
fn infer_service_name(labels: &crate::labels::LabelSet) -> String {
    crate::profiles::service_name::infer(|k| labels.get(k), "ebpf/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelSet;

    fn target(pairs: &[(&str, &str)]) -> Shared {
        Shared::from(pairs.iter().copied().collect::<LabelSet>())
    }

    fn get<'a>(t: &'a Target, k: &str) -> Option<&'a str> {
        t.labels.get(k)
    }

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn matches_by_pid_then_container_and_labels_like_alloy() {
        let k8s_id = format!("containerd://{ID}");
        let targets = Targets::new(
            &[
                target(&[
                    ("__process_pid__", "42"),
                    ("__meta_process_exe", "/bin/x"),
                    ("service_name", "x"),
                    ("env", "prod"),
                ]),
                target(&[
                    ("__meta_kubernetes_pod_container_id", &k8s_id),
                    ("__meta_kubernetes_namespace", "otel"),
                    ("__meta_kubernetes_pod_container_name", "collector"),
                    ("namespace", "otel"),
                    ("pod", "collector-0"),
                ]),
                // Neither pid nor container: dropped.
                target(&[("__address__", "a:1")]),
            ],
            true,
        );
        assert_eq!(targets.len(), 2);
        let t = targets
            .resolve(42, || panic!("pid match needs no cgroup"))
            .expect("pid 42");
        assert_eq!(get(t, "service_name"), Some("x"));
        assert_eq!(get(t, "env"), Some("prod"));
        assert_eq!(get(t, "__name__"), Some("process_cpu"));
        assert_eq!(get(t, "__meta_process_exe"), None);

        let t = targets
            .resolve(7, || Some(ID.to_string()))
            .expect("by container");
        assert_eq!(get(t, "service_name"), Some("ebpf/otel/collector"));
        assert_eq!(get(t, "pod"), Some("collector-0"));
        assert_eq!(t.container_id.as_deref(), Some(ID));

        assert!(targets.resolve(8, || None).is_none());
        assert!(targets.resolve(9, || Some("f".repeat(64))).is_none());
        assert!(targets.has_containers());
        assert_eq!(targets.pids().collect::<Vec<_>>(), [42]);
    }

    #[test]
    fn service_name_inference_order() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[
                    (
                        "__meta_kubernetes_pod_annotation_pyroscope_io_service_name",
                        "custom",
                    ),
                    ("__meta_kubernetes_namespace", "ns"),
                    ("__meta_kubernetes_pod_container_name", "c"),
                ],
                "custom",
            ),
            (
                &[
                    ("__meta_kubernetes_namespace", "ns"),
                    ("__meta_kubernetes_pod_container_name", "c"),
                ],
                "ebpf/ns/c",
            ),
            (&[("__meta_docker_container_name", "/web")], "/web"),
            (&[], "ebpf/unspecified"),
        ];
        for (labels, want) in cases {
            let mut l: Vec<(&str, &str)> = labels.to_vec();
            l.push(("__process_pid__", "1"));
            let t = Targets::new(&[target(&l)], true);
            let got = t.resolve(1, || None).expect("target");
            assert_eq!(get(got, "service_name"), Some(*want), "{labels:?}");
        }
    }

    #[test]
    fn targets_only_false_profiles_everything_else_as_unspecified() {
        let t = Targets::new(&[], false);
        let d = t.resolve(5, || None).expect("default target");
        assert_eq!(get(d, "service_name"), Some("ebpf/unspecified"));
        assert!(t.profiles_everything());
        assert!(Targets::new(&[], true).resolve(5, || None).is_none());
    }

    #[test]
    fn named_never_falls_back_to_the_default_target() {
        let t = Targets::new(&[target(&[("__process_pid__", "7")])], false);
        assert!(t.has_pids());
        assert_eq!(t.named(7, || None).and_then(|t| t.pid), Some(7));
        assert!(t.named(8, || None).is_none());
        assert_eq!(t.resolve(8, || None), t.default_target());
        assert!(Targets::new(&[], true).default_target().is_none());
        assert!(!Targets::new(&[], false).has_pids());
    }
}
