//! One walk of the proc root: a target per readable process.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use super::args::DiscoverConfig;
use super::procfs::{ProcFs, vanished};
use super::users::Users;
use crate::relabel::{LabelName, LabelSet, LabelValue};
use crate::targets::container::{CONTAINER_ID_LABEL, container_id_from_cgroup, scanner_lines};

pub const PID_LABEL: &str = "__process_pid__";
pub const EXE_LABEL: &str = "__meta_process_exe";
pub const CWD_LABEL: &str = "__meta_process_cwd";
pub const COMMANDLINE_LABEL: &str = "__meta_process_commandline";
pub const UID_LABEL: &str = "__meta_process_uid";
pub const USERNAME_LABEL: &str = "__meta_process_username";
/// Alloy's code name; its reference page says `__meta_cgroup_path`, which it never sets.
pub const CGROUP_PATH_LABEL: &str = "__meta_process_cgroup_path";

/// Why a walk produced nothing at all.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("listing processes in {}: {source}", root.display())]
    List { root: PathBuf, source: io::Error },
}

/// A read that failed for a reason other than the process exiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub pid: u32,
    /// The file, e.g. `exe`.
    pub file: &'static str,
    pub error: String,
}

/// The result of one walk.
#[derive(Debug, Default)]
pub struct Walk {
    /// One target per process, by ascending pid.
    pub targets: Vec<Arc<LabelSet>>,
    /// Failed reads, in pid order. A failed `exe`, `cwd`, `cmdline` or `cgroup` read drops
    /// the process; a failed `status` or passwd read only drops the uid or user name.
    pub problems: Vec<Problem>,
}

/// Label names allocated once per walk and shared by every target.
struct Names {
    pid: LabelName,
    exe: LabelName,
    cwd: LabelName,
    commandline: LabelName,
    uid: LabelName,
    username: LabelName,
    container_id: LabelName,
    cgroup_path: LabelName,
}

impl Names {
    fn new() -> Self {
        Names {
            pid: PID_LABEL.into(),
            exe: EXE_LABEL.into(),
            cwd: CWD_LABEL.into(),
            commandline: COMMANDLINE_LABEL.into(),
            uid: UID_LABEL.into(),
            username: USERNAME_LABEL.into(),
            container_id: CONTAINER_ID_LABEL.into(),
            cgroup_path: CGROUP_PATH_LABEL.into(),
        }
    }
}

/// Walks `procfs`, reading what `cfg` asks for.
pub(crate) fn discover(
    procfs: &ProcFs,
    users: &mut Users,
    cfg: &DiscoverConfig,
) -> Result<Walk, DiscoverError> {
    let pids = procfs.pids().map_err(|source| DiscoverError::List {
        root: procfs.root().to_path_buf(),
        source,
    })?;
    let mut walk = Walk {
        targets: Vec::with_capacity(pids.len()),
        problems: Vec::new(),
    };
    // Read at most once per walk; Go re-reads the file per process, so a missing file is as
    // silent here as it is there (ENOENT), and any other failure is reported once, not per pid.
    let users_ok = if cfg.username {
        match users.refresh() {
            Ok(()) => true,
            Err(e) => {
                if !vanished(&e) {
                    walk.problems.push(Problem {
                        pid: 0,
                        file: "passwd",
                        error: e.to_string(),
                    });
                }
                false
            }
        }
    } else {
        false
    };
    let names = Names::new();
    for pid in pids {
        let users = users_ok.then_some(&*users);
        if let Some(t) = read_process(procfs, users, cfg, &names, pid, &mut walk.problems) {
            walk.targets.push(Arc::new(t));
        }
    }
    Ok(walk)
}

type Reader = fn(&ProcFs, u32) -> io::Result<String>;

