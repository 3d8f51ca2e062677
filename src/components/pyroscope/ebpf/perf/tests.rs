//! Sampling real processes. Most need root (the unprivileged case is exercised by re-running
//! this binary as uid 65534); they print why and pass when they cannot run.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::*;

const FREQUENCY_HZ: u64 = 97;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A child spinning in user space, killed when dropped.
struct BusyChild(Child);

impl BusyChild {
    fn spawn() -> Self {
        let child = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sh");
        Self(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn kill(&mut self) {
        // Already gone is fine: the point is that it is gone.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for BusyChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Drains like the session does (every 100 ms) for at least `at_least`, then on until `enough`
/// samples arrived or `give_up` passed, since a loaded machine gives the children less CPU.
fn collect(
    sampler: &mut PerfSampler,
    at_least: Duration,
    enough: usize,
    give_up: Duration,
) -> Vec<RawSample> {
    let start = Instant::now();
    let mut samples = Vec::new();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        sampler.drain(&mut |sample| samples.push(sample));
        let elapsed = start.elapsed();
        if elapsed >= give_up || (elapsed >= at_least && samples.len() >= enough) {
            return samples;
        }
    }
}

fn pids(list: &[u32]) -> HashSet<u32> {
    list.iter().copied().collect()
}

#[test]
fn follows_a_busy_child_as_root() {
    if !is_root() {
        eprintln!("skipping: sampling with kernel frames needs root");
        return;
    }
    let child = BusyChild::spawn();
    let mut sampler = PerfSampler::new(FREQUENCY_HZ, true);
    sampler
        .set_filter(Some(&pids(&[child.pid()])))
        .expect("set_filter");
    assert_eq!(sampler.counters(), 1);
    assert!(sampler.collects_kernel_frames());

    let samples = collect(
        &mut sampler,
        Duration::from_millis(1500),
        30,
        Duration::from_secs(10),
    );
    assert!(samples.len() >= 30, "only {} samples", samples.len());
    for sample in &samples {
        assert_eq!(sample.pid, child.pid());
        assert_eq!(sample.tid, child.pid());
        assert!(!sample.user.is_empty(), "no user frames: {sample:?}");
        assert_eq!(&sample.comm[..3], b"sh\0");
    }
    assert!(sampler.problems().is_empty(), "{:?}", sampler.problems());
}

#[test]
fn survives_a_followed_process_exiting() {
    if !is_root() {
        eprintln!("skipping: needs root");
        return;
    }
    let mut leaving = BusyChild::spawn();
    let staying = BusyChild::spawn();
    let mut sampler = PerfSampler::new(FREQUENCY_HZ, true);
    sampler
        .set_filter(Some(&pids(&[leaving.pid(), staying.pid()])))
        .expect("set_filter");
    assert_eq!(sampler.counters(), 2);

    let before = collect(
        &mut sampler,
        Duration::from_millis(500),
        10,
        Duration::from_secs(10),
    );
    assert!(before.iter().any(|s| s.pid == leaving.pid()));

    leaving.kill();
    let after = collect(
        &mut sampler,
        Duration::from_millis(500),
        10,
        Duration::from_secs(10),
    );
    assert!(after.len() >= 10, "only {} samples", after.len());
    assert!(after.iter().all(|s| s.pid == staying.pid()));
    assert_eq!(
        sampler.counters(),
        1,
        "the exited process's counter is closed"
    );
    assert!(sampler.problems().is_empty(), "{:?}", sampler.problems());

    // Starting to follow a process that no longer exists is a recorded problem, not a failure.
    let mut exited = Command::new("true").spawn().expect("spawn true");
    let gone = exited.id();
    exited.wait().expect("wait for true");
    sampler
        .set_filter(Some(&pids(&[staying.pid(), gone])))
        .expect("set_filter");
    let problems = sampler.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(&format!("pid {gone}: ")),
        "{problems:?}"
    );
    sampler
        .set_filter(Some(&pids(&[staying.pid()])))
        .expect("set_filter");
    assert!(sampler.problems().is_empty(), "dropped with its process");
}

#[test]
fn picks_up_threads_started_later() {
    if !is_root() {
        eprintln!("skipping: needs root");
        return;
    }
    let mut sampler = PerfSampler::new(FREQUENCY_HZ, false);
    sampler
        .set_filter(Some(&pids(&[std::process::id()])))
        .expect("set_filter");

    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let spinner = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions and cannot fail.
            let tid = unsafe { libc::gettid() };
            tid_tx.send(tid).expect("send tid");
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let tid = u32::try_from(tid_rx.recv().expect("receive tid")).expect("tid");

    let start = Instant::now();
    let mut seen = 0;
    while seen < 10 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        sampler.drain(&mut |sample| {
            if sample.tid == tid {
                assert_eq!(sample.pid, std::process::id());
                assert!(sample.kernel.is_empty(), "kernel frames were not asked for");
                seen += 1;
            }
        });
    }
    stop.store(true, Ordering::Relaxed);
    spinner.join().expect("join spinner");
    assert!(seen >= 10, "only {seen} samples of the new thread");

    sampler.drain(&mut |_| {});
    let Following::Processes(processes) = &sampler.following else {
        panic!("following processes");
    };
    let own = &processes[&std::process::id()];
    assert!(
        !own.threads.contains_key(&tid),
        "the exited thread's counter is closed"
    );
}

#[test]
fn samples_the_whole_host_as_root() {
    if !is_root() {
        eprintln!("skipping: sampling every process needs root");
        return;
    }
    let child = BusyChild::spawn();
    let mut sampler = PerfSampler::new(FREQUENCY_HZ, true);
    sampler.set_filter(None).expect("whole host as root");
    assert_eq!(sampler.counters(), procfs::online_cpus().len());

    let start = Instant::now();
    let mut from_child = 0;
    while from_child < 10 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        sampler.drain(&mut |sample| {
            if sample.pid == child.pid() {
                assert!(!sample.user.is_empty());
                from_child += 1;
            }
        });
    }
    assert!(from_child >= 10, "only {from_child} samples of the child");

