//! The measurement behind the unwinding design (docs/EBPF.md, "Why stack copies"): what the
//! other design, unwinding in BPF from tables built out of the binaries' CFI, would have to
//! load into BPF maps, and how long building those tables takes, next to what stack-copy
//! unwinding keeps (the raw `.eh_frame` + `.eh_frame_hdr` bytes).
//!
//! `cargo test --lib unwind_table_census -- --nocapture` prints the table; the binaries
//! measured are the system's libc and libstdc++ (when installed) and this test executable.
//! As a test it checks what the design note relies on: a compact table needs about as many
//! bytes as the raw CFI it replaces, so it saves no memory.

use std::time::Instant;

use gimli::{BaseAddresses, CieOrFde, EhFrame, NativeEndian, UnwindContext, UnwindSection};
use object::{Object, ObjectSection};

/// Bytes per row of a compact in-kernel unwind table: an address (4 bytes, relative to the
/// mapping) and a packed rule (CFA register and offset, where RBP was saved: 4 bytes), which is
/// the smallest layout the designs we know of use.
const ROW_BYTES: u64 = 8;

struct Census {
    fdes: u64,
    rows: u64,
    eh_bytes: u64,
    build_ms: f64,
}

fn census(data: &[u8]) -> Option<Census> {
    let obj = object::File::parse(data).ok()?;
    let eh = obj.section_by_name(".eh_frame")?;
    let hdr_len = obj.section_by_name(".eh_frame_hdr").map_or(0, |s| s.size());
    let bytes = eh.data().ok()?;
    let section = EhFrame::new(bytes, NativeEndian);
    let bases = BaseAddresses::default()
        .set_eh_frame(eh.address())
        .set_text(obj.section_by_name(".text").map_or(0, |s| s.address()));
    let mut ctx = UnwindContext::new();
    let started = Instant::now();
    let (mut fdes, mut rows) = (0u64, 0u64);
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(EhFrame::cie_from_offset) else {
            continue;
        };
        fdes += 1;
        let Ok(mut table) = fde.rows(&section, &bases, &mut ctx) else {
            continue;
        };
        while let Ok(Some(_)) = table.next_row() {
            rows += 1;
        }
    }
    Some(Census {
        fdes,
        rows,
        eh_bytes: eh.size() + hdr_len,
        build_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

#[test]
fn unwind_table_census() {
    let mut paths: Vec<String> = vec![
        "/lib/x86_64-linux-gnu/libc.so.6".into(),
        "/lib/x86_64-linux-gnu/libstdc++.so.6".into(),
    ];
    if let Ok(exe) = std::env::current_exe() {
        paths.push(exe.display().to_string());
    }
    println!(
        "{:<48} {:>8} {:>10} {:>12} {:>12} {:>9}",
        "binary", "FDEs", "CFI rows", "table bytes", "eh bytes", "build ms"
    );
    let mut measured = 0;
    for path in paths {
        let Ok(data) = std::fs::read(&path) else {
            println!("{path}: unreadable");
            continue;
        };
        match census(&data) {
            Some(c) => {
                measured += 1;
                assert!(
                    c.fdes > 0 && c.rows >= c.fdes,
                    "{path}: {} FDEs, {} rows",
                    c.fdes,
                    c.rows
                );
                // Within a factor of two either way of the raw sections.
                let table = c.rows * ROW_BYTES;
                assert!(
                    table * 2 >= c.eh_bytes && table <= c.eh_bytes * 2,
                    "{path}: table {table} B vs .eh_frame(+hdr) {} B",
                    c.eh_bytes
                );
                println!(
                    "{:<48} {:>8} {:>10} {:>12} {:>12} {:>9.1}",
                    path,
                    c.fdes,
                    c.rows,
                    c.rows * ROW_BYTES,
                    c.eh_bytes,
                    c.build_ms
                );
            }
            None => println!("{path}: no .eh_frame"),
        }
    }
    // libc and this executable are always there.
    assert!(measured >= 2, "measured {measured} binaries");
}
