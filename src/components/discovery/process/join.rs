//! `join`: enriching processes with the targets of another discovery, by container id.

use std::collections::HashMap;
use std::sync::Arc;

use crate::labels::LabelSet;
use crate::targets::Shared;
use crate::targets::container::join_key;

/// Alloy's `join`, in its output order:
/// 1. external targets without a container id, as they are;
/// 2. every process, with the labels of the external target of the same container id merged
///    over its own (the external side wins a clash), or as it is when none matches;
/// 3. every external target with a container id, as it is, whether or not a process matched
///    it. Of several external targets with one id only the last counts, for merging and here.
///
/// Alloy emits group 3 in Go map order (random); we keep the order of `external`.
/// Unchanged targets are shared, not copied.
pub(crate) fn join(processes: &[Arc<LabelSet>], external: &[Shared]) -> Vec<Arc<LabelSet>> {
    if external.is_empty() {
        return processes.to_vec();
    }
    let mut out = Vec::with_capacity(processes.len() + external.len());
    // Container id → index in `external` of the last target with that id.
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, t) in external.iter().enumerate() {
        match join_key(&t.0) {
            Some(id) => {
                by_id.insert(id, i);
            }
            None => out.push(t.0.clone()),
        }
    }
    for p in processes {
        let matched = join_key(p).and_then(|id| by_id.get(id));
        match matched {
            Some(&i) => out.push(Arc::new(merge(p, &external[i].0))),
            None => out.push(p.clone()),
        }
    }
    let mut kept: Vec<usize> = by_id.into_values().collect();
    kept.sort_unstable();
    out.extend(kept.into_iter().map(|i| external[i].0.clone()));
    out
}

fn merge(base: &LabelSet, over: &LabelSet) -> LabelSet {
    let mut merged = base.clone();
    for (name, value) in over.iter_shared() {
        merged.set_shared(name, value.clone());
    }
    merged
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn t(pairs: &[(&str, &str)]) -> Arc<LabelSet> {
        Arc::new(pairs.iter().copied().collect())
    }

    fn maps(ts: &[Arc<LabelSet>]) -> Vec<BTreeMap<String, String>> {
        ts.iter().map(|t| t.to_map()).collect()
    }

    fn shared(ts: &[Arc<LabelSet>]) -> Vec<Shared> {
        ts.iter().cloned().map(Shared).collect()
    }

    #[test]
    fn the_documented_example() {
        let external = shared(&[
            t(&[("pod", "pod-1"), ("__container_id__", "container-1")]),
            t(&[("pod", "pod-2"), ("__container_id__", "container-2")]),
        ]);
        let processes = [
            t(&[
                ("__process_pid__", "1"),
                ("__container_id__", "container-1"),
            ]),
            t(&[("__process_pid__", "2")]),
        ];
        assert_eq!(
            maps(&join(&processes, &external)),
            maps(&[
                t(&[
                    ("__container_id__", "container-1"),
                    ("__process_pid__", "1"),
                    ("pod", "pod-1")
                ]),
                t(&[("__process_pid__", "2")]),
                t(&[("__container_id__", "container-1"), ("pod", "pod-1")]),
                t(&[("__container_id__", "container-2"), ("pod", "pod-2")]),
            ])
        );
    }

    #[test]
    fn kubernetes_and_docker_ids_join_and_external_labels_win() {
        let id = "abc123";
        let external = shared(&[
            t(&[("__address__", "10.0.0.1:80")]),
            t(&[
                ("__meta_kubernetes_pod_container_id", "containerd://abc123"),
                ("__meta_process_cwd", "/from-k8s"),
                ("app", "web"),
            ]),
            t(&[("__meta_docker_container_id", "d0c")]),
            t(&[("__meta_dockerswarm_task_container_id", "5w4")]),
        ]);
        let processes = [
            t(&[
                ("__process_pid__", "10"),
                ("__container_id__", id),
                ("__meta_process_cwd", "/app"),
            ]),
            t(&[("__process_pid__", "11"), ("__container_id__", "d0c")]),
            t(&[("__process_pid__", "12"), ("__container_id__", "5w4")]),
        ];
        let out = join(&processes, &external);
        assert_eq!(
            maps(&out),
            maps(&[
                // Without a container id: first, untouched. Alloy's process join does not
                // read the swarm label, so that target counts as having none.
                external[0].0.clone(),
                external[3].0.clone(),
                t(&[
                    ("__process_pid__", "10"),
                    ("__container_id__", id),
                    ("__meta_kubernetes_pod_container_id", "containerd://abc123"),
                    ("__meta_process_cwd", "/from-k8s"),
                    ("app", "web"),
                ]),
                t(&[
                    ("__process_pid__", "11"),
                    ("__container_id__", "d0c"),
                    ("__meta_docker_container_id", "d0c"),
                ]),
                processes[2].clone(),
                external[1].0.clone(),
                external[2].0.clone(),
            ])
        );
        // The unmatched process and the external targets are shared, not copied.
        assert!(Arc::ptr_eq(&out[4], &processes[2]));
        assert!(Arc::ptr_eq(&out[5], &external[1].0));
    }

    #[test]
    fn no_join_shares_the_processes() {
        let processes = [t(&[("__process_pid__", "1")])];
        let out = join(&processes, &[]);
        assert!(Arc::ptr_eq(&out[0], &processes[0]));
    }

    #[test]
    fn the_last_external_target_for_an_id_wins() {
        let external = shared(&[
            t(&[("__container_id__", "c"), ("n", "first")]),
            t(&[("__container_id__", "c"), ("n", "second")]),
        ]);
        let processes = [t(&[("__process_pid__", "1"), ("__container_id__", "c")])];
        assert_eq!(
            maps(&join(&processes, &external)),
            maps(&[
                t(&[
                    ("__container_id__", "c"),
                    ("__process_pid__", "1"),
                    ("n", "second")
                ]),
                t(&[("__container_id__", "c"), ("n", "second")]),
            ])
        );
    }
}
