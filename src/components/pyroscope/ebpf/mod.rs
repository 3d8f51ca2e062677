//! `pyroscope.ebpf`: an embedded CPU sampler for processes without a pprof endpoint (C, Rust,
//! stripped Go, sidecars...), in Alloy's block and labels.
//!
//! ```text
//! targets (pids, container ids) ─► session thread ─► sampler (BPF ring, or perf fallback)
//!                                       │  drain every 200 ms: match pid → target,
//!                                       │  unwind and symbolize new stacks while the process lives
//!                                       └► every collect_interval: one pprof per process ─► forward_to
//! ```
//!
//! * [`args`]: the block's arguments (every Alloy argument accepted; what each does here).
//! * [`component`]: the component, a thin shell over [`session`].
//! * [`session`]: the sampling thread: sampler choice by capability (BPF, else perf, else a
//!   clear error), draining, target matching, collection.
//! * [`status`]: what the debug info shows.
//! * [`targets`]: pid / container-id matching and profile labels (service_name inference).
//! * [`profile`]: stacks of one interval to pprof.
//! * [`sample`]: what every sampler produces (one stack per tick) and the [`sample::Sampler`]
//!   trait.
//! * [`bpf`]: the BPF sampler (the program in `bpf/`, loaded with aya; a ring of records:
//!   kernel stack, frame-pointer user stack, user registers and a copy of the user stack).
//! * [`offcpu`]: off-CPU profiles (`off_cpu_threshold > 0`): a second BPF program times
//!   target threads' blocks; its records become a separate `offcpu` profile per process.
//! * [`perf`]: the fallback without BPF privileges: `perf_event_open` per thread.
//! * [`unwind`]: a record's registers and stack copy to return addresses, with no frame
//!   pointers needed (signal frames, Go's `.gopclntab`, `.eh_frame` through framehop).
//! * [`python`]: CPython frames, walked by the BPF program at each sample, named from their
//!   code objects and spliced in where the interpreter runs them (`python_enabled`).
//! * [`stack`]: a sample's frames as the profile shows them, and when a stack is complete.
//! * [`symbolize`]: addresses to function names, resolved while the process is alive and cached
//!   per binary (blazesym for ELF/DWARF/kallsyms, our own `.gopclntab` reader for Go).
//! * [`caps`]: the capability check that picks the sampler.
//! * [`health`]: the component's health, judged from every whole collection interval.
//! * [`metrics`]: Alloy's `pyroscope_ebpf_*` metrics.
//!
//! User stacks are unwound from call-frame information, so binaries built without frame
//! pointers get whole stacks; one that could not be unwound to its root ends in a synthetic
//! `[truncated]` frame rather than being silently short (docs/EBPF.md, "The unwinder").

pub mod args;
pub mod bpf;
pub mod caps;
pub mod component;
pub mod health;
pub mod metrics;
pub mod offcpu;
pub mod perf;
pub mod profile;
pub mod python;
pub mod sample;
pub mod session;
pub mod stack;
pub mod status;
pub mod symbolize;
pub mod targets;
pub mod unwind;

pub use component::Ebpf;
