//! pyroscope.write trimming a large heap profile to the backend's sample limit: every sample
//! type keeps at least 95% of its total, the profile says it was trimmed (a pprof comment),
//! and the trim is counted under its reason. The totals are checked on the profile as the
//! backend received it, decoded by our parser and, when the Go toolchain and Debian's
//! golang-github-google-pprof-dev are installed, by google/pprof's own package
//! (tests/go/pprofcheck `totals`); see tests/go/harness.rs for how a missing tool is handled.

#[path = "go/harness.rs"]
#[allow(unused_imports)] // what the pprof oracle tests use of it
mod harness;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use prost::Message as _;
use scraper::pprof::proto::Profile as Pprof;
use scraper::profiles::Profile;
use support::heap_profile::skewed_heap;
use support::pyroscope_receiver::{PyroscopeReceiver, Writer};

const WAIT: Duration = Duration::from_secs(30);
const SAMPLES: usize = 50_000;
const LIMIT: usize = 16_000;

/// Per sample type: (name, sum of absolute values).
fn totals(p: &Pprof) -> Vec<(String, u128)> {
    p.sample_type
        .iter()
        .enumerate()
        .map(|(t, vt)| {
            let sum = p
                .sample
                .iter()
                .map(|s| u128::from(s.value[t].unsigned_abs()))
                .sum();
            (p.string_table[vt.r#type as usize].clone(), sum)
        })
        .collect()
}

/// Kept fraction per type, in tenths of a percent (rounded down).
fn kept_permille(before: &[(String, u128)], after: &[(String, u128)]) -> BTreeMap<String, u128> {
    before
        .iter()
        .zip(after)
        .map(|((name, b), (_, a))| (name.clone(), a * 1000 / b))
        .collect()
}

/// google/pprof's view of a file: sample count, totals per type, comments.
fn pprof_totals(check: &Path, file: &Path) -> (usize, Vec<(String, u128)>, Vec<String>) {
    let (out, _) = harness::run_ok(std::process::Command::new(check).arg("totals").arg(file));
    let (mut samples, mut totals, mut comments) = (0, Vec::new(), Vec::new());
    for line in out.lines() {
        if let Some(n) = line.strip_prefix("samples ") {
            samples = n.parse().expect("sample count");
        } else if let Some(rest) = line.strip_prefix("total ") {
            let f: Vec<&str> = rest.split(' ').collect();
            totals.push((f[0].to_string(), f[2].parse().expect("total")));
        } else if let Some(c) = line.strip_prefix("comment ") {
            comments.push(c.to_string());
        }
    }
    (samples, totals, comments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trimmed_heap_profile_keeps_95_percent_of_every_type_and_says_so() {
    let heap = skewed_heap(SAMPLES, 21);
    let before = totals(&heap);
    // What the test is about: ranking by any one type alone (today's default type, or
    // another) loses more than 5% of some other type here.
    let naive: Vec<BTreeMap<String, u128>> = (0..4)
        .map(|t| {
            let kept = scraper::pprof::trim::keep_heaviest(&heap, LIMIT, t).expect("heaviest");
            kept_permille(&before, &totals(&kept))
        })
        .collect();
    for (t, kept) in naive.iter().enumerate() {
        assert!(
            kept.values().any(|&pm| pm < 950),
            "the profile is too easy: ranking by type {t} keeps {kept:?}"
        );
    }

    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{}\"\n  limits {{\n    max_profile_samples = {LIMIT}\n  }}\n}}\n",
        rx.url(),
    ));
    let raw = scraper::pprof::gzip(&heap.encode_to_vec(), 1);
    let labels = [("__name__", "memory"), ("service_name", "shop/checkout")]
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .to_vec();
    w.append(vec![Profile::new(labels, raw.clone())]);
    assert!(rx.wait_for(1, WAIT).await, "nothing arrived");
    let got = rx.received()[0].raw.clone();

    let out = scraper::pprof::decode(&got, &scraper::pprof::Limits::default()).expect("decode");
    assert_eq!(out.sample.len(), LIMIT);
    let after = totals(&out);
    let kept = kept_permille(&before, &after);
    eprintln!("kept (permille): ours {kept:?}; ranking by one type {naive:?}");
    assert!(kept.values().all(|&pm| pm >= 950), "{kept:?}");
    let comments: Vec<&str> = out
        .comment
        .iter()
        .map(|&i| out.string_table[i as usize].as_str())
        .collect();
    let want = format!(
        "scraper: trimmed {SAMPLES} samples to {LIMIT} (max_profile_samples = {LIMIT}); kept of \
         each type's total: {}",
        kept.iter()
            .map(|(name, pm)| format!("{name} {}.{}%", pm / 10, pm % 10))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(comments, [want.as_str()]);
    assert!(
        w.wait(WAIT, |w| {
            w.metric(
                "pyroscope_write_trimmed_profiles_total",
                &[("reason", "max_profile_samples")],
            ) == 1.0
                && w.metric("pyroscope_write_trimmed_profiles_total", &[]) == 1.0
        })
        .await,
        "{}",
        w.metrics.encode().expect("encode")
    );
    w.stop().await;

    // google/pprof reads both and agrees on every total and on the comment.
    if harness::tools().is_none() {
        return;
    }
    let check = harness::build_go("pprofcheck");
    let dir = tempfile::tempdir().expect("tempdir");
    let (input, output) = (dir.path().join("in.pb.gz"), dir.path().join("out.pb.gz"));
    std::fs::write(&input, &raw).expect("write");
    std::fs::write(&output, &got).expect("write");
    let (n_in, go_before, _) = pprof_totals(&check, &input);
    let (n_out, go_after, go_comments) = pprof_totals(&check, &output);
    assert_eq!((n_in, n_out), (SAMPLES, LIMIT));
    assert_eq!((go_before, go_after), (before, after));
    assert_eq!(go_comments, [want]);
}
