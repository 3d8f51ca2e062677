//! `pyroscope.ebpf` accounting for its own work, end to end with `scraper run`:
//!
//! * Without CAP_SYS_PTRACE a BPF sampler samples another user's process but cannot name a
//!   frame of it: the debug info lists the problem, naming the capability, and the component
//!   turns unhealthy once a whole interval showed it.
//! * Unprivileged (perf fallback), a target of another user yields no samples: unhealthy with
//!   the reason, while a component whose target it may sample stays healthy.
//! * The samples of the last partial interval are sent on shutdown (SIGTERM) and before a
//!   sampler restart (a reload that changes `sample_rate`).
//! * The shipped host-wide example (config/ebpf-host.alloy) profiles a process started right
//!   after discovery's walk of /proc in its very first interval, under discovery's labels.
//!
//! The tests need root (BPF, or `setpriv` to drop to uid 65534) and gcc; without them they
//! print why and pass, unless `SCRAPER_REQUIRE_BPF=1` makes that a failure. They wait for
//! outcomes with generous bounds; none passes or fails on how fast something happened.

mod scrape_support;
mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use scrape_support::{BIN, Scraper, decode, metric};
use serde_json::Value;
use support::ebpf::{bpf_required, compile, need_compiler, need_root, open_dir, spawn, stacks};
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

/// How long an outcome may take: several collection intervals on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(60);

const NOBODY: [&str; 4] = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
];

fn build_c(dir: &Path) -> PathBuf {
    compile(
        "gcc",
        &["-O2", "-fno-omit-frame-pointer"],
        "tests/ebpf/busy.c",
        dir,
        "busy_c",
    )
}

/// Whether `setpriv` (util-linux) runs; prints why not.
fn have_setpriv() -> bool {
    if Command::new("setpriv").arg("--version").output().is_ok() {
        return true;
    }
    assert!(!bpf_required(), "setpriv (util-linux) is missing");
    eprintln!("skipped: setpriv is missing");
    false
}

