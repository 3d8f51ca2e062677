//! `discovery.process`: one target per process on this Linux host, read from `/proc` (spec
//! alloy-components §6.2; Alloy's `internal/component/discovery/process`).
//!
//! ```alloy
//! discovery.process "all" {
//!   join             = discovery.kubernetes.pods.targets
//!   refresh_interval = "60s"
//!   discover_config {
//!     cgroup_path = true
//!   }
//! }
//! ```
//!
//! * Arguments ([`Arguments`]): `join` (targets, default `[]`), `refresh_interval` (`"60s"`),
//!   and the `discover_config` block choosing the labels: `exe`, `cwd`, `commandline`, `uid`,
//!   `username`, `container_id` (on) and `cgroup_path` (off).
//! * Export: `targets`. Each process gets `__process_pid__` and, when enabled and non-empty,
//!   `__meta_process_exe` (`readlink exe`), `__meta_process_cwd`, `__meta_process_commandline`
//!   (`cmdline`, arguments joined by spaces), `__meta_process_uid` (real uid from `status`),
//!   `__meta_process_username` (that uid in `/etc/passwd`), `__container_id__` (the 64-hex id
//!   in `cgroup`: see [`container_id_from_cgroup`]) and `__meta_process_cgroup_path` (every
//!   `cgroup` line, `|`-joined). Targets are ordered by pid.
//! * Which processes are left out is Alloy's rule: a process whose `exe`, `cwd`, `cmdline` or
//!   `cgroup` cannot be read (for whichever of them is needed) is skipped; silently when it
//!   exited meanwhile (`ENOENT`/`ESRCH`, which also covers kernel threads, having no `exe`),
//!   otherwise the failure is reported (typically `EACCES` when not running as root). A failed
//!   `status` read only loses the uid and user name. `scraper` must run as root in the host's
//!   PID namespace to see every process, as Alloy must.
//! * `join` ([`join`](self::join)): external targets are indexed by container id
//!   (`__container_id__`, `__meta_kubernetes_pod_container_id` without its `containerd://`,
//!   `docker://` or `cri-o://` prefix, `__meta_docker_container_id`); a process with a
//!   matching `__container_id__` gets the external labels merged over its own. Unmatched
//!   processes and all external targets are exported too, as Alloy does.
//! * Timing: `/proc` is walked once while the component is built, so the first evaluation of
//!   its dependants already sees processes, then every `refresh_interval` (measured from the
//!   end of the previous walk, on a blocking thread). Targets are published only when they
//!   changed. A new `join` is applied at once to the last walk's processes.
//!
//! [`container_id_from_cgroup`], [`container_id_of_pid`] and [`container_id_from_target`] are
//! also what `pyroscope.ebpf` matches processes to targets with.
//!
//! # Differences from Alloy, on purpose
//!
//! * `uid` and `username` default to on, as Alloy's reference page says; Alloy's Go defaults
//!   leave them off (so Alloy omits those two `__meta_` labels unless asked for them).
//! * `refresh_interval = "0s"` is a config error; Alloy panics on it.
//! * A `/proc` that cannot be listed keeps the last targets and makes the component unhealthy
//!   until a walk succeeds; Alloy's component exits.
//! * A changed `discover_config` is applied with an immediate walk, and a changed
//!   `refresh_interval` restarts the timer; Alloy waits for its next tick.
//! * Unreadable processes: Alloy logs an error per process per refresh. We log each at debug,
//!   warn when their number changes, and list a few in the debug info.
//! * User names come from the passwd file only (Go's pure lookup); a cgo-built Alloy asks NSS,
//!   which also knows LDAP/SSSD users.
//! * External targets with a container id come last in the order of `join`, not in Go's random
//!   map order.
//!
//! Layout: [`args`] (the block), `procfs` (raw reads of one process's files), `discover`
//! (one walk: labels per process, what is skipped), `users` (passwd cache), [`container`]
//! (container ids) and `join`.

pub mod args;
mod discover;
mod join;
mod procfs;
mod users;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use crate::targets::container::{
    CONTAINER_ID_LABEL, container_id_from_cgroup, container_id_from_target, container_id_of_pid,
};
pub use args::{Arguments, DiscoverConfig};
pub use discover::{
    CGROUP_PATH_LABEL, COMMANDLINE_LABEL, CWD_LABEL, DiscoverError, EXE_LABEL, PID_LABEL, Problem,
    UID_LABEL, USERNAME_LABEL,
};

