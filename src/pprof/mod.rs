//! pprof `profile.proto` support: the generated message types and a CPU
//! profiler for our own process (served like Go's /debug/pprof/profile).

pub mod proto;
pub mod self_profile;