/// One process's target, or `None` when a read that Alloy treats as fatal failed. The order
/// of reads, and which failures skip the process, follow Alloy's `discover`.
fn read_process(
    procfs: &ProcFs,
    users: Option<&Users>,
    cfg: &DiscoverConfig,
    names: &Names,
    pid: u32,
    problems: &mut Vec<Problem>,
) -> Option<LabelSet> {
    let mut note = |file: &'static str, e: io::Error| {
        if !vanished(&e) {
            problems.push(Problem {
                pid,
                file,
                error: e.to_string(),
            });
        }
    };
    let mut labels: Vec<(LabelName, LabelValue)> = Vec::with_capacity(8);
    labels.push((names.pid.clone(), pid.to_string().into()));

    let required: [(bool, &'static str, &LabelName, Reader); 3] = [
        (cfg.exe, "exe", &names.exe, ProcFs::exe),
        (cfg.cwd, "cwd", &names.cwd, ProcFs::cwd),
        (
            cfg.commandline,
            "cmdline",
            &names.commandline,
            ProcFs::cmdline,
        ),
    ];
    for (wanted, file, name, read) in required {
        if !wanted {
            continue;
        }
        match read(procfs, pid) {
            Ok(v) => labels.push((name.clone(), v.into())),
            Err(e) => {
                note(file, e);
                return None;
            }
        }
    }

    if cfg.wants_uid() {
        match procfs.real_uid(pid) {
            Ok(Some(uid)) => {
                if cfg.username
                    && let Some(user) = users.and_then(|u| u.name(uid))
                {
                    labels.push((names.username.clone(), user.into()));
                }
                if cfg.uid {
                    labels.push((names.uid.clone(), uid.to_string().into()));
                }
            }
            Ok(None) => {}
            Err(e) => note("status", e),
        }
    }

    if cfg.wants_cgroup() {
        match procfs.cgroup(pid) {
            Ok(text) => {
                if cfg.container_id
                    && let Some(id) = container_id_from_cgroup(&text)
                {
                    labels.push((names.container_id.clone(), id.into()));
                }
                if cfg.cgroup_path {
                    // Every line, `|`-joined: one per controller on cgroup v1 for relabel
                    // rules to pick from.
                    let path = scanner_lines(&text).collect::<Vec<_>>().join("|");
                    labels.push((names.cgroup_path.clone(), path.into()));
                }
            }
            Err(e) => {
                note("cgroup", e);
                return None;
            }
        }
    }

    // Empty values (a kernel thread's command line) are dropped here, as Alloy omits them.
    Some(labels.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use super::*;

    const ID: &str = "4c1f0c2e6a5b8d7e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6";

    /// A fake process directory. `None` leaves a file out.
    struct Fake<'a> {
        pid: u32,
        exe: Option<&'a str>,
        cwd: Option<&'a str>,
        cmdline: Option<&'a [u8]>,
        uid: Option<u32>,
        cgroup: Option<String>,
    }

    impl Fake<'_> {
        fn write(&self, root: &Path) {
            let dir = root.join(self.pid.to_string());
            std::fs::create_dir_all(&dir).expect("mkdir");
            if let Some(exe) = self.exe {
                symlink(exe, dir.join("exe")).expect("exe");
            }
            if let Some(cwd) = self.cwd {
                symlink(cwd, dir.join("cwd")).expect("cwd");
            }
            if let Some(cmdline) = self.cmdline {
                std::fs::write(dir.join("cmdline"), cmdline).expect("cmdline");
            }
            let status = match self.uid {
                Some(u) => format!("Name:\tx\nUid:\t{u}\t{u}\t{u}\t{u}\nGid:\t0\t0\t0\t0\n"),
                None => "Name:\tx\n".to_string(),
            };
            std::fs::write(dir.join("status"), status).expect("status");
            if let Some(cgroup) = &self.cgroup {
                std::fs::write(dir.join("cgroup"), cgroup).expect("cgroup");
            }
        }
    }

    fn process(pid: u32) -> Fake<'static> {
        Fake {
            pid,
            exe: Some("/usr/bin/app"),
            cwd: Some("/srv"),
            cmdline: Some(b"/usr/bin/app\0--flag\0"),
            uid: Some(1000),
            cgroup: Some("0::/user.slice/user-1000.slice/session-1.scope\n".into()),
        }
    }

    struct Tree {
        dir: tempfile::TempDir,
    }

    impl Tree {
        fn new(fakes: &[Fake<'_>]) -> Tree {
            let dir = tempfile::tempdir().expect("tempdir");
            let proc_root = dir.path().join("proc");
            std::fs::create_dir(&proc_root).expect("mkdir");
            for f in fakes {
                f.write(&proc_root);
            }
            std::fs::write(
                dir.path().join("passwd"),
                "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n",
            )
            .expect("passwd");
            Tree { dir }
        }

        fn procfs(&self) -> ProcFs {
            ProcFs::new(self.dir.path().join("proc"))
        }

        fn users(&self) -> Users {
            Users::new(self.dir.path().join("passwd"))
        }

        fn run(&self, cfg: &DiscoverConfig) -> Walk {
            discover(&self.procfs(), &mut self.users(), cfg).expect("walks")
        }
    }

    fn map(t: &LabelSet) -> BTreeMap<String, String> {
        t.to_map()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_ordinary_process_has_every_default_label() {
        let tree = Tree::new(&[process(42)]);
        let walk = tree.run(&DiscoverConfig::default());
        assert!(walk.problems.is_empty(), "{:?}", walk.problems);
        assert_eq!(walk.targets.len(), 1);
        assert_eq!(
            map(&walk.targets[0]),
            labels(&[
                ("__process_pid__", "42"),
                ("__meta_process_exe", "/usr/bin/app"),
                ("__meta_process_cwd", "/srv"),
                ("__meta_process_commandline", "/usr/bin/app --flag"),
                ("__meta_process_uid", "1000"),
                ("__meta_process_username", "alice"),
            ])
        );
    }

    #[test]
    fn table_of_processes() {
        struct Case {
            name: &'static str,
            fake: Fake<'static>,
            cfg: DiscoverConfig,
            /// `None`: the process is not discovered.
            want: Option<Vec<(&'static str, String)>>,
            /// Whether the skip or missing label is reported as a problem.
            problem: Option<&'static str>,
        }
        let all = DiscoverConfig {
            cgroup_path: true,
            ..DiscoverConfig::default()
        };
        // Only the cgroup-derived labels, so each case's table stays short.
        let cgroup_only = DiscoverConfig {
            exe: false,
            cwd: false,
            commandline: false,
            uid: false,
            username: false,
            ..all
        };
        let cases = vec![
            Case {
                name: "kernel thread: no exe, skipped silently",
                fake: Fake {
                    exe: None,
                    cmdline: Some(b""),
                    uid: Some(0),
                    cgroup: Some("0::/\n".into()),
                    ..process(2)
                },
                cfg: DiscoverConfig::default(),
                want: None,
                problem: None,
            },
            Case {
                name: "kernel thread with exe off: no command line label",
                fake: Fake {
                    exe: None,
                    cwd: Some("/"),
                    cmdline: Some(b""),
                    uid: Some(0),
                    cgroup: Some("0::/\n".into()),
                    ..process(2)
                },
                cfg: DiscoverConfig { exe: false, ..all },
                want: Some(vec![
                    ("__process_pid__", "2".to_string()),
                    ("__meta_process_cwd", "/".to_string()),
                    ("__meta_process_uid", "0".to_string()),
                    ("__meta_process_username", "root".to_string()),
                    ("__meta_process_cgroup_path", "0::/".to_string()),
                ]),
                problem: None,
            },
            Case {
                name: "docker, cgroup v1",
                fake: Fake {
                    cgroup: Some(format!(
                        "12:pids:/docker/{ID}\n11:cpu,cpuacct:/docker/{ID}\n0::/system.slice/containerd.service\n"
                    )),
                    ..process(7)
                },
                cfg: all,
                want: Some(vec![
                    ("__process_pid__", "7".to_string()),
                    ("__meta_process_exe", "/usr/bin/app".to_string()),
                    ("__meta_process_cwd", "/srv".to_string()),
                    (
                        "__meta_process_commandline",
                        "/usr/bin/app --flag".to_string(),
                    ),
                    ("__meta_process_uid", "1000".to_string()),
                    ("__meta_process_username", "alice".to_string()),
                    ("__container_id__", ID.to_string()),
                    (
                        "__meta_process_cgroup_path",
                        format!(
                            "12:pids:/docker/{ID}|11:cpu,cpuacct:/docker/{ID}|0::/system.slice/containerd.service"
                        ),
                    ),
                ]),
                problem: None,
            },
            Case {
                name: "containerd pod, cgroup v2, container id only",
                fake: Fake {
                    cgroup: Some(format!(
                        "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12.slice/cri-containerd-{ID}.scope\n"
                    )),
                    ..process(8)
                },
                cfg: DiscoverConfig {
                    cgroup_path: false,
                    ..cgroup_only
                },
                want: Some(vec![
                    ("__process_pid__", "8".to_string()),
                    ("__container_id__", ID.to_string()),
                ]),
                problem: None,
            },
            Case {
                name: "cri-o with systemd",
                fake: Fake {
                    cgroup: Some(format!("0::/kubepods.slice/crio-{ID}.scope\n")),
                    ..process(9)
                },
                cfg: cgroup_only,
                want: Some(vec![
                    ("__process_pid__", "9".to_string()),
                    ("__container_id__", ID.to_string()),
                    (
                        "__meta_process_cgroup_path",
                        format!("0::/kubepods.slice/crio-{ID}.scope"),
                    ),
                ]),
                problem: None,
            },
            Case {
                name: "systemd service: no container id",
                fake: Fake {
                    cgroup: Some("0::/system.slice/nginx.service\n".into()),
                    ..process(10)
                },
                cfg: cgroup_only,
                want: Some(vec![
                    ("__process_pid__", "10".to_string()),
                    (
                        "__meta_process_cgroup_path",
                        "0::/system.slice/nginx.service".to_string(),
                    ),
                ]),
                problem: None,
            },
            Case {
                name: "unknown uid: no user name",
                fake: Fake {
                    uid: Some(4242),
                    ..process(11)
                },
                cfg: DiscoverConfig {
                    exe: false,
                    cwd: false,
                    commandline: false,
                    container_id: false,
                    ..DiscoverConfig::default()
                },
                want: Some(vec![
                    ("__process_pid__", "11".to_string()),
                    ("__meta_process_uid", "4242".to_string()),
                ]),
                problem: None,
            },
            Case {
                name: "unreadable exe (not a link): skipped and reported",
                fake: Fake {
                    exe: None,
                    ..process(12)
                },
                cfg: DiscoverConfig::default(),
                want: None,
                problem: Some("exe"),
            },
            Case {
                name: "missing cgroup file: skipped silently (the process exited)",
                fake: Fake {
                    cgroup: None,
                    ..process(13)
                },
                cfg: DiscoverConfig::default(),
                want: None,
                problem: None,
            },
            Case {
                name: "missing cgroup file is not read when nothing needs it",
                fake: Fake {
                    cgroup: None,
                    ..process(14)
                },
                cfg: DiscoverConfig {
                    container_id: false,
                    cgroup_path: false,
                    ..cgroup_only
                },
                want: Some(vec![("__process_pid__", "14".to_string())]),
                problem: None,
            },
        ];
        for case in cases {
            let tree = Tree::new(&[]);
            case.fake.write(tree.procfs().root());
            if case.name.starts_with("unreadable exe") {
                // A directory where a link should be: readlink fails with EINVAL, even as root.
                std::fs::create_dir(tree.procfs().root().join("12").join("exe")).expect("mkdir");
            }
            let walk = tree.run(&case.cfg);
            let got: Vec<_> = walk.targets.iter().map(|t| map(t)).collect();
            let want: Vec<BTreeMap<String, String>> = case
                .want
                .iter()
                .map(|w| w.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
                .collect();
            assert_eq!(got, want, "{}", case.name);
            let files: Vec<&str> = walk.problems.iter().map(|p| p.file).collect();
            assert_eq!(
                files,
                case.problem.into_iter().collect::<Vec<_>>(),
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn a_malformed_status_drops_only_the_uid() {
        let tree = Tree::new(&[process(5)]);
        std::fs::write(tree.procfs().root().join("5/status"), "Uid:\tbad\n").expect("write");
        let walk = tree.run(&DiscoverConfig::default());
        assert_eq!(walk.targets.len(), 1);
        assert!(!walk.targets[0].contains(UID_LABEL));
        assert!(!walk.targets[0].contains(USERNAME_LABEL));
        assert_eq!(walk.problems.len(), 1);
        assert_eq!(walk.problems[0].pid, 5);
        assert_eq!(walk.problems[0].file, "status");
    }

    #[test]
    fn targets_are_ordered_by_pid_and_vanished_entries_skipped() {
        let tree = Tree::new(&[process(300), process(20), process(1)]);
        // A directory with nothing in it: the process exited between listing and reading.
        std::fs::create_dir(tree.procfs().root().join("77")).expect("mkdir");
        let walk = tree.run(&DiscoverConfig::default());
        let pids: Vec<&str> = walk
            .targets
            .iter()
            .map(|t| t.get(PID_LABEL).unwrap_or_default())
            .collect();
        assert_eq!(pids, ["1", "20", "300"]);
        assert!(walk.problems.is_empty(), "{:?}", walk.problems);
    }

    #[test]
    fn a_missing_passwd_file_only_loses_user_names() {
        let tree = Tree::new(&[process(3)]);
        std::fs::remove_file(tree.dir.path().join("passwd")).expect("rm");
        let walk = tree.run(&DiscoverConfig::default());
        assert_eq!(walk.targets.len(), 1);
        assert!(!walk.targets[0].contains(USERNAME_LABEL));
        assert_eq!(walk.targets[0].get(UID_LABEL), Some("1000"));
        assert!(walk.problems.is_empty());
    }

    #[test]
    fn an_unlistable_root_is_an_error() {
        let procfs = ProcFs::new("/nonexistent/proc");
        let err = discover(
            &procfs,
            &mut Users::new("/nonexistent"),
            &DiscoverConfig::default(),
        )
        .expect_err("no root");
        assert!(
            err.to_string()
                .starts_with("listing processes in /nonexistent/proc: "),
            "{err}"
        );
    }
}