use crate::gocompat::time::format_go_duration;
use crate::gocompat::time::rfc3339_nanos;
use crate::labels::LabelSet;
use crate::runtime::health::Health;
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::value::Value;
use crate::targets as target;
use discover::Walk;
use procfs::ProcFs;
use users::Users;

/// How many unreadable processes the debug info lists.
const PROBLEM_EXAMPLES: usize = 5;

/// Where processes and user names are read from.
struct Host {
    procfs: ProcFs,
    users: Mutex<Users>,
}

impl Host {
    fn discover(&self, cfg: &DiscoverConfig) -> Result<Walk, DiscoverError> {
        let mut users = crate::sync::lock(&self.users);
        discover::discover(&self.procfs, &mut users, cfg)
    }
}

/// The running component.
pub struct Process {
    id: String,
    exports: ExportsHandle,
    host: Arc<Host>,
    state: Mutex<State>,
    /// Wakes the refresh loop when the interval or the discover config changed.
    rearm: Notify,
}

struct State {
    args: Arguments,
    /// Bumped when `discover_config` changes, so a walk started with the old config is
    /// discarded rather than published over the new one.
    generation: u64,
    /// The last successful walk.
    processes: Vec<Arc<LabelSet>>,
    /// What was last published: `processes` joined with `args.join`.
    output: Vec<Arc<LabelSet>>,
    status: Status,
}

#[derive(Default)]
struct Status {
    refreshes: u64,
    publications: u64,
    last_refresh: Option<SystemTime>,
    last_duration: Option<std::time::Duration>,
    last_error: Option<String>,
    unreadable: usize,
    examples: Vec<Problem>,
}

fn exports(targets: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("targets".to_string(), Value::Array(targets));
    Value::Object(m)
}

