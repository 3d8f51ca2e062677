use super::*;
use crate::pprof::proto::{Location, Sample};
use crate::pprof::testutil::B;

mod render;

/// Go's CPU profile types.
fn cpu() -> B {
    B::new(&[("samples", "count"), ("cpu", "nanoseconds")])
}

/// One side of the comparison: `profile` over `seconds` from `instances`.
fn window(profile: Profile, seconds: f64, instances: usize) -> Window {
    Window {
        profile,
        seconds,
        instances,
        profiles: instances,
        label: String::new(),
    }
}

/// The diff tests' shorthands over the shared builder.
trait Diffable {
    /// A cpu sample of `ns` nanoseconds; the stack is written leaf first and a frame "a+b" is
    /// one location with inlined lines, `a` the innermost.
    fn cpu_sample(self, stack: &[&str], ns: i64) -> B;
    fn window(self, seconds: f64, instances: usize) -> Window;
}

impl Diffable for B {
    fn cpu_sample(self, stack: &[&str], ns: i64) -> B {
        // Lines are all 1: frames are merged by function name, lines play no part.
        let frames: Vec<Vec<(&str, i64)>> = stack
            .iter()
            .map(|f| f.split('+').map(|name| (name, 1)).collect())
            .collect();
        let frames: Vec<&[(&str, i64)]> = frames.iter().map(Vec::as_slice).collect();
        self.frames(&frames, &[1, ns], &[])
    }

    fn window(self, seconds: f64, instances: usize) -> Window {
        window(self.build(), seconds, instances)
    }
}

/// The report on windows of 1 s parts of one instance, each window the parts' samples together.
fn diff_parts(before: Vec<Window>, after: Vec<Window>) -> Report {
    let whole = |parts: &[Window]| {
        let profiles: Vec<Profile> = parts.iter().map(|w| w.profile.clone()).collect();
        let mut p = crate::pprof::merge(&profiles).expect("merge");
        p.duration_nanos = parts.len() as i64 * 1_000_000_000;
        window(p, parts.len() as f64, 1)
    };
    diff_with_parts(
        &whole(&before),
        &whole(&after),
        &Parts { before, after },
        &StatsOptions::default(),
        &Options::default(),
    )
    .expect("diff")
}

