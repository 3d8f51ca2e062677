//! Generates protobuf types: pprof from proto/profile.proto, and Pyroscope's push API from
//! proto/push/v1/push.proto + proto/types/v1/types.proto.
//!
//! protox parses the .proto files in pure Rust so neither developers nor CI need a
//! `protoc` binary; prost-build then emits `perftools.profiles.rs`, `push.v1.rs` and
//! `types.v1.rs` into OUT_DIR, which src/pprof/proto.rs and src/write/proto.rs include.

use std::error::Error;

const PROTO_DIR: &str = "proto";
const PROFILE_PROTO: &str = "proto/profile.proto";
const PUSH_PROTO: &str = "proto/push/v1/push.proto";
const TYPES_PROTO: &str = "proto/types/v1/types.proto";

fn main() -> Result<(), Box<dyn Error>> {
    // Without these cargo re-runs the script whenever any file in the package
    // changes, i.e. on every edit of any source file. Edits to build.rs itself
    // need no line: they recompile the script, which always re-runs it.
    for proto in [PROFILE_PROTO, PUSH_PROTO, TYPES_PROTO] {
        println!("cargo:rerun-if-changed={proto}");
    }

    let descriptors = protox::compile([PROFILE_PROTO, PUSH_PROTO, TYPES_PROTO], [PROTO_DIR])?;
    prost_build::Config::new()
        // Received profiles are handed on without copying (test receivers, receive_http).
        .bytes([".push.v1.RawSample.raw_profile"])
        .compile_fds(descriptors)?;
    Ok(())
}
