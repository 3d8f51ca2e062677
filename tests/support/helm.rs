//! The chart tests' harness: a real Helm (pinned by charts/tools/install.sh) rendering
//! charts/scraper with sets of values, the rendered objects parsed as JSON values, and the
//! checks every combination of values must pass (lint, schema validation, `scraper check`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::tools;

pub const RELEASE: &str = "demo";
pub const NAMESPACE: &str = "monitoring";
pub const FULLNAME: &str = "demo-scraper";
/// The chart's `kubeVersion` floor and the newest schemas kubernetes-validate carries.
pub const KUBE_VERSIONS: &[&str] = &["1.25.0", "1.37.0"];

/// One combination of values: `--set` expressions, or `file:KEY=PATH` for `--set-file`.
pub struct Case {
    pub name: &'static str,
    pub sets: &'static [&'static str],
}

/// The case called `name` of `cases`.
pub fn case<'a>(cases: &'a [Case], name: &str) -> &'a Case {
    cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

pub struct Helm {
    bin: PathBuf,
    /// Helm's cache, config and data homes, so nothing outside the test is read or written.
    home: tempfile::TempDir,
}

impl Helm {
    /// None (with the reason printed) when Helm is not installed.
    pub fn find() -> Option<Helm> {
        Some(Helm {
            bin: tools::helm()?,
            home: tempfile::tempdir().expect("tempdir"),
        })
    }

    pub fn command(&self, sub: &str, sets: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        let h = self.home.path();
        c.env("HELM_CACHE_HOME", h.join("cache"))
            .env("HELM_CONFIG_HOME", h.join("config"))
            .env("HELM_DATA_HOME", h.join("data"))
            .current_dir(tools::repo())
            .arg(sub);
        if sub == "template" {
            c.args([RELEASE, "charts/scraper", "--namespace", NAMESPACE]);
        } else {
            c.arg("charts/scraper");
        }
        for set in sets {
            match set.strip_prefix("file:") {
                Some(file) => c.args(["--set-file", file]),
                None => c.args(["--set", set]),
            };
        }
        c
    }

    /// `helm template` output, or Helm's error.
    pub fn render(&self, sets: &[&str]) -> Result<String, String> {
        let out = self.command("template", sets).output().expect("run helm");
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).expect("utf-8"))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// `helm template` with these values and `--values FILE` (for values `--set` cannot say,
    /// such as lists of objects).
    pub fn render_with_file(&self, file: &Path, sets: &[&str]) -> Result<String, String> {
        let mut c = self.command("template", sets);
        c.arg("--values").arg(file);
        let out = c.output().expect("run helm");
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).expect("utf-8"))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    pub fn objects(&self, case: &Case) -> Vec<Value> {
        let yaml = self
            .render(case.sets)
            .unwrap_or_else(|e| panic!("helm template ({}): {e}", case.name));
        parse(&yaml)
    }
}

pub fn parse(yaml: &str) -> Vec<Value> {
    use serde::Deserialize as _;
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).expect("rendered YAML parses"))
        .filter(|v| !v.is_null())
        .collect()
}

pub fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

pub fn one<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found = of_kind(objects, kind);
    assert_eq!(found.len(), 1, "expected one {kind}: {objects:#?}");
    found[0]
}

/// The rendered ConfigMap's config.
pub fn config(objects: &[Value]) -> String {
    one(objects, "ConfigMap")["data"]["config.alloy"]
        .as_str()
        .expect("config.alloy")
        .to_owned()
}

/// The DaemonSet, StatefulSet or Deployment: exactly one of them.
pub fn workload(objects: &[Value]) -> &Value {
    let workloads: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            ["DaemonSet", "StatefulSet", "Deployment"].contains(&o["kind"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(workloads.len(), 1, "one workload: {objects:#?}");
    workloads[0]
}

/// The workload's pod spec.
pub fn pod_spec(objects: &[Value]) -> &Value {
    &workload(objects)["spec"]["template"]["spec"]
}

pub fn container(objects: &[Value]) -> &Value {
    let containers = pod_spec(objects)["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1);
    &containers[0]
}

pub fn env<'a>(objects: &'a [Value], name: &str) -> Option<&'a Value> {
    container(objects)["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
}

/// The container's arguments.
pub fn args(objects: &[Value]) -> Vec<String> {
    container(objects)["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_owned())
        .collect()
}

/// `helm lint --strict` passes for every case.
pub fn assert_lints(helm: &Helm, cases: &[Case]) {
    for case in cases {
        let out = helm
            .command("lint", case.sets)
            .arg("--strict")
            .output()
            .expect("run helm lint");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("0 chart(s) failed"),
            "helm lint --strict ({}):\n{text}{}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `kubernetes-validate --strict` accepts every object of every case, for the oldest and the
/// newest Kubernetes.
pub fn assert_validates(helm: &Helm, validator: &Path, cases: &[Case]) {
    for case in cases {
        let yaml = helm
            .render(case.sets)
            .unwrap_or_else(|e| panic!("helm template ({}): {e}", case.name));
        for version in KUBE_VERSIONS {
            tools::validate_manifests(validator, &yaml, version, case.name);
        }
    }
}

/// `scraper check` accepts the config each case renders (cases with a ConfigMap of the chart).
pub fn assert_configs_check(helm: &Helm, scraper: &Path, cases: &[Case]) {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in cases {
        let objects = helm.objects(case);
        if of_kind(&objects, "ConfigMap").is_empty() {
            continue;
        }
        let content = config(&objects);
        let path = dir.path().join(format!("{}.alloy", case.name));
        std::fs::write(&path, &content).expect("write config");
        let out = Command::new(scraper)
            .arg("check")
            .arg(&path)
            .output()
            .expect("run scraper check");
        assert!(
            out.status.success(),
            "scraper check rejected the config of {}:\n{}\n--- config ---\n{content}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
