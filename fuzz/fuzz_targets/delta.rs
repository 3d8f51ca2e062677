//! Delta fuzz target: the input is two profiles, `u16 LE length of OLD | OLD | NEW` (raw
//! protobuf); the first byte's low bit picks Alloy's cumulative types or all types.
//!
//! Checks that nothing panics, that a delta exists exactly when both profiles are valid and
//! compatible, that it is valid and equals the slow reference model per stack, never negative
//! in cumulative types; and that the series path (baseline, then apply) agrees.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use scraper::pprof::proto::Profile;
use scraper::pprof::{
    Cumulative, DeltaEngine, DeltaOptions, DeltaOutcome, Limits, PprofError, decode, reference,
    validate,
};

const LIMITS: Limits = Limits {
    max_decompressed_bytes: 4 << 20,
};

fn parse(raw: &[u8]) -> Option<Profile> {
    let p = Profile::decode(raw).ok()?;
    validate(&p).ok()?;
    Some(p)
}

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let n = (u16::from_le_bytes(*head) as usize).min(rest.len());
    let (old, new) = rest.split_at(n);
    let all = head[0] & 1 == 1;
    let options = DeltaOptions {
        cumulative: if all {
            Cumulative::All
        } else {
            Cumulative::Alloy
        },
        limits: LIMITS,
        ..DeltaOptions::default()
    };
    let mut engine = DeltaEngine::new(options);
    let diff = engine.diff(old, new);
    let (po, pn) = (parse(old), parse(new));
    let (Some(po), Some(pn)) = (po, pn) else {
        assert!(diff.is_err(), "delta of an invalid profile");
        return;
    };
    let d = match diff {
        Ok(d) => d,
        Err(PprofError::Incompatible(_)) => return,
        Err(e) => panic!("valid profiles, error {e}"),
    };
    let out = decode(&d.profile, &LIMITS).expect("delta output is valid");
    let names: Option<&[&str]> = if all {
        None
    } else {
        Some(&["alloc_objects", "alloc_space", "contentions", "delay"])
    };
    let mask = reference::cumulative_mask(&pn, names);
    let (want, decreased) = reference::delta(&po, &pn, &mask);
    assert_eq!(reference::by_stack(&out), want);
    assert_eq!(d.stats.decreased, decreased);
    for s in &out.sample {
        assert!(s.value.iter().any(|&v| v != 0), "zero sample sent");
        for (v, c) in s.value.iter().zip(&mask) {
            assert!(!c || *v >= 0, "negative cumulative value");
        }
    }

    // Series path: baseline OLD, then NEW.
    let base = engine
        .apply(None, old)
        .expect("baseline of a valid profile");
    let next = engine
        .apply(base.state.as_ref(), new)
        .expect("apply of a valid profile");
    match next.outcome {
        DeltaOutcome::Delta { profile, .. } => {
            let p = decode(&profile, &LIMITS).expect("valid");
            assert_eq!(reference::by_stack(&p), reference::by_stack(&out));
        }
        DeltaOutcome::Reset(_) | DeltaOutcome::NotCumulative | DeltaOutcome::Baseline { .. } => {}
    }
});