    sampler
        .set_filter(Some(&pids(&[child.pid()])))
        .expect("back to one process");
    assert_eq!(sampler.counters(), 1);
}

/// Whether uid 65534 can run `path`: every directory above it searchable by others and the
/// file itself readable and executable by others.
fn others_can_run(path: &Path) -> bool {
    let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode());
    let file_ok = mode(path).is_ok_and(|m| m & 0o005 == 0o005);
    file_ok
        && path
            .ancestors()
            .skip(1)
            .all(|dir| mode(dir).is_ok_and(|m| m & 0o001 != 0))
}

#[test]
fn runs_unprivileged_as_nobody() {
    if !is_root() {
        eprintln!("skipping: needs root to switch to uid 65534");
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    let scratch = tempfile::tempdir().expect("tempdir");
    let exe: PathBuf = if others_can_run(&exe) {
        exe
    } else {
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod scratch dir");
        let copy = scratch.path().join("tests");
        std::fs::copy(&exe, &copy).expect("copy test binary");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
            .expect("chmod test binary");
        copy
    };
    let module = module_path!();
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    let helper = format!("{module}::unprivileged_helper");

    let output = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(&exe)
        .args([
            "--exact",
            &helper,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir("/")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            eprintln!("skipping: setpriv is not installed");
            return;
        }
        Err(error) => panic!("running setpriv: {error}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "helper failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// Run by [`runs_unprivileged_as_nobody`] as uid 65534 without capabilities.
#[test]
#[ignore = "run as uid 65534 by runs_unprivileged_as_nobody"]
fn unprivileged_helper() {
    if is_root() {
        eprintln!("skipping: this helper checks what an unprivileged user gets");
        return;
    }
    let paranoid = procfs::paranoid().unwrap_or(2);
    let child = BusyChild::spawn();
    let mut sampler = PerfSampler::new(FREQUENCY_HZ, true);
    // pid 1 belongs to root: it must be skipped with a problem, not fail the filter.
    sampler
        .set_filter(Some(&pids(&[child.pid(), 1])))
        .expect("per-process filters never fail");
    assert_eq!(sampler.counters(), 1, "only the child can be followed");

    let samples = collect(
        &mut sampler,
        Duration::from_millis(1500),
        30,
        Duration::from_secs(10),
    );
    assert!(samples.len() >= 10, "only {} samples", samples.len());
    for sample in &samples {
        assert_eq!(sample.pid, child.pid());
        assert!(!sample.user.is_empty(), "no user frames: {sample:?}");
        if paranoid >= 2 {
            assert!(
                sample.kernel.is_empty(),
                "kernel frames unprivileged: {sample:?}"
            );
        }
    }

    let problems = sampler.problems();
    println!("problems: {problems:?}");
    assert!(
        problems.iter().any(|p| p.starts_with("pid 1: ")),
        "{problems:?}"
    );
    if paranoid >= 2 {
        assert!(!sampler.collects_kernel_frames());
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("kernel frames are not permitted")),
            "{problems:?}"
        );
    }

    if paranoid > 0 {
        match sampler.set_filter(None) {
            Err(SamplerError::Unsupported(message)) => {
                println!("whole host: {message}");
                assert!(message.contains("CAP_PERFMON"), "{message}");
                assert!(message.contains(&format!("it is {paranoid}")), "{message}");
            }
            other => panic!("whole host unprivileged: {other:?}"),
        }
        // The refusal left the per-process filter in place.
        assert_eq!(sampler.counters(), 1);
        let more = collect(
            &mut sampler,
            Duration::from_millis(300),
            1,
            Duration::from_secs(10),
        );
        assert!(!more.is_empty());
    }
}
