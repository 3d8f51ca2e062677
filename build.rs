//! Generates the pprof protobuf types from proto/profile.proto.
//!
//! protox parses the .proto in pure Rust so neither developers nor CI need a
//! `protoc` binary; prost-build then emits `perftools.profiles.rs` into
//! OUT_DIR, which src/pprof/proto.rs includes.

use std::error::Error;

const PROTO_DIR: &str = "proto";
const PROFILE_PROTO: &str = "proto/profile.proto";

fn main() -> Result<(), Box<dyn Error>> {
    // Without this cargo re-runs the script whenever any file in the package
    // changes, i.e. on every edit of any source file. Edits to build.rs itself
    // need no line: they recompile the script, which always re-runs it.
    println!("cargo:rerun-if-changed={PROFILE_PROTO}");

    let descriptors = protox::compile([PROFILE_PROTO], [PROTO_DIR])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