fn run(before: Window, after: Window) -> Report {
    diff(&before, &after, &Options::default()).expect("diff")
}

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn flat_and_cum() {
    // (stacks with values, function, flat, cum): one window, 1 s, 1 instance.
    type Case = (
        &'static str,
        Vec<(Vec<&'static str>, i64)>,
        &'static str,
        f64,
        f64,
    );
    let cases: Vec<Case> = vec![
        ("leaf", vec![(vec!["a", "main"], 10)], "a", 10.0, 10.0),
        ("caller", vec![(vec!["a", "main"], 10)], "main", 0.0, 10.0),
        (
            "direct recursion counts once",
            vec![(vec!["a", "a", "a", "main"], 10)],
            "a",
            10.0,
            10.0,
        ),
        (
            "indirect recursion counts once",
            vec![(vec!["a", "b", "a", "main"], 10), (vec!["b", "main"], 5)],
            "b",
            5.0,
            15.0,
        ),
        (
            "recursion, leaf elsewhere",
            vec![(vec!["a", "b", "a", "main"], 10), (vec!["b", "main"], 5)],
            "a",
            10.0,
            10.0,
        ),
        (
            "inlined callee is the leaf",
            vec![(vec!["inner+outer", "main"], 7)],
            "inner",
            7.0,
            7.0,
        ),
        (
            "inlined caller is not",
            vec![(vec!["inner+outer", "main"], 7)],
            "outer",
            0.0,
            7.0,
        ),
        (
            "inlined frame inside a recursive stack",
            vec![(vec!["x", "a+b", "a", "main"], 3)],
            "a",
            0.0,
            3.0,
        ),
        (
            "several samples add up",
            vec![
                (vec!["a", "main"], 1),
                (vec!["a", "x"], 2),
                (vec!["b", "a"], 4),
            ],
            "a",
            3.0,
            7.0,
        ),
    ];
    for (what, samples, function, flat, cum) in cases {
        let mut p = cpu();
        for (stack, v) in &samples {
            p = p.cpu_sample(stack, *v);
        }
        let r = run(cpu().window(1.0, 1), p.window(1.0, 1));
        let row = r.row(function).unwrap_or_else(|| panic!("{what}: no row"));
        assert!(
            approx(row.flat_after, flat),
            "{what}: flat {}",
            row.flat_after
        );
        assert!(approx(row.cum_after, cum), "{what}: cum {}", row.cum_after);
        assert_eq!(row.flat_before, 0.0, "{what}");
        assert_eq!(row.flat_change_pct, None, "{what}");
    }
}

#[test]
fn normalisation() {
    // (what, before: seconds, instances, value; after: same; expected change of a's flat in %)
    let cases = [
        ("same window", (60.0, 1, 100), (60.0, 1, 100), 0.0),
        (
            "2x longer, 2x samples",
            (60.0, 1, 100),
            (120.0, 1, 200),
            0.0,
        ),
        (
            "2 instances vs 1 halves the rate",
            (60.0, 1, 100),
            (60.0, 2, 100),
            -50.0,
        ),
        (
            "3 instances, 3x samples",
            (60.0, 1, 100),
            (60.0, 3, 300),
            0.0,
        ),
        (
            "shorter window, same samples",
            (60.0, 1, 100),
            (30.0, 1, 100),
            100.0,
        ),
        ("fractional seconds", (0.5, 1, 10), (1.5, 1, 30), 0.0),
    ];
    for (what, (bs, bi, bv), (as_, ai, av), pct) in cases {
        let before = cpu().cpu_sample(&["a", "main"], bv).window(bs, bi);
        let after = cpu().cpu_sample(&["a", "main"], av).window(as_, ai);
        let r = run(before, after);
        let row = r.row("a").expect("row a");
        assert!(
            approx(row.flat_before, bv as f64 / bs / bi as f64),
            "{what}"
        );
        assert!(
            approx(row.flat_after, av as f64 / as_ / ai as f64),
            "{what}"
        );
        let got = row.flat_change_pct.expect("pct");
        assert!((got - pct).abs() < 1e-9, "{what}: {got}");
        assert!(approx(r.before.normalised, row.cum_before), "{what}");
        assert_eq!(r.before.total, bv as f64, "{what}: total is not normalised");
        if pct == 0.0 {
            // Unchanged frames are grey in both flame graphs.
            assert!(r.tree.nodes.iter().all(|n| n.change() == 0.0), "{what}");
        }
    }
}

#[test]
fn rows_sorted_by_impact() {
    let before = cpu()
        .cpu_sample(&["a", "main"], 100)
        .cpu_sample(&["b", "main"], 50)
        .cpu_sample(&["gone", "main"], 30)
        .cpu_sample(&["t1", "x", "main"], 10)
        .cpu_sample(&["t2", "main"], 10)
        .window(1.0, 1);
    let after = cpu()
        .cpu_sample(&["a", "main"], 100)
        .cpu_sample(&["b", "main"], 10)
        .cpu_sample(&["c", "main"], 70)
        // t1 and t2 both grow by 5, in flat and in cum: the name decides.
        .cpu_sample(&["t1", "x", "main"], 15)
        .cpu_sample(&["t2", "main"], 15)
        .window(1.0, 1);
    let r = run(before, after);
    let order: Vec<&str> = r.rows.iter().map(|r| r.function.as_str()).collect();
    // By the larger of the flat and cum changes: main's cum grew by 10; t1, t2 and x all
    // changed by 5, the flat change first (t1, t2), then x (cum only); a not at all.
    assert_eq!(order, ["c", "b", "gone", "main", "t1", "t2", "x", "a"]);
    let c = r.row("c").expect("c");
    assert_eq!((c.flat_before, c.flat_after), (0.0, 70.0));
    assert_eq!(c.flat_change_pct, None);
    let gone = r.row("gone").expect("gone");
    assert_eq!(gone.flat_after, 0.0);
    assert_eq!(gone.flat_change_pct, Some(-100.0));
    assert_eq!(r.row("b").and_then(|r| r.flat_change_pct), Some(-80.0));
    assert!(r.row("nothing").is_none());
}

#[test]
fn impact_is_the_larger_of_flat_and_cum_change() {
    let before = cpu()
        .cpu_sample(&["p", "main"], 10)
        .cpu_sample(&["q", "main"], 10)
        .window(1.0, 1);
    // Both leaves grow by 5; q also gains 20 of cum as a caller, main 30 as everyone's.
    let after = cpu()
        .cpu_sample(&["p", "main"], 15)
        .cpu_sample(&["q", "main"], 15)
        .cpu_sample(&["z", "q", "main"], 20)
        .window(1.0, 1);
    let r = run(before, after);
    let order: Vec<&str> = r.rows.iter().map(|r| r.function.as_str()).collect();
    assert_eq!(order, ["main", "q", "z", "p"]);
}

#[test]
fn sample_type_selection() {
    let heap = [
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ];
    let profile = |default: Option<&str>| {
        let mut p = B::new(&heap).sample(&["a", "main"], &[1, 2, 3, 4]).build();
        if let Some(d) = default {
            p.default_sample_type = match p.string_table.iter().position(|s| s == d) {
                Some(i) => i as i64,
                None => {
                    p.string_table.push(d.to_owned());
                    p.string_table.len() as i64 - 1
                }
            };
        }
        p
    };
    let want = |t: &str, u: &str| Some((t.to_string(), u.to_string()));
    // (what, default_sample_type, requested, expected type, expected flat of a)
    let cases = [
        ("last by default", None, None, "inuse_space", 4.0),
        (
            "default_sample_type",
            Some("alloc_space"),
            None,
            "alloc_space",
            2.0,
        ),
        (
            "unknown default falls back to last",
            Some("nope"),
            None,
            "inuse_space",
            4.0,
        ),
        (
            "requested",
            None,
            want("alloc_objects", "count"),
            "alloc_objects",
            1.0,
        ),
        (
            "requested beats default",
            Some("alloc_space"),
            want("inuse_objects", "count"),
            "inuse_objects",
            3.0,
        ),
        (
            "empty unit matches any",
            None,
            want("alloc_space", ""),
            "alloc_space",
            2.0,
        ),
    ];
    for (what, default, sample_type, ty, flat) in cases {
        let opts = Options {
            sample_type,
            top: 10,
        };
        let r = diff(
            &window(profile(default), 1.0, 1),
            &window(profile(default), 1.0, 1),
            &opts,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(r.sample_type, ty, "{what}");
        assert_eq!(r.row("a").map(|r| r.flat_after), Some(flat), "{what}");
    }
}

#[test]
fn sample_type_errors() {
    let cpu = || cpu().cpu_sample(&["a"], 1).window(1.0, 1);
    let heap = || {
        B::new(&[("alloc_space", "bytes"), ("inuse_space", "bytes")])
            .sample(&["a"], &[1, 2])
            .window(1.0, 1)
    };
    let missing = Options {
        sample_type: Some(("alloc_space".into(), "bytes".into())),
        top: 10,
    };
    let err = diff(&cpu(), &heap(), &missing).expect_err("missing before");
    assert!(matches!(
        err,
        DiffError::SampleTypeMissing {
            side: Side::Before,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "before profile has no sample type alloc_space/bytes (it has: samples/count, cpu/nanoseconds)"
    );
    let err = diff(&heap(), &cpu(), &missing).expect_err("missing after");
    assert!(matches!(
        err,
        DiffError::SampleTypeMissing {
            side: Side::After,
            ..
        }
    ));

    let err = diff(&cpu(), &heap(), &Options::default()).expect_err("mismatch");
    assert!(matches!(err, DiffError::SampleTypeMismatch { .. }));
    assert!(
        err.to_string()
            .contains("before is cpu/nanoseconds, after is inuse_space/bytes"),
        "{err}"
    );
    let wrong_unit = Options {
        sample_type: Some(("cpu".into(), "bytes".into())),
        top: 10,
    };
    assert!(diff(&cpu(), &cpu(), &wrong_unit).is_err());

    let empty = B::new(&[]).window(1.0, 1);
    let err = diff(&empty, &cpu(), &Options::default()).expect_err("no types");
    assert!(matches!(
        err,
        DiffError::NoSampleTypes { side: Side::Before }
    ));
}

#[test]
fn invalid_windows_and_malformed_profiles() {
    let ok = || cpu().cpu_sample(&["a"], 1).window(1.0, 1);
    for (seconds, instances) in [
        (0.0, 1),
        (-1.0, 1),
        (f64::NAN, 1),
        (f64::INFINITY, 1),
        (1.0, 0),
    ] {
        let bad = cpu().cpu_sample(&["a"], 1).window(seconds, instances);
        let err = diff(&ok(), &bad, &Options::default()).expect_err("invalid");
        assert!(
            matches!(
                err,
                DiffError::InvalidWindow {
                    side: Side::After,
                    ..
                }
            ),
            "{seconds} {instances}: {err}"
        );
    }
    let mut missing_location = cpu().cpu_sample(&["a"], 1).build();
    missing_location.sample[0].location_id.push(999);
    let err = diff(
        &window(missing_location, 1.0, 1),
        &ok(),
        &Options::default(),
    )
    .expect_err("missing location");
    assert!(err.to_string().contains("missing location 999"), "{err}");

    let mut short = cpu().cpu_sample(&["a"], 1).build();
    short.sample[0].value.truncate(1);
    assert!(matches!(
        diff(&ok(), &window(short, 1.0, 1), &Options::default()),
        Err(DiffError::Malformed {
            side: Side::After,
            ..
        })
    ));

    let mut missing_function = cpu().cpu_sample(&["a"], 1).build();
    // The builder numbers functions 1, 4, 7…: there is no function 5.
    missing_function.location[0].line[0].function_id = 5;
    assert!(matches!(
        diff(
            &window(missing_function, 1.0, 1),
            &ok(),
            &Options::default()
        ),
        Err(DiffError::Malformed {
            side: Side::Before,
            ..
        })
    ));
}

#[test]
fn unsymbolised_and_empty_stacks() {
    let mut p = cpu()
        .cpu_sample(&["a", "main"], 5)
        .cpu_sample(&[], 7)
        .build();
    p.location.push(Location {
        id: 50,
        address: 0xbeef,
        ..Location::default()
    });
    p.sample.push(Sample {
        location_id: vec![50],
        value: vec![1, 3],
        label: vec![],
    });
    let r = run(cpu().window(1.0, 1), window(p, 1.0, 1));
    assert_eq!(r.row("0xbeef").map(|r| r.flat_after), Some(3.0));
    assert_eq!(r.after.total, 15.0);
    let root = &r.tree.nodes[0];
    assert_eq!(
        (root.name.as_str(), root.after, root.self_after),
        ("total", 15.0, 7.0)
    );
}

#[test]
fn merged_tree() {
    let before = cpu()
        .cpu_sample(&["b", "main"], 10)
        .cpu_sample(&["a", "main"], 30)
        .window(1.0, 1);
    let after = cpu()
        .cpu_sample(&["a", "main"], 10)
        .cpu_sample(&["c", "b", "main"], 20)
        .cpu_sample(&["a", "a", "main"], 5)
        .window(1.0, 1);
    let r = run(before, after);
    let got: Vec<(String, usize, f64, f64, f64, f64)> = r
        .tree
        .nodes
        .iter()
        .map(|n| {
            (
                n.name.clone(),
                n.depth,
                n.before,
                n.after,
                n.self_before,
                n.self_after,
            )
        })
        .collect();
    let want = [
        ("total", 0, 40.0, 35.0, 0.0, 0.0),
        ("main", 1, 40.0, 35.0, 0.0, 0.0),
        ("a", 2, 30.0, 15.0, 30.0, 10.0),
        ("a", 3, 0.0, 5.0, 0.0, 5.0),
        ("b", 2, 10.0, 20.0, 10.0, 0.0),
        ("c", 3, 0.0, 20.0, 0.0, 20.0),
    ];
    let want: Vec<(String, usize, f64, f64, f64, f64)> = want
        .iter()
        .map(|&(n, d, b, a, sb, sa)| (n.to_string(), d, b, a, sb, sa))
        .collect();
    assert_eq!(got, want);
    let nodes = &r.tree.nodes;
    assert_eq!(nodes[1].children, [2, 4]);
    assert_eq!(nodes[5].parent, Some(4));
    // Colour: a's total halved, b's doubled, c is new, main shrank by 12.5 %.
    let change: Vec<f64> = nodes.iter().map(Node::change).collect();
    assert_eq!(change, [-0.125, -0.125, -0.5, 1.0, 1.0, 1.0]);
}

#[test]
fn change_intensity() {
    let cases = [
        (0.0, 0.0, 0.0),
        (0.0, 5.0, 1.0),
        (5.0, 0.0, -1.0),
        (100.0, 100.5, 0.0),
        (100.0, 99.5, 0.0),
        (100.0, 102.0, 0.02),
        (100.0, 150.0, 0.5),
        (100.0, 1000.0, 1.0),
        (100.0, 25.0, -0.75),
    ];
    for (before, after, want) in cases {
        let got = model::change_intensity(before, after);
        assert!((got - want).abs() < 1e-12, "{before} → {after}: {got}");
    }
}

#[test]
fn humanised_units() {
    let cases = [
        (0.0, "nanoseconds", "0s"),
        (12_300_000.0, "nanoseconds", "12.3ms"),
        (999.0, "nanoseconds", "999ns"),
        (999.7, "nanoseconds", "1.00µs"),
        (1.5e9, "nanoseconds", "1.50s"),
        (2500.0, "microseconds", "2.50ms"),
        (512.0, "bytes", "512B"),
        (1.2 * 1024.0 * 1024.0, "bytes", "1.20MiB"),
        (3.0 * 1024.0 * 1024.0 * 1024.0, "bytes", "3.00GiB"),
        (1234.0, "count", "1.23k"),
        (0.0123, "count", "0.0123"),
        (42.0, "goroutines", "42.0 goroutines"),
        (-2048.0, "bytes", "-2.00KiB"),
    ];
    for (v, unit, want) in cases {
        assert_eq!(format_value(v, unit), want, "{v} {unit}");
    }
    assert_eq!(format_rate(12_300_000.0, "nanoseconds"), "12.3ms/s");
    assert_eq!(format_change(Some(12.34), 1.0), "+12.3%");
    assert_eq!(format_change(Some(-100.0), 0.0), "-100.0%");
    assert_eq!(format_change(None, 3.0), "new");
    assert_eq!(format_change(None, 0.0), "");
}

#[test]
fn snapshots_are_averaged_not_divided_by_seconds() {
    // Four heap profiles per window from two instances (two each), over 30 minutes: inuse is
    // the average snapshot per instance, alloc the rate per second per instance.
    let heap = [("alloc_space", "bytes"), ("inuse_space", "bytes")];
    let merged = |inuse: i64| {
        B::new(&heap)
            .sample(&["a", "main"], &[3600 * 1024, inuse])
            .build()
    };
    let w = |p: Profile| Window {
        profile: p,
        seconds: 1800.0,
        instances: 2,
        profiles: 4,
        label: "w".into(),
    };
    let inuse = Options {
        sample_type: Some(("inuse_space".into(), "bytes".into())),
        top: 10,
    };
    let r = diff(&w(merged(4 << 20)), &w(merged(8 << 20)), &inuse).expect("diff");
    assert_eq!(r.measure, Measure::Average);
    // 4 MiB summed over 4 snapshots: 1 MiB on average, not 4 MiB / 3600 instance-seconds.
    assert_eq!(r.before.normalised, f64::from(1 << 20));
    assert_eq!(r.row("a").map(|r| r.flat_after), Some(f64::from(2 << 20)));
    let table = r.render_table(10, 120);
    assert!(
        table.starts_with("inuse_space/bytes, average per instance\n"),
        "{table}"
    );
    assert!(table.contains("average 1.00MiB"), "{table}");
    assert!(!table.contains("/s"), "{table}");
    let html = r.render_html("t");
    assert!(html.contains("\"perSecond\":false"));
    assert!(!html.contains("B/s<"), "no rates in the page");
    assert!(!r.render_svg("t").contains("B/s"));

    let alloc = Options {
        sample_type: Some(("alloc_space".into(), "bytes".into())),
        top: 10,
    };
    let r = diff(&w(merged(1)), &w(merged(1)), &alloc).expect("diff");
    assert_eq!(r.measure, Measure::PerSecond);
    assert_eq!(r.before.normalised, 1024.0);
    assert!(r.render_table(10, 120).contains("1.00KiB/s"));

    // Goroutines are snapshots too; without a profile count (a remote source) they are summed
    // per instance and said to be.
    let g = B::new(&[("goroutine", "count")])
        .sample(&["a"], &[40])
        .build();
    let mut unknown = w(g.clone());
    unknown.profiles = 0;
    let r = diff(&unknown, &unknown, &Options::default()).expect("diff");
    assert_eq!(r.measure, Measure::SumPerInstance);
    assert_eq!(r.before.normalised, 20.0);
    let r = diff(&w(g.clone()), &w(g), &Options::default()).expect("diff");
    assert_eq!(r.measure, Measure::Average);
    assert_eq!(r.before.normalised, 10.0);
}

#[test]
fn spans_read_as_durations() {
    for (secs, want) in [
        (0.0, "0s"),
        (2.5, "2.5s"),
        (9.0, "9s"),
        (59.8, "1m"),
        (1800.0, "30m"),
        (1799.6, "30m"),
        (3723.0, "1h2m3s"),
        (7200.0, "2h"),
    ] {
        assert_eq!(format_span(secs), want, "{secs}");
    }
}

/// A leaf function (self value = total value in every part) is one test in the Bonferroni
/// family, not two: its p-values are multiplied by the family size, so the same data in a
/// report where the leaf gains a measured callee shows the family grow from 3 to 5.
#[test]
fn a_leaf_is_one_test_in_the_family() {
    let ms = 1_000_000;
    let report = |alpha_child: i64| {
        let part = |alpha: i64, beta: i64| {
            let mut b = cpu()
                .cpu_sample(&["main.alpha", "main.main"], alpha)
                .cpu_sample(&["main.beta", "main.main"], beta);
            if alpha_child > 0 {
                b = b.cpu_sample(&["main.child", "main.alpha", "main.main"], alpha_child * ms);
            }
            b.window(1.0, 1)
        };
        let side = |values: &[(i64, i64)]| -> Vec<Window> {
            values.iter().map(|&(a, b)| part(a * ms, b * ms)).collect()
        };
        let before = side(&[(100, 50), (104, 52), (98, 49), (101, 51), (97, 48)]);
        // beta +2 ms/s in every part: a p-value well inside (0, 1) after the correction.
        let after = side(&[(200, 52), (205, 54), (196, 51), (202, 53), (199, 50)]);
        diff_parts(before, after)
    };
    let beta_p = |r: &Report| {
        r.row("main.beta")
            .and_then(|row| row.cum_stats.as_ref())
            .map(|c| c.p_value)
            .expect("beta tested")
    };
    // Leaves alpha and beta (one test each) and main.main (no self value: one test): 3.
    let leaves = beta_p(&report(0));
    // alpha gains a callee: its self and total values differ (two tests), and main.child is
    // a leaf (one test): 5. Were leaves counted twice, it would be 5 then 7.
    let with_callee = beta_p(&report(5));
    assert!(
        with_callee < 1.0,
        "{with_callee}: the correction is not capped"
    );
    assert!(
        (with_callee / leaves - 5.0 / 3.0).abs() < 1e-9,
        "{leaves} → {with_callee}"
    );
}