impl Process {
    fn with_host(opts: ComponentOptions, args: Arguments, host: Host) -> Self {
        let component = Process {
            id: opts.id,
            exports: opts.exports,
            host: Arc::new(host),
            state: Mutex::new(State {
                args,
                generation: 0,
                processes: Vec::new(),
                output: Vec::new(),
                status: Status::default(),
            }),
            rearm: Notify::new(),
        };
        {
            let mut st = component.state();
            component.walk_now(&mut st);
        }
        component
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Walks synchronously (build, and a changed discover config) and publishes.
    fn walk_now(&self, st: &mut State) {
        let started = Instant::now();
        let result = self
            .host
            .discover(&st.args.discover_config)
            .map_err(|e| e.to_string());
        self.apply_walk(st, result, started);
    }

    fn apply_walk(&self, st: &mut State, result: Result<Walk, String>, started: Instant) {
        let elapsed = started.elapsed();
        st.status.refreshes += 1;
        st.status.last_refresh = Some(SystemTime::now());
        st.status.last_duration = Some(elapsed);
        match result {
            Ok(walk) => {
                if st.status.last_error.take().is_some() {
                    tracing::info!(component = %self.id, "listing processes works again");
                }
                self.note_problems(st, &walk.problems);
                tracing::debug!(
                    component = %self.id,
                    processes = walk.targets.len(),
                    unreadable = walk.problems.len(),
                    elapsed_ms = elapsed.as_secs_f64() * 1e3,
                    "walked processes"
                );
                st.processes = walk.targets;
                self.publish(st);
            }
            Err(e) => {
                tracing::warn!(component = %self.id, error = %e, "cannot list processes; keeping the last targets");
                st.status.last_error = Some(e);
            }
        }
    }

    fn note_problems(&self, st: &mut State, problems: &[Problem]) {
        for p in problems {
            tracing::debug!(component = %self.id, pid = p.pid, file = p.file, error = %p.error, "cannot read process info; process skipped or labels missing");
        }
        if problems.len() != st.status.unreadable
            && let Some(first) = problems.first()
        {
            tracing::warn!(
                component = %self.id,
                count = problems.len(),
                example_pid = first.pid,
                example_file = first.file,
                example_error = %first.error,
                "some processes could not be read (not running as root?); they are skipped or lack labels"
            );
        }
        st.status.unreadable = problems.len();
        st.status.examples = problems.iter().take(PROBLEM_EXAMPLES).cloned().collect();
    }

    /// Joins and publishes, if the result differs from what was last published.
    fn publish(&self, st: &mut State) {
        let output = join::join(&st.processes, &st.args.join);
        if output == st.output {
            return;
        }
        let values = output.iter().map(|t| target::value(t.clone())).collect();
        self.exports.publish(exports(values));
        st.status.publications += 1;
        st.output = output;
    }

    /// One periodic walk on a blocking thread.
    async fn refresh(self: &Arc<Self>) {
        let (cfg, generation) = {
            let st = self.state();
            (st.args.discover_config, st.generation)
        };
        let host = self.host.clone();
        let started = Instant::now();
        let result =
            match crate::runtime::task::spawn_blocking("discovery.process.walk", move || {
                host.discover(&cfg)
            })
            .await
            {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(e) => Err(format!("process walk did not complete: {e}")),
            };
        let mut st = self.state();
        if st.generation == generation {
            self.apply_walk(&mut st, result, started);
        }
    }
}

impl Component for Process {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new())
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let host = Host {
            procfs: ProcFs::host(),
            users: Mutex::new(Users::host()),
        };
        Ok(Process::with_host(opts, args, host))
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        // Held across walking and publishing so that two updates cannot publish out of order.
        let mut st = self.state();
        let rewalk = args.discover_config != st.args.discover_config;
        let rearm = rewalk || args.refresh_interval != st.args.refresh_interval;
        st.args = args;
        if rewalk {
            st.generation += 1;
            self.walk_now(&mut st);
        } else {
            self.publish(&mut st);
        }
        if rearm {
            self.rearm.notify_one();
        }
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        loop {
            let interval = self.state().args.refresh_interval.get();
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = self.rearm.notified() => continue,
                _ = tokio::time::sleep(interval) => {}
            }
            self.refresh().await;
        }
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let st = self.state();
        let s = &st.status;
        let examples: Vec<serde_json::Value> = s
            .examples
            .iter()
            .map(|p| serde_json::json!({"pid": p.pid, "file": p.file, "error": p.error}))
            .collect();
        Some(serde_json::json!({
            "processes": st.processes.len(),
            "targets": st.output.len(),
            "join_targets": st.args.join.len(),
            "refresh_interval": st.args.refresh_interval.to_string(),
            "refreshes": s.refreshes,
            "publications": s.publications,
            "last_refresh": s.last_refresh.map(rfc3339_nanos),
            "last_refresh_duration": s.last_duration.map(format_go_duration),
            "unreadable_processes": s.unreadable,
            "unreadable_examples": examples,
            "last_error": s.last_error,
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.state();
        st.status
            .last_error
            .as_ref()
            .map(|e| Health::unhealthy(format!("last refresh failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::runtime::HealthState;
    use crate::syntax::decode;
    use crate::targets::Shared;

    const ID: &str = "aa11bb22cc33dd44ee55ff6600778899aa11bb22cc33dd44ee55ff6600778899";

    fn decode_args(src: &str) -> Arguments {
        decode::decode_source(src).unwrap_or_else(|d| panic!("decode: {d:?}"))
    }

    fn add_process(root: &Path, pid: u32, exe: &str, cgroup: &str) {
        let dir = root.join("proc").join(pid.to_string());
        std::fs::create_dir_all(&dir).expect("mkdir");
        symlink(exe, dir.join("exe")).expect("exe");
        symlink("/", dir.join("cwd")).expect("cwd");
        std::fs::write(dir.join("cmdline"), format!("{exe}\0")).expect("cmdline");
        std::fs::write(dir.join("status"), "Uid:\t0\t0\t0\t0\n").expect("status");
        std::fs::write(dir.join("cgroup"), cgroup).expect("cgroup");
    }

    struct Fixture {
        dir: tempfile::TempDir,
        exports: ExportsHandle,
        component: Arc<Process>,
    }

    impl Fixture {
        fn new(args: &str) -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir(dir.path().join("proc")).expect("mkdir");
            std::fs::write(dir.path().join("passwd"), "root:x:0:0::/root:/bin/sh\n")
                .expect("passwd");
            add_process(dir.path(), 1, "/sbin/init", "0::/init.scope\n");
            add_process(
                dir.path(),
                50,
                "/usr/bin/app",
                &format!("0::/system.slice/docker-{ID}.scope\n"),
            );
            let opts = ComponentOptions::standalone(
                "discovery.process.t",
                "discovery.process",
                Process::initial_exports(),
            );
            let exports = opts.exports.clone();
            let host = Host {
                procfs: ProcFs::new(dir.path().join("proc")),
                users: Mutex::new(Users::new(dir.path().join("passwd"))),
            };
            let component = Arc::new(Process::with_host(opts, decode_args(args), host));
            Fixture {
                dir,
                exports,
                component,
            }
        }

        fn targets(&self) -> Vec<BTreeMap<String, String>> {
            let Value::Object(m) = self.exports.current() else {
                panic!("exports not an object")
            };
            decode::from_value(&m["targets"]).expect("list(map(string))")
        }

        fn pids(&self) -> Vec<String> {
            self.targets()
                .iter()
                .filter_map(|t| t.get(PID_LABEL).cloned())
                .collect()
        }
    }

    #[test]
    fn build_publishes_the_first_walk() {
        let f = Fixture::new("");
        let targets = f.targets();
        assert_eq!(f.pids(), ["1", "50"]);
        assert_eq!(targets[1][EXE_LABEL], "/usr/bin/app");
        assert_eq!(targets[1][CONTAINER_ID_LABEL], ID);
        assert_eq!(targets[1][USERNAME_LABEL], "root");
        assert!(!targets[0].contains_key(CONTAINER_ID_LABEL));
        let info = f.component.debug_info().expect("debug info");
        assert_eq!(info["processes"], 2);
        assert_eq!(info["publications"], 1);
        assert_eq!(info["last_error"], serde_json::Value::Null);
        assert!(f.component.health().is_none());
    }

    #[test]
    fn update_rejoins_and_rewalks_on_a_new_discover_config() {
        let f = Fixture::new("");
        let mut args = decode_args("");
        args.join = vec![Shared::from(
            [
                ("__meta_docker_container_id", ID),
                ("__meta_docker_container_name", "/web"),
            ]
            .into_iter()
            .collect::<LabelSet>(),
        )];
        f.component.update(args.clone()).expect("update");
        let targets = f.targets();
        assert_eq!(targets.len(), 3);
        assert_eq!(targets[1]["__meta_docker_container_name"], "/web");
        assert_eq!(targets[1][PID_LABEL], "50");
        assert!(!targets[2].contains_key(PID_LABEL));

        // Same arguments again: nothing new is published.
        let publications = f.component.debug_info().expect("info")["publications"].clone();
        f.component.update(args.clone()).expect("update");
        assert_eq!(
            f.component.debug_info().expect("info")["publications"],
            publications
        );

        // A new discover config walks again at once.
        add_process(f.dir.path(), 60, "/usr/bin/new", "0::/\n");
        args.discover_config.container_id = false;
        f.component.update(args).expect("update");
        let targets = f.targets();
        assert_eq!(targets.len(), 4, "{targets:#?}");
        assert!(targets.iter().all(|t| !t.contains_key(CONTAINER_ID_LABEL)));
    }

    #[tokio::test]
    async fn run_refreshes_and_reports_a_lost_proc_root() {
        let f = Fixture::new("refresh_interval = \"50ms\"");
        let stop = CancellationToken::new();
        let task = tokio::spawn(f.component.clone().run(stop.clone()));

        add_process(f.dir.path(), 70, "/usr/bin/late", "0::/\n");
        wait_for(|| f.pids().contains(&"70".to_string())).await;

        std::fs::remove_dir_all(f.dir.path().join("proc/70")).expect("rm");
        wait_for(|| !f.pids().contains(&"70".to_string())).await;

        // Listing fails: the last targets stay, the component is unhealthy.
        std::fs::rename(f.dir.path().join("proc"), f.dir.path().join("gone")).expect("mv");
        wait_for(|| f.component.health().is_some()).await;
        let health = f.component.health().expect("unhealthy");
        assert_eq!(health.state, HealthState::Unhealthy);
        assert!(
            health.message.contains("listing processes in"),
            "{health:?}"
        );
        assert_eq!(f.pids(), ["1", "50"]);

        std::fs::rename(f.dir.path().join("gone"), f.dir.path().join("proc")).expect("mv");
        wait_for(|| f.component.health().is_none()).await;

        stop.cancel();
        task.await.expect("joins").expect("run ends cleanly");
    }

    async fn wait_for(cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !cond() {
            assert!(Instant::now() < deadline, "condition not met in time");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
