//! Every example config in config/ passes `scraper check` with the real binary (the
//! environment variables they read are set to plausible values).

use std::process::Command;

#[test]
fn example_configs_pass_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("config dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "alloy"))
        .collect();
    entries.sort();
    for path in entries {
        let out = Command::new(env!("CARGO_BIN_EXE_scraper"))
            .arg("check")
            .arg(&path)
            .env("PYROSCOPE_URL", "http://localhost:4040")
            .env("PYROSCOPE_USERNAME", "user")
            .env("PYROSCOPE_PASSWORD", "secret")
            .output()
            .expect("run scraper check");
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} configs");
}
