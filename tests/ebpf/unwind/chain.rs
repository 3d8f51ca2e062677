// A CPU-bound Rust program for the DWARF unwinding test (tests/ebpf_unwind.rs): nearly all of
// its time is in chain::leaf, reached through chain::main -> chain::level1 -> chain::level2.
// Built `rustc --crate-name chain -C opt-level=3` without force-frame-pointers: only the
// .eh_frame CFI can unwind it.
//
// `#[inline(never)]` keeps each level a function; `black_box` stops the optimiser from
// folding the arithmetic, and each caller uses its callee's result after the call so that no
// call becomes a tail call (which would drop the caller's frame).
//
// unwind_rust            spin forever
// unwind_rust SECONDS    spin for SECONDS of wall time, then exit

use std::hint::black_box;
use std::time::{Duration, Instant};

#[inline(never)]
fn leaf(seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..2_000_000u32 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
    x
}

#[inline(never)]
fn level2(seed: u64) -> u64 {
    let x = leaf(black_box(seed ^ 0x9e3779b97f4a7c15));
    black_box(x ^ (x >> 29))
}

#[inline(never)]
fn level1(seed: u64) -> u64 {
    let x = level2(black_box(seed.wrapping_add(1)));
    black_box(x ^ (x >> 31))
}

fn main() {
    let limit = std::env::args()
        .nth(1)
        .and_then(|s| s.parse::<f64>().ok())
        .map(Duration::from_secs_f64);
    let start = Instant::now();
    let mut x = 1u64;
    loop {
        x = level1(black_box(x));
        if limit.is_some_and(|l| start.elapsed() >= l) {
            break;
        }
    }
    black_box(x);
}
