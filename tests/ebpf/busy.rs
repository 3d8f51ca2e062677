// A CPU-bound Rust program for the pyroscope.ebpf tests: nearly all of its time is in
// hot_rust_spin. Built with `-C force-frame-pointers=yes` so the sampler can unwind it.

use std::hint::black_box;

#[inline(never)]
fn hot_rust_spin(seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..2_000_000u32 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
    x
}

fn main() {
    let mut x = 1u64;
    loop {
        x = hot_rust_spin(black_box(x));
    }
}
