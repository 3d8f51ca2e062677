//! The profile core on real profiles committed in tests/data/pprof (captured from
//! tests/go/goapp and Debian's Prometheus by `SCRAPER_WRITE_FIXTURES=1 cargo test --test
//! pprof_oracle`), checked against the slow reference model; runs without Go.

use std::path::PathBuf;

use scraper::pprof::proto::Profile;
use scraper::pprof::reference;
use scraper::pprof::{
    Cumulative, DeltaEngine, DeltaOptions, DeltaOutcome, DeltaStore, Limits, PprofError,
    ResetReason, decode, encode, gunzip, info, merge, validate_raw,
};

const PAIRS: [&str; 8] = [
    "goapp-allocs",
    "goapp-heap",
    "goapp-mutex",
    "goapp-block",
    "prometheus-allocs",
    "prometheus-heap",
    "prometheus-mutex",
    "prometheus-block",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pprof")
        .join(format!("{name}.pb.gz"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn pair(name: &str) -> (Vec<u8>, Vec<u8>) {
    (fixture(&format!("{name}-1")), fixture(&format!("{name}-2")))
}

fn dec(bytes: &[u8]) -> Profile {
    decode(bytes, &Limits::default()).expect("decode")
}

#[test]
fn both_decoders_accept_real_profiles() {
    for name in PAIRS {
        let (a, b) = pair(name);
        for gz in [a, b] {
            let raw = gunzip(&gz, &Limits::default()).expect("gunzip");
            validate_raw(&raw).expect("zero-copy decoder");
            let p = dec(&gz);
            // Our encoding of the tree decodes to the same tree.
            assert_eq!(dec(&encode(&p, 1)), p, "{name}");
        }
    }
}

#[test]
fn deltas_equal_the_reference_model() {
    for name in PAIRS {
        let (old, new) = pair(name);
        for (cumulative, names) in [
            (
                Cumulative::Alloy,
                Some(&["alloc_objects", "alloc_space", "contentions", "delay"][..]),
            ),
            (Cumulative::All, None),
        ] {
            let mut engine = DeltaEngine::new(DeltaOptions {
                cumulative,
                ..DeltaOptions::default()
            });
            let d = engine.diff(&old, &new).expect("diff");
            let (po, pn, out) = (dec(&old), dec(&new), dec(&d.profile));
            let mask = reference::cumulative_mask(&pn, names);
            let (want, decreased) = reference::delta(&po, &pn, &mask);
            assert_eq!(reference::by_stack(&out), want, "{name}");
            assert_eq!(d.stats.decreased, decreased, "{name}");
            assert_eq!(out.time_nanos, pn.time_nanos);
            assert_eq!(out.duration_nanos, pn.time_nanos - po.time_nanos);
            assert!(out.sample.iter().all(|s| s.value.iter().any(|&v| v != 0)));
        }
    }
}

#[test]
fn series_state_is_small() {
    for name in PAIRS {
        let (old, new) = pair(name);
        let raw_len = gunzip(&new, &Limits::default()).expect("gunzip").len();
        let mut store = DeltaStore::new(DeltaOptions::default());
        assert!(matches!(
            store.observe(name, &old).expect("baseline"),
            DeltaOutcome::Baseline { .. }
        ));
        match store.observe(name, &new).expect("delta") {
            DeltaOutcome::Delta { stats, .. } => {
                assert!(
                    stats.state_bytes * 2 <= raw_len,
                    "{name}: state {} bytes vs raw {raw_len}",
                    stats.state_bytes
                );
                assert_eq!(stats.state_bytes, store.state_bytes());
            }
            other => panic!("{name}: {other:?}"),
        }
        // The same two scrapes in the wrong order look like a restart (or changed nothing).
        let mut store = DeltaStore::new(DeltaOptions::default());
        store.observe(name, &new).expect("baseline");
        match store.observe(name, &old).expect("swapped") {
            DeltaOutcome::Reset(
                ResetReason::TimeWentBackwards | ResetReason::CountersDecreased { .. },
            ) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn merges_sum_per_stack() {
    for name in PAIRS {
        let (a, b) = pair(name);
        let (pa, pb) = (dec(&a), dec(&b));
        let m = merge(&[pa.clone(), pb.clone()]).expect("merge");
        let mut want = reference::by_stack(&pa);
        for (k, v) in reference::by_stack(&pb) {
            let e = want.entry(k).or_insert_with(|| vec![0; v.len()]);
            for (x, y) in e.iter_mut().zip(v) {
                *x += y;
            }
        }
        want.retain(|_, v| v.iter().any(|&x| x != 0));
        assert_eq!(reference::by_stack(&m), want, "{name}");
        let summary = info::summarize(&m, None, 5);
        assert_eq!(summary.totals, reference::totals(&m));
    }
}

#[test]
fn damaged_real_profiles_are_errors_not_panics() {
    let (_, gz) = pair("goapp-heap");
    let raw = gunzip(&gz, &Limits::default()).expect("gunzip");
    let mut engine = DeltaEngine::default();
    let baseline = engine.apply(None, &raw).expect("baseline").state;
    // Every truncation and a sweep of single-byte corruptions.
    let mut inputs: Vec<Vec<u8>> = (0..raw.len())
        .step_by(7)
        .map(|n| raw[..n].to_vec())
        .collect();
    for i in (0..raw.len()).step_by(13) {
        for x in [0x00, 0x80, 0xff] {
            let mut v = raw.clone();
            v[i] = x;
            inputs.push(v);
        }
    }
    let mut errors = 0;
    for input in &inputs {
        let fast = validate_raw(input);
        let slow = decode(input, &Limits::default());
        assert_eq!(fast.is_ok(), slow.is_ok(), "{fast:?} vs {:?}", slow.err());
        if engine.apply(baseline.as_ref(), input).is_err() {
            errors += 1;
        }
    }
    assert!(errors > inputs.len() / 4, "{errors} of {}", inputs.len());
    // Truncated gzip.
    for n in [0, 5, 10, gz.len() / 2, gz.len() - 1] {
        let r = engine.apply(baseline.as_ref(), &gz[..n]);
        assert!(r.is_err(), "{n}");
    }
    let tiny = Limits {
        max_decompressed_bytes: 1000,
    };
    assert_eq!(
        decode(&gz, &tiny).map(|_| ()),
        Err(PprofError::TooLarge { limit: 1000 })
    );
}

#[test]
fn cli_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pprof");
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_scraper"))
            .arg("pprof")
            .args(args)
            .output()
            .expect("run scraper")
    };
    let (old, new) = (
        data.join("goapp-heap-1.pb.gz"),
        data.join("goapp-heap-2.pb.gz"),
    );
    let out = dir.path().join("delta.pb.gz");
    let o = run(&[
        "delta".as_ref(),
        old.as_os_str(),
        new.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--level".as_ref(),
        "1".as_ref(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = dec(&std::fs::read(&out).expect("delta written"));
    assert!(!d.sample.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("delta: "));

    let merged = dir.path().join("merged.pb.gz");
    let o = run(&[
        "merge".as_ref(),
        old.as_os_str(),
        new.as_os_str(),
        "-o".as_ref(),
        merged.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dec(&std::fs::read(&merged).expect("merge written"));

    let o = run(&[
        "info".as_ref(),
        new.as_os_str(),
        "--type".as_ref(),
        "alloc_space".as_ref(),
        "--top".as_ref(),
        "3".as_ref(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        text.contains("Top functions by alloc_space/bytes"),
        "{text}"
    );

    // Errors name the problem and exit 1: a damaged file, incompatible profiles.
    let bad = dir.path().join("bad.pb");
    std::fs::write(&bad, b"\x0a\x05").expect("write");
    let o = run(&["info".as_ref(), bad.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("malformed protobuf at byte"), "{err}");
    let mutex = data.join("goapp-mutex-1.pb.gz");
    let o = run(&[
        "delta".as_ref(),
        mutex.as_os_str(),
        new.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("incompatible profiles"), "{err}");
}