/// The scraper binary copied where uid 65534 can run it (the build directory may not be).
fn scraper_for_nobody(dir: &Path) -> PathBuf {
    let bin = dir.join("scraper");
    std::fs::copy(BIN, &bin).expect("copy scraper");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

fn write_block(url: &str, addr: &str) -> String {
    format!("pyroscope.write \"out\" {{\n  endpoint {{\n    url = \"{url}\"\n  }}\n}}\n// {addr}\n")
}

fn ebpf_block(name: &str, pid: u32, service: &str, extra: &str) -> String {
    format!(
        r#"
pyroscope.ebpf "{name}" {{
  targets          = [{{"__process_pid__" = "{pid}", "service_name" = "{service}"}}]
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "2s"
{extra}}}
"#
    )
}

async fn health(scraper: &Scraper, id: &str) -> (String, String, Value) {
    let info = scraper.component(id).await;
    let state = info["health"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let message = info["health"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (state, message, info)
}

/// Waits until the component's health is `state`; false when it never is.
async fn wait_health(scraper: &Scraper, id: &str, state: &str) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if health(scraper, id).await.0 == state {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn problems(info: &Value) -> Vec<String> {
    info["debugInfo"]["problems"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn profiles_of<'a>(received: &'a [Received], service: &str) -> Vec<&'a Received> {
    received
        .iter()
        .filter(|r| r.label("service_name") == Some(service))
        .collect()
}

/// Samples in a profile.
fn samples(r: &Received) -> i64 {
    stacks(&decode(&r.raw)).iter().map(|(_, v)| *v).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cap_sys_ptrace_other_users_processes_are_reported_unsymbolizable() {
    if !need_root("dropping to uid 65534 with CAP_BPF and CAP_PERFMON")
        || !have_setpriv()
        || !need_compiler("gcc")
    {
        return;
    }
    let dir = open_dir();
    let busy = build_c(dir.path());
    let bin = scraper_for_nobody(dir.path());
    // Owned by root: uid 65534 may not read its /proc/<pid>/maps.
    let target = spawn(&[], &busy);
    let pid = target.pid();
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let mut wrapper = NOBODY.to_vec();
    wrapper.extend(["--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"]);
    let scraper = Scraper::start_as(
        &wrapper,
        &bin,
        |addr| {
            format!(
                "{}{}",
                ebpf_block("root", pid, "root_owned", ""),
                write_block(&url, addr)
            )
        },
        &[],
    )
    .await;
    let id = "pyroscope.ebpf.root";
    let unhealthy = wait_health(&scraper, id, "unhealthy").await;
    let (_, message, info) = health(&scraper, id).await;
    assert!(unhealthy, "{info:#}\n{}", scraper.logs());
    // BPF samples the process: it is the names that are missing.
    assert_eq!(info["debugInfo"]["mode"], "bpf", "{info:#}");
    assert!(
        message.contains("[unknown]") && message.contains("CAP_SYS_PTRACE"),
        "{message}"
    );
    assert!(message.contains(&pid.to_string()), "{message}");
    assert_eq!(
        info["debugInfo"]["missing_capabilities"],
        serde_json::json!(["CAP_SYS_PTRACE"]),
        "{info:#}"
    );
    let problems = problems(&info);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("CAP_SYS_PTRACE is missing")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with(&format!("pid {pid}: this process may not open its files"))),
        "{problems:?}"
    );
    let last = &info["debugInfo"]["last_interval"];
    assert!(last["samples"].as_u64().unwrap_or(0) > 0, "{last:#}");
    assert_eq!(last["not_permitted"], 1, "{last:#}");
    let logs = scraper.logs();
    assert!(
        logs.contains("cannot symbolize processes of other users"),
        "{logs}"
    );
    assert!(logs.contains("pyroscope.ebpf is unhealthy"), "{logs}");
    let metrics = scraper.metrics().await;
    let unknown = metric(
        &metrics,
        "pyroscope_ebpf_user_frames_total",
        &[("component_id", id), ("result", "unknown")],
    );
    assert!(unknown.is_some_and(|v| v > 0.0), "{metrics}");
    assert_eq!(
        metric(
            &metrics,
            "pyroscope_ebpf_inaccessible_processes",
            &[("component_id", id), ("reason", "not_permitted")],
        ),
        Some(1.0),
        "{metrics}"
    );
    drop(target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unprivileged_targets_of_another_user_make_the_component_unhealthy() {
    if !need_root("dropping to uid 65534") || !have_setpriv() || !need_compiler("gcc") {
        return;
    }
    let dir = open_dir();
    let busy = build_c(dir.path());
    let bin = scraper_for_nobody(dir.path());
    let theirs = spawn(&[], &busy);
    let mine = spawn(&NOBODY, &busy);
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let (their_pid, my_pid) = (theirs.pid(), mine.pid());
    let scraper = Scraper::start_as(
        &NOBODY,
        &bin,
        |addr| {
            format!(
                "{}{}{}",
                ebpf_block("theirs", their_pid, "theirs", ""),
                ebpf_block("mine", my_pid, "mine", ""),
                write_block(&url, addr)
            )
        },
        &[],
    )
    .await;
    let id = "pyroscope.ebpf.theirs";
    let unhealthy = wait_health(&scraper, id, "unhealthy").await;
    let (_, message, info) = health(&scraper, id).await;
    assert!(unhealthy, "{info:#}\n{}", scraper.logs());
    assert_eq!(info["debugInfo"]["mode"], "perf", "{info:#}");
    assert!(
        message.contains("no samples in the last collection interval")
            && message.contains("1 not permitted")
            && message.contains("CAP_PERFMON"),
        "{message}"
    );
    let metrics = scraper.metrics().await;
    assert_eq!(
        metric(
            &metrics,
            "pyroscope_ebpf_inaccessible_processes",
            &[("component_id", id), ("reason", "not_permitted")],
        ),
        Some(1.0),
        "{metrics}"
    );

    // The same sampler on a process it may sample: profiles, and healthy once an interval
    // has been judged.
    let got = scraper
        .wait(PATIENCE, |_| {
            !profiles_of(&receiver.received(), "mine").is_empty()
        })
        .await;
    let (state, message, info) = health(&scraper, "pyroscope.ebpf.mine").await;
    assert!(got, "no profile of mine\n{info:#}\n{}", scraper.logs());
    assert!(info["debugInfo"]["last_interval"].is_object(), "{info:#}");
    assert_eq!(state, "healthy", "{message}\n{info:#}");
    drop((theirs, mine));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_partial_interval_is_sent_on_restart_and_on_shutdown() {
    if !need_root("loading BPF") || !need_compiler("gcc") {
        return;
    }
    let dir = open_dir();
    let busy = build_c(dir.path());
    let target = spawn(&[], &busy);
    let pid = target.pid();
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    // An interval far longer than the test: every profile comes from a partial interval.
    let block = |rate: u32| {
        format!(
            r#"
pyroscope.ebpf "flush" {{
  targets          = [{{"__process_pid__" = "{pid}", "service_name" = "flush"}}]
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "1h"
  sample_rate      = {rate}
}}
"#
        )
    };
    let first = block(97);
    let scraper = Scraper::start(|addr| format!("{first}{}", write_block(&url, addr))).await;
    let id = "pyroscope.ebpf.flush";
    let sampled = |info: &Value| info["debugInfo"]["samples_total"].as_u64().unwrap_or(0) > 0;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !sampled(&scraper.component(id).await) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let info = scraper.component(id).await;
    assert!(sampled(&info), "{info:#}\n{}", scraper.logs());
    assert!(receiver.received().is_empty(), "nothing is due yet");

    // A new sample rate restarts the sampler: what the old one sampled is sent first.
    let addr = scraper.addr.clone();
    std::fs::write(
        &scraper.config,
        format!("{}{}", block(99), write_block(&url, &addr)),
    )
    .expect("rewrite config");
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(scraper.pid() as libc::pid_t, libc::SIGHUP) };
    let restarted = scraper
        .wait(PATIENCE, |_| {
            profiles_of(&receiver.received(), "flush").len() == 1
        })
        .await;
    assert!(restarted, "no profile at the restart\n{}", scraper.logs());

    // Sampling resumes, then SIGTERM: the last partial interval reaches the receiver before
    // the process exits.
    let before = scraper.component(id).await["debugInfo"]["samples_total"]
        .as_u64()
        .unwrap_or(0);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while scraper.component(id).await["debugInfo"]["samples_total"]
        .as_u64()
        .unwrap_or(0)
        <= before
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // SAFETY: as above.
    unsafe { libc::kill(scraper.pid() as libc::pid_t, libc::SIGTERM) };
    let flushed = scraper
        .wait(PATIENCE, |_| {
            profiles_of(&receiver.received(), "flush").len() == 2
        })
        .await;
    assert!(flushed, "no profile at shutdown\n{}", scraper.logs());
    let received = receiver.received();
    for r in profiles_of(&received, "flush") {
        assert!(samples(r) > 0, "{:?}", r.labels);
    }
    drop(target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_example_profiles_a_new_process_in_its_first_interval() {
    if !need_root("loading BPF") || !need_compiler("gcc") {
        return;
    }
    let dir = open_dir();
    // A name of its own: the example profiles every process on the host, the busy programs of
    // the other tests included, and names each service after its executable.
    const NAME: &str = "busy_first_interval";
    let busy = compile(
        "gcc",
        &["-O2", "-fno-omit-frame-pointer"],
        "tests/ebpf/busy.c",
        dir.path(),
        NAME,
    );
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let example = std::fs::read_to_string(support::go::repo().join("config/ebpf-host.alloy"))
        .expect("config/ebpf-host.alloy");
    // The shipped example, with intervals short enough for a test (discovery walks /proc every
    // 6 s, profiles are cut every 2 s, so the process below is sampled for a few intervals
    // before discovery first lists it) and a `pid` sample label to tell processes apart.
    let adapted = example
        .replace("refresh_interval = \"30s\"", "refresh_interval = \"6s\"")
        .replace("collect_interval = \"15s\"", "collect_interval = \"2s\"")
        .replace(
            "targets_only     = false",
            "targets_only     = false\n  pid_label        = true",
        );
    assert_eq!(
        adapted.matches("\"6s\"").count()
            + adapted.matches("\"2s\"").count()
            + adapted.matches("pid_label").count(),
        3,
        "the example changed: {adapted}"
    );
    let scraper = Scraper::start_with_env(
        |addr| format!("{adapted}\n// {addr}\n"),
        &[("PYROSCOPE_URL", url.as_str())],
    )
    .await;
    // Right after discovery's first walk (it runs before the config counts as loaded). Once
    // `spawn` returns the process runs, so the interval it started in began before `started`;
    // that interval may have ended a moment after the spawn, with no sample of it, so the
    // interval after it counts too. Both end well before discovery's next walk (6 s), so
    // without holding the samples until discovery names the process neither would arrive
    // under its name.
    let target = spawn(&[], &busy);
    let started = SystemTime::now();
    let first_full_interval = started + Duration::from_secs(2);
    let pid = target.pid().to_string();
    let got = scraper
        .wait(PATIENCE, |_| {
            let received = receiver.received();
            profiles_of(&received, NAME)
                .iter()
                .any(|r| interval_start(r) <= first_full_interval && has_pid(r, &pid))
        })
        .await;
    let info = scraper.component("pyroscope.ebpf.host").await;
    let received = receiver.received();
    let starts: Vec<SystemTime> = profiles_of(&received, NAME)
        .iter()
        .map(|r| interval_start(r))
        .collect();
    assert!(
        got,
        "neither the interval pid {pid} started in nor the next has a {NAME} profile \
         (started by {started:?}, profiles start {starts:?})\n{info:#}\n{}",
        scraper.logs()
    );
    // None of its samples was filed under the default target meanwhile.
    for r in profiles_of(&received, "ebpf/unspecified") {
        assert!(!has_pid(r, &pid), "pid {pid} sampled as ebpf/unspecified");
    }
    let filtered = &info["debugInfo"]["samples_filtered"];
    assert!(filtered.is_object(), "{info:#}");
    drop(target);
}

/// Whether a profile has samples of process `pid` (its `pid` sample label).
fn has_pid(r: &Received, pid: &str) -> bool {
    let p = decode(&r.raw);
    let s = |i: i64| p.string_table.get(i as usize).map_or("", String::as_str);
    p.sample.iter().any(|sample| {
        sample
            .label
            .iter()
            .any(|l| s(l.key) == "pid" && s(l.str) == pid)
    })
}

/// When the interval a profile covers began.
fn interval_start(r: &Received) -> SystemTime {
    let p = decode(&r.raw);
    SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(p.time_nanos).unwrap_or(0))
}
