//! Decoder fuzz target: arbitrary bytes (raw protobuf, or gzip when they start with 1f 8b).
//!
//! Checks that nothing panics or allocates without bound (libFuzzer's -rss_limit_mb), and that
//! the zero-copy decoder used by the delta path accepts exactly the inputs the prost-based
//! slow path accepts. Valid profiles also go through encode, merge, trim, info and the delta
//! engine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use scraper::pprof::proto::Profile;
use scraper::pprof::{
    DeltaEngine, DeltaOptions, Limits, decode, encode, gunzip, info, merge, trim, validate,
    validate_raw,
};

/// Small enough that a decompression bomb is caught quickly, large enough for real seeds.
const LIMITS: Limits = Limits {
    max_decompressed_bytes: 4 << 20,
};

fuzz_target!(|data: &[u8]| {
    // Through the gzip layer (when the input starts with the gzip magic), the fast and slow
    // paths must agree too.
    let decompressed_valid = gunzip(data, &LIMITS).is_ok_and(|raw| validate_raw(&raw).is_ok());
    assert_eq!(decode(data, &LIMITS).is_ok(), decompressed_valid);

    let fast = validate_raw(data);
    let slow = Profile::decode(data)
        .map_err(|e| e.to_string())
        .and_then(|p| validate(&p).map(|()| p).map_err(|e| e.to_string()));
    assert_eq!(
        fast.is_ok(),
        slow.is_ok(),
        "decoders disagree: fast {fast:?}, slow {:?}",
        slow.as_ref().err()
    );

    let mut engine = DeltaEngine::new(DeltaOptions {
        limits: LIMITS,
        ..DeltaOptions::default()
    });
    let applied = engine.apply(None, data);
    assert_eq!(applied.is_ok(), decompressed_valid, "{:?}", applied.err());

    let Ok(p) = slow else {
        return;
    };
    let again = decode(&encode(&p, 1), &LIMITS).expect("our encoding decodes");
    assert_eq!(again, p);
    let summary = info::summarize(&p, None, 5);
    let _ = summary.to_string();
    let merged = merge(&[p.clone(), p.clone()]).expect("a valid profile merges with itself");
    validate(&merged).expect("merge output is valid");
    for t in [
        trim::truncate_stacks(&p, 2, trim::Keep::Root),
        trim::truncate_stacks(&p, 1, trim::Keep::Leaf),
        trim::keep_heaviest(&p, 3, trim::default_value_index(&p)),
        trim::drop_zero_samples(&p),
    ] {
        validate(&t.expect("trim of a valid profile")).expect("trim output is valid");
    }
});
