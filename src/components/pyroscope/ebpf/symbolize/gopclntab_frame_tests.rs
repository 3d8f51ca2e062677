//! An independent oracle for [`GoTable::frame`]: Go's linker also writes the SP deltas as DWARF
//! call-frame information (`.debug_frame`, unless built with `-ldflags=-w`), and gimli, not our
//! decoder, reads that. Both come from the same per-function pcsp data in the linker, so every
//! CFI row must agree exactly with the pcsp table: CFA = rsp + sp_delta + 8 on amd64.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, DebugFrame, LittleEndian, UnwindContext, UnwindSection as _,
    X86_64,
};
use object::{CompressionFormat, Object as _, ObjectSection as _};

use super::super::elf;
use super::super::tests::{go_available, go_build};
use super::{GoFrame, GoTable};

/// Builds tests/go/busyloop like tests/ebpf_profiles.rs does, but keeping DWARF.
fn build_busyloop(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/busyloop/main.go");
    std::fs::copy(&src, dir.join("main.go")).expect("copy busyloop");
    go_build(dir, "busy_go", &[])
}

/// `.debug_frame`'s contents. Go's linker compresses DWARF by default (SHF_COMPRESSED, or a
/// `.zdebug_frame` in older releases, both zlib); `object` is built without its decompressors,
/// so zlib is undone here with flate2.
fn debug_frame(data: &[u8]) -> Vec<u8> {
    let obj = object::File::parse(data).expect("parse ELF");
    let section = obj
        .section_by_name(".debug_frame")
        .expect("the binary has .debug_frame");
    let compressed = section.compressed_data().expect("section data");
    match compressed.format {
        CompressionFormat::None => compressed.data.to_vec(),
        CompressionFormat::Zlib => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(compressed.data)
                .read_to_end(&mut out)
                .expect("inflate .debug_frame");
            assert_eq!(out.len() as u64, compressed.uncompressed_size);
            out
        }
        other => panic!("unexpected .debug_frame compression {other:?}"),
    }
}

#[test]
fn frames_match_debug_frame() {
    if !go_available() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = build_busyloop(dir.path());
    let file = std::fs::File::open(&bin).expect("open");
    let info = elf::read_info(&file).expect("parse");
    let section = info.gopclntab.expect("Go function table present");
    let table = GoTable::load(&file, section, info.text_addr).expect("table loads");

    // Every function's name by entry, for messages and for the top-frame checks.
    let mut names: HashMap<u64, String> = HashMap::new();
    for &(entry, _) in &table.functab[..table.functions()] {
        let addr = table.text_start + u64::from(entry);
        let name = table.lookup(&file, addr).expect("lookup");
        names.insert(addr, name.expect("a name for every function"));
    }
    let by_name: HashMap<&str, u64> = names.iter().map(|(a, n)| (n.as_str(), *a)).collect();

    let data = std::fs::read(&bin).expect("read binary");
    let frame_data = debug_frame(&data);
    let mut debug_frame = DebugFrame::new(&frame_data, LittleEndian);
    debug_frame.set_address_size(8);
    let bases = BaseAddresses::default();
    let mut ctx = UnwindContext::new();

    let (mut fdes, mut rows, mut empty_rows) = (0usize, 0usize, 0usize);
    let mut mismatches = Vec::new();
    let mut entries = debug_frame.entries(&bases);
    while let Some(entry) = entries.next().expect("CFI entry") {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let fde = partial
            .parse(|section, bases, offset| section.cie_from_offset(bases, offset))
            .expect("FDE");
        fdes += 1;
        let start = fde.initial_address();
        let name = names.get(&start).map_or("?", String::as_str);
        let mut unwind = fde
            .rows(&debug_frame, &bases, &mut ctx)
            .expect("CFI program");
        while let Some(row) = unwind.next_row().expect("CFI row") {
            let (lo, hi) = (row.start_address(), row.end_address());
            // The linker may emit a zero-length row (an advance of 0 before the function's
            // last byte); it covers no pc, as a zero-length pcsp range covers none.
            if lo >= hi {
                empty_rows += 1;
                continue;
            }
            let CfaRule::RegisterAndOffset { register, offset } = *row.cfa() else {
                panic!("{name} {lo:#x}: CFA is not register+offset");
            };
            assert_eq!(register, X86_64::RSP, "{name} {lo:#x}: CFA register");
            // Both ends of the row: the decoder must switch values exactly at row boundaries.
            for pc in [lo, hi - 1] {
                let got = table.frame(&file, pc).expect("frame");
                let ok = matches!(got, Some(GoFrame { entry, sp_delta, .. })
                    if entry == start && i64::from(sp_delta) + 8 == offset);
                if !ok {
                    mismatches.push(format!(
                        "{name} pc {pc:#x}: CFA rsp+{offset}, frame {got:?}"
                    ));
                }
            }
            rows += 1;
        }
    }
    eprintln!(
        "{fdes} FDEs ({} functions in .gopclntab), {rows} CFI rows compared at both ends, \
         {empty_rows} empty rows skipped",
        table.functions()
    );
    assert!(
        mismatches.is_empty(),
        "{} of {rows} rows differ, e.g.:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
    assert!(rows >= 3000, "only {rows} CFI rows");
    assert!(fdes * 10 >= table.functions() * 9, "{fdes} FDEs");

    // Flags: exactly what Go's traceback stops at.
    let frame_of = |name: &str| -> GoFrame {
        let addr = *by_name
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing"));
        table
            .frame(&file, addr)
            .expect("frame")
            .unwrap_or_else(|| panic!("{name}: no frame"))
    };
    for top in [
        "runtime.goexit",
        "runtime.mstart",
        "runtime.rt0_go",
        "runtime.sigtramp",
    ] {
        assert!(frame_of(top).top, "{top} is a top frame");
    }
    for normal in ["main.main", "main.hotGoSpin", "runtime.main"] {
        let f = frame_of(normal);
        assert!(!f.top && !f.spwrite, "{normal}: {f:?}");
    }
    for spwrite in ["runtime.mcall", "runtime.systemstack"] {
        let f = frame_of(spwrite);
        assert!(f.spwrite && !f.top, "{spwrite}: {f:?}");
    }
    let mut tops = Vec::new();
    let mut spwrites = Vec::new();
    for (addr, name) in &names {
        if let Some(f) = table.frame(&file, *addr).expect("frame") {
            if f.top {
                tops.push(name.as_str());
            }
            if f.spwrite {
                spwrites.push(name.as_str());
            }
        }
    }
    tops.sort_unstable();
    spwrites.sort_unstable();
    eprintln!("TOPFRAME: {tops:?}\nSPWRITE: {spwrites:?}");
}
