// mimalloc instead of glibc malloc: discovery and scraping churn through many small
// allocations from several threads, and glibc keeps freed memory as fragmented heap (RSS stayed
// at twice the live data in the 10,000-pod benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// mimalloc's option setter (linked in with the allocator). Numbers from mimalloc.h (v3).
unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    // By default mimalloc commits whole arenas up front on overcommitting kernels and keeps
    // freed pages for a while before returning them. Transient spikes (pyroscope.ebpf parsing
    // the kernel's 5 MB BTF, a relist of 10,000 pods) then stay in RSS: measured 58 MB peak and
    // 32 MB steady for the eBPF sampler, against 32 MB and 17 MB with on-demand commit and
    // immediate purging (docs/PERFORMANCE.md). Environment variables (MIMALLOC_*) still win for
    // experiments, as mimalloc reads them at its own start.
    let from_env = |name: &str| std::env::var_os(name).is_some();
    // SAFETY: mi_option_set only stores an integer in mimalloc's option table; it is safe to call
    // at any time, from any thread.
    unsafe {
        if !from_env("MIMALLOC_ARENA_EAGER_COMMIT") {
            mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        }
        if !from_env("MIMALLOC_PURGE_DELAY") {
            mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        }
    }
    scraper::cli::main()
}
