//! Generates protobuf types: pprof from proto/profile.proto, Pyroscope's push and query APIs
//! from proto/push/v1/push.proto, proto/querier/v1/querier.proto and
//! proto/types/v1/types.proto, and OTLP profiles from
//! proto/opentelemetry/ (the export request and the messages it uses).
//!
//! protox parses the .proto files in pure Rust so neither developers nor CI need a
//! `protoc` binary; prost-build then emits one file per package (`perftools.profiles.rs`,
//! `push.v1.rs`, `querier.v1.rs`, `types.v1.rs`, `opentelemetry.proto.*.rs`) into OUT_DIR, which
//! src/pprof/proto.rs, src/protocols/pyroscope/proto.rs and src/protocols/otlp/proto.rs include.

use std::error::Error;

const PROTO_DIR: &str = "proto";
const PROFILE_PROTO: &str = "proto/profile.proto";
const PUSH_PROTO: &str = "proto/push/v1/push.proto";
const TYPES_PROTO: &str = "proto/types/v1/types.proto";
const QUERIER_PROTO: &str = "proto/querier/v1/querier.proto";
const OTLP_PROTOS: [&str; 4] = [
    "proto/opentelemetry/proto/common/v1/common.proto",
    "proto/opentelemetry/proto/resource/v1/resource.proto",
    "proto/opentelemetry/proto/profiles/v1development/profiles.proto",
    "proto/opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
];

fn main() -> Result<(), Box<dyn Error>> {
    // Without these cargo re-runs the script whenever any file in the package
    // changes, i.e. on every edit of any source file. Edits to build.rs itself
    // need no line: they recompile the script, which always re-runs it.
    let protos: Vec<&str> = [PROFILE_PROTO, PUSH_PROTO, TYPES_PROTO, QUERIER_PROTO]
        .into_iter()
        .chain(OTLP_PROTOS)
        .collect();
    for proto in &protos {
        println!("cargo:rerun-if-changed={proto}");
    }

    // `scraper_build_info{rustversion}`: the compiler cargo runs for this build.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SCRAPER_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=SCRAPER_REVISION");

    let descriptors = protox::compile(&protos, [PROTO_DIR])?;
    prost_build::Config::new()
        // Received profiles are handed on without copying (test receivers, receive_http).
        .bytes([".push.v1.RawSample.raw_profile"])
        .compile_fds(descriptors)?;
    Ok(())
}
