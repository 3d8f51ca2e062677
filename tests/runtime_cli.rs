//! The `check`, `fmt` and `version` commands of the real binary.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_scraper");

fn scraper(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run scraper")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn check_reports_every_error_with_position_and_caret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.alloy");
    std::fs::write(
        &bad,
        "logging {\n  level = nope.level\n}\n\nnot.a.component \"x\" {\n}\n\nforeach \"y\" {\n}\n",
    )
    .expect("write");
    let good = dir.path().join("good.alloy");
    std::fs::write(&good, "logging {\n  format = \"json\"\n}\n").expect("write");

    let out = scraper(&[
        "check",
        &good.display().to_string(),
        &bad.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let b = bad.display();
    for want in [
        format!("{b}:2:11: component \"nope.level\" does not exist or is out of scope"),
        format!("{b}:5:1: cannot find the definition of component name \"not.a.component\""),
        format!("{b}:8:1: foreach blocks are not supported by scraper"),
    ] {
        assert!(err.contains(&want), "missing {want:?} in\n{err}");
    }
    // Each error shows its source line with a caret under the culprit.
    assert!(err.contains("level = nope.level"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains('^')).count(),
        3,
        "one caret line per error:\n{err}"
    );
    assert!(err.contains("Error: 3 errors in 1 config"), "{err}");
    assert!(!err.contains("good.alloy"), "{err}");

    let out = scraper(&["check", &good.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn check_reports_a_missing_file() {
    let out = scraper(&["check", "/nonexistent/scrape.alloy"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("reading /nonexistent/scrape.alloy"));
}

#[test]
fn fmt_prints_or_rewrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("f.alloy");
    let messy = "logging {\nlevel   =   \"debug\"\n}\n";
    std::fs::write(&file, messy).expect("write");
    let path = file.display().to_string();

    let out = scraper(&["fmt", &path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let formatted = String::from_utf8(out.stdout).expect("utf8");
    assert_eq!(formatted, "logging {\n\tlevel = \"debug\"\n}\n");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), messy);

    let out = scraper(&["fmt", "-w", &path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).expect("read"), formatted);

    std::fs::write(&file, "logging {\n  level = \n}\n").expect("write");
    let out = scraper(&["fmt", "-w", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{path}:3:1: ")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn version() {
    let out = scraper(&["version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("scraper, version v{}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// Runs `scraper run PATH` until it exits, failing the test if it is still running after 30 s
/// (a config that should have been refused was accepted).
fn run_until_exit(path: &str, envs: &[(&str, &str)], unset: &[&str]) -> Output {
    let storage = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(BIN);
    cmd.args([
        "run",
        path,
        "--server.http.listen-addr=127.0.0.1:0",
        "--memory.limit=0",
    ])
    .arg(format!("--storage.path={}", storage.path().display()))
    .envs(envs.iter().copied())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    for name in unset {
        cmd.env_remove(name);
    }
    let mut child = cmd.spawn().expect("start scraper run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("scraper run kept running:\n{}", stderr(&out));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// An empty endpoint URL, written so or read from an unset environment variable, is refused by
/// `check` and by `run` at the attribute, with a caret and, for the variable, a hint.
#[test]
fn empty_endpoint_url_is_refused_at_its_line() {
    const UNSET: &str = "SCRAPER_TEST_UNSET_PYROSCOPE_URL";
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        ("literal", "\"\"", "3:11", None),
        (
            "env",
            "env(\"SCRAPER_TEST_UNSET_PYROSCOPE_URL\")",
            "3:11",
            Some(
                "help: environment variable \"SCRAPER_TEST_UNSET_PYROSCOPE_URL\" is not set or empty",
            ),
        ),
        (
            "sys.env in string.format",
            "string.format(\"%s\", sys.env(\"SCRAPER_TEST_UNSET_PYROSCOPE_URL\"))",
            "3:11",
            Some(
                "help: environment variable \"SCRAPER_TEST_UNSET_PYROSCOPE_URL\" is not set or empty",
            ),
        ),
        ("not a URL", "\"<URL>\"", "3:11", None),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, expr, at, hint) in cases {
        let path = dir.path().join("write.alloy");
        std::fs::write(
            &path,
            format!("pyroscope.write \"backend\" {{\n  endpoint {{\n    url = {expr}\n  }}\n}}\n"),
        )
        .expect("write");
        let p = path.display().to_string();
        let check = Command::new(BIN)
            .args(["check", &p])
            .env_remove(UNSET)
            .output()
            .expect("run scraper check");
        let run = run_until_exit(&p, &[], &[UNSET]);
        for (what, out) in [("check", &check), ("run", &run)] {
            let err = stderr(out);
            assert_eq!(out.status.code(), Some(1), "{name}, {what}: {err}");
            assert!(
                err.contains(&format!("error: {p}:{at}: endpoint url ")),
                "{name}, {what}: {err}"
            );
            assert!(
                err.contains(&format!("url = {expr}")),
                "{name}, {what}: {err}"
            );
            assert!(
                err.lines()
                    .any(|l| l.contains("│") && l.trim_end().ends_with('^')),
                "{name}, {what}: {err}"
            );
            if let Some(hint) = hint {
                assert!(err.contains(hint), "{name}, {what}: {err}");
            }
        }
    }
}

/// The seed config reads its backend from the environment: without `PYROSCOPE_URL`, `check`
/// says which line and why; with it, the config passes.
#[test]
fn seed_config_needs_pyroscope_url() {
    let seed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/seed-otel-collector.alloy"
    );
    let out = Command::new(BIN)
        .args(["check", seed])
        .env_remove("PYROSCOPE_URL")
        .output()
        .expect("run scraper check");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{seed}:80:13: endpoint url is empty")),
        "{err}"
    );
    assert!(
        err.contains("help: environment variable \"PYROSCOPE_URL\" is not set or empty"),
        "{err}"
    );
    assert!(err.contains("Error: 1 error in 1 config"), "{err}");

    let out = Command::new(BIN)
        .args(["check", seed])
        .env("PYROSCOPE_URL", "http://pyroscope:4040")
        .output()
        .expect("run scraper check");
    assert!(out.status.success(), "{}", stderr(&out));
}

/// One run reports every error, misspellings with the name meant: a bad reference and a bad
/// attribute in the same block, nested block and attribute names, a component name, and the
/// component's own validation of what did decode (a header name) beside a decode error.
#[test]
fn check_reports_all_errors_with_suggestions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("typos.alloy");
    std::fs::write(
        &path,
        r#"pyroscope.write "backend" {
  endpoint {
    url           = "http://pyroscope:4040"
    remote_timout = "5s"
    headers       = { "bad header" = "x" }
  }
}

pyroscope.scrape "s" {
  targets          = discovery.kubernetes.pods.targets
  forward_to       = [pyroscope.write.bakend.receiver]
  scrape_intervall = "15s"
  profiling_config {
    profile.proces_cpu {
      enabled = true
    }
  }
}

pyroscope.wirte "x" {
}
"#,
    )
    .expect("write");
    let p = path.display().to_string();
    let out = scraper(&["check", &p]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let want: &[(&str, &str, Option<&str>)] = &[
        (
            "4:5",
            "unrecognized attribute name \"remote_timout\"",
            Some("remote_timeout"),
        ),
        ("5:38", "invalid header name \"bad header\"", None),
        (
            "10:22",
            "component \"discovery.kubernetes.pods.targets\" does not exist or is out of scope",
            None,
        ),
        (
            "11:23",
            "component \"pyroscope.write.bakend.receiver\" does not exist or is out of scope",
            Some("pyroscope.write.backend"),
        ),
        (
            "12:3",
            "unrecognized attribute name \"scrape_intervall\"",
            Some("scrape_interval"),
        ),
        (
            "14:5",
            "unrecognized block name \"profile.proces_cpu\"",
            Some("profile.process_cpu"),
        ),
        (
            "20:1",
            "cannot find the definition of component name \"pyroscope.wirte\"",
            Some("pyroscope.write"),
        ),
    ];
    let headers: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(headers.len(), want.len(), "{err}");
    for ((at, message, hint), header) in want.iter().zip(&headers) {
        assert!(
            header.starts_with(&format!("error: {p}:{at}: {message}")),
            "want {at}: {message}, got {header}"
        );
        if let Some(name) = hint {
            assert!(
                err.contains(&format!("= help: did you mean \"{name}\"?")),
                "no hint {name:?} in\n{err}"
            );
        }
    }
    assert!(err.contains("Error: 7 errors in 1 config"), "{err}");
}

/// `livedebugging` (in Alloy's own profiling example) and `tracing` are accepted with a warning.
#[test]
fn ignored_config_blocks_warn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ld.alloy");
    std::fs::write(
        &path,
        "livedebugging {\n  enabled = true\n}\n\nlogging {\n  level = \"info\"\n}\n",
    )
    .expect("write");
    let p = path.display().to_string();
    let out = scraper(&["check", &p]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "warning: {p}:1:1: live debugging is not supported by scraper; the livedebugging block is ignored"
        )),
        "{err}"
    );
}

/// `check DIR` checks the directory's `*.alloy` files as one config, as `run DIR` loads it.
#[test]
fn check_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write =
        |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write(
        "relabel.alloy",
        "pyroscope.relabel \"r\" {\n  forward_to = [pyroscope.write.backend.receiver]\n}\n",
    );
    write(
        "write.alloy",
        "pyroscope.write \"backend\" {\n  endpoint {\n    url = \"http://pyroscope:4040\"\n  }\n}\n",
    );
    write("README.md", "not a config {");
    let d = dir.path().display().to_string();
    let out = scraper(&["check", &d]);
    assert!(out.status.success(), "{}", stderr(&out));

    write(
        "write.alloy",
        "pyroscope.write \"backend\" {\n  endpoint {\n    url = \"\"\n  }\n}\n",
    );
    let out = scraper(&["check", &d]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "error: {d}/write.alloy:3:11: endpoint url is empty"
        )),
        "{err}"
    );
    assert!(err.contains("Error: 1 error in 1 config"), "{err}");

    let empty = tempfile::tempdir().expect("tempdir");
    let out = scraper(&["check", &empty.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no .alloy files in directory"),
        "{}",
        stderr(&out)
    );
}

/// `fmt -` (or `fmt` alone) formats standard input to standard output, as `alloy fmt` does.
#[test]
fn fmt_standard_input() {
    use std::io::Write as _;
    let fmt = |args: &[&str], input: &str| -> Output {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run scraper fmt");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
        child.wait_with_output().expect("output")
    };
    let messy = "logging {\nlevel   =   \"debug\"\n}\n";
    for args in [&["fmt", "-"][..], &["fmt"][..]] {
        let out = fmt(args, messy);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "logging {\n\tlevel = \"debug\"\n}\n",
            "{args:?}"
        );
    }
    let out = fmt(&["fmt", "-"], "logging {\n  level = \n}\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("<stdin>:3:1: "), "{}", stderr(&out));

    let out = fmt(&["fmt", "-w", "-"], messy);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot use -w with standard input"),
        "{}",
        stderr(&out)
    );
}

/// `module_path` of a config named by a bare relative path is `.` (Go's `filepath.Dir`), so an
/// import built from it (`module_path + "/lib.alloy"`) finds the file beside the config
/// relative to the working directory, as in Alloy; an empty `module_path` would make it
/// `/lib.alloy`.
#[test]
fn check_a_relative_config_path_imports_beside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("lib.alloy"),
        "declare \"noop\" {\n  argument \"x\" {\n    optional = true\n  }\n}\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("main.alloy"),
        "import.file \"lib\" {\n  filename = module_path + \"/lib.alloy\"\n}\n\nlib.noop \"a\" {}\n",
    )
    .expect("write");
    let out = Command::new(BIN)
        .args(["check", "main.alloy"])
        .current_dir(dir.path())
        .output()
        .expect("run scraper");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
