//! What the tests of `pyroscope.ebpf`'s Python walk share: the interpreters they run and the
//! configuration that samples them.

/// Debian's stripped CPython 3.11 (the interpreter linked into the executable); `.ci/run`
/// installs it.
pub const DEBIAN_3_11: &str = "/usr/bin/python3.11";
/// The build image's pyenv builds (each links its `libpython3.X.so`, with debug info).
pub const PYENV_3_11: &str = "/root/.pyenv/versions/3.11.7/bin/python3";
pub const PYENV_3_12: &str = "/root/.pyenv/versions/3.12.1/bin/python3";
pub const PYENV_3_13: &str = "/root/.pyenv/versions/3.13.0/bin/python3";

/// A `pyroscope.ebpf` sampling `targets` (pid, service name) every `collect` seconds, with the
/// Python walk on or off, writing to the Pyroscope `receiver`.
pub fn ebpf_config(targets: &[(u32, &str)], receiver: &str, collect: u64, python: bool) -> String {
    let targets: Vec<String> = targets
        .iter()
        .map(|(pid, service)| {
            format!(r#"{{"__process_pid__" = "{pid}", "service_name" = "{service}"}}"#)
        })
        .collect();
    format!(
        r#"
pyroscope.ebpf "py" {{
  targets          = [{}]
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "{collect}s"
  python_enabled   = {python}
}}

pyroscope.write "out" {{
  endpoint {{
    url = "{receiver}"
  }}
}}
"#,
        targets.join(", ")
    )
}
