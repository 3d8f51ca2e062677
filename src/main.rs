// mimalloc instead of glibc malloc: discovery and scraping churn through many small
// allocations from several threads, and glibc keeps freed memory as fragmented heap (RSS stayed
// at twice the live data in the 10,000-pod benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    scraper::cli::main()
}
