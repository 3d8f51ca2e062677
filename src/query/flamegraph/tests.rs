use super::*;

fn tree(stacks: &[(&[&str], i64)]) -> NameTree {
    let mut t = NameTree::new();
    for (s, v) in stacks {
        t.insert(s, *v);
    }
    t
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

#[test]
fn single_flame_graphs_match_pyroscopes_layout() {
    // (case, stacks, max_nodes, names, levels, max_self), worked out by hand from upstream's
    // algorithm: depth first, last child first, x delta-encoded per level.
    type Case<'a> = (
        &'a str,
        Vec<(&'a [&'a str], i64)>,
        i64,
        Vec<&'a str>,
        Vec<Vec<i64>>,
        i64,
    );
    let shape = vec![(&["a", "b"][..], 5), (&["a", "c"][..], 3), (&["d"][..], 1)];
    let cases: Vec<Case> = vec![
        (
            "every node",
            shape.clone(),
            0,
            vec!["total", "d", "a", "c", "b"],
            vec![
                vec![0, 9, 0, 0],
                vec![0, 8, 0, 2, 0, 1, 1, 1],
                vec![0, 5, 5, 4, 0, 3, 3, 3],
            ],
            5,
        ),
        (
            "two nodes: the rest folded into other",
            shape.clone(),
            2,
            vec!["total", "other", "a", "b"],
            vec![
                vec![0, 9, 0, 0],
                vec![0, 8, 0, 2, 0, 1, 1, 1],
                vec![0, 5, 5, 3, 0, 3, 3, 1],
            ],
            5,
        ),
        (
            "a node's own value comes before its children",
            vec![(&["a"][..], 2), (&["a", "b"][..], 3)],
            0,
            vec!["total", "a", "b"],
            vec![vec![0, 5, 0, 0], vec![0, 5, 2, 1], vec![2, 3, 3, 2]],
            3,
        ),
        (
            "a real function named other is folded",
            vec![(&["other", "x"][..], 2), (&["y"][..], 1)],
            0,
            vec!["total", "other", "y"],
            vec![vec![0, 3, 0, 0], vec![0, 1, 1, 2, 0, 2, 2, 1]],
            2,
        ),
        ("empty", vec![], 0, vec!["total"], vec![vec![0, 0, 0, 0]], 0),
    ];
    for (name, stacks, max_nodes, names, levels, max_self) in cases {
        let fg = flame_graph(&mut tree(&stacks), max_nodes);
        assert_eq!(fg.names, strings(&names), "{name}: names");
        assert_eq!(fg.levels, levels, "{name}: levels");
        assert_eq!(fg.max_self, max_self, "{name}: max_self");
        assert_eq!(
            fg.total,
            stacks.iter().map(|s| s.1).sum::<i64>(),
            "{name}: total"
        );
    }
}

/// Deterministic pseudo-random stacks over a small vocabulary, so that prefixes are shared.
fn random_tree(seed: u64, samples: usize) -> NameTree {
    let mut state = seed | 1;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut t = NameTree::new();
    for _ in 0..samples {
        let depth = 1 + next(12) as usize;
        let names: Vec<String> = (0..depth).map(|_| format!("f{}", next(6))).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        t.insert(&refs, 1 + next(100) as i64);
    }
    t
}

fn sorted(mut s: Vec<(Vec<String>, i64)>) -> Vec<(Vec<String>, i64)> {
    s.sort();
    s
}

#[test]
fn the_encoding_decodes_back_to_the_same_stacks() {
    for seed in 1..20u64 {
        let mut t = random_tree(seed, 300);
        let fg = flame_graph(&mut t, 0);
        let decoded = fg.stacks().expect("decodes");
        assert_eq!(sorted(decoded), sorted(t.stacks()), "seed {seed}");
        // Truncated: fewer nodes, the same total, every value still accounted for.
        for max_nodes in [1, 5, 50] {
            let cut = flame_graph(&mut t, max_nodes);
            let nodes: usize = cut.levels.iter().skip(1).map(|l| l.len() / 4).sum();
            // Each kept node may gain one "other" child.
            assert!(
                nodes <= 2 * max_nodes as usize + 1,
                "seed {seed}: {nodes} nodes"
            );
            assert_eq!(cut.total, t.total());
            let sum: i64 = cut.stacks().expect("decodes").iter().map(|s| s.1).sum();
            assert_eq!(sum, t.total(), "seed {seed} max_nodes {max_nodes}");
        }
    }
}

#[test]
fn diffs_match_pyroscopes_layout() {
    let mut left = tree(&[(&["a", "b"], 5)]);
    let mut right = tree(&[(&["a"], 2), (&["c"], 1)]);
    let d = flame_graph_diff(&mut left, &mut right, 0);
    assert_eq!(d.names, strings(&["total", "c", "a", "b"]));
    assert_eq!(
        d.levels,
        vec![
            vec![0, 5, 0, 0, 3, 0, 0],
            vec![0, 5, 0, 0, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1],
            vec![0, 5, 5, 2, 0, 0, 3],
        ]
    );
    assert_eq!(
        (d.total, d.max_self, d.left_ticks, d.right_ticks),
        (8, 5, 5, 3)
    );

    // One node allowed: a node stays when either side reaches the largest total (5), so `a`
    // and `b` stay (left 5) and `c` (right 1) is folded into "other".
    let d = flame_graph_diff(&mut left, &mut right, 1);
    assert_eq!(d.names, strings(&["total", "other", "a", "b"]));
    assert_eq!(
        d.levels,
        vec![
            vec![0, 5, 0, 0, 3, 0, 0],
            vec![0, 5, 0, 0, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1],
            vec![0, 5, 5, 2, 0, 0, 3],
        ]
    );
}

#[test]
fn diff_sides_decode_to_each_tree() {
    for seed in 1..10u64 {
        let mut left = random_tree(seed, 200);
        let mut right = random_tree(seed + 100, 150);
        let d = flame_graph_diff(&mut left, &mut right, 0);
        let l = decode_stacks(&d.names, &d.levels, 7, 0, 2).expect("left decodes");
        let r = decode_stacks(&d.names, &d.levels, 7, 3, 5).expect("right decodes");
        assert_eq!(sorted(l), sorted(left.stacks()), "seed {seed} left");
        assert_eq!(sorted(r), sorted(right.stacks()), "seed {seed} right");
        assert_eq!(d.left_ticks + d.right_ticks, d.total);
    }
}

#[test]
fn max_nodes_defaults_and_ceiling() {
    for (given, want) in [
        (None, Ok(8192)),
        (Some(0), Ok(8192)),
        (Some(10), Ok(10)),
        (Some(1_048_576), Ok(1_048_576)),
        // Refused as Pyroscope refuses it, not silently capped.
        (
            Some(5_000_000),
            Err("max flamegraph nodes limit 5000000 is greater than allowed 1048576".to_string()),
        ),
        (
            Some(-1),
            Err("max flamegraph nodes limit must be set (max allowed 1048576)".to_string()),
        ),
    ] {
        assert_eq!(effective_max_nodes(given), want, "{given:?}");
    }
}

#[test]
fn values_near_i64_max_saturate_instead_of_overflowing() {
    let big = i64::MAX - 1;
    let mut t = tree(&[(&["a", "b"], big), (&["a", "c"], big), (&["d"], big)]);
    assert_eq!(t.total(), i64::MAX);
    let fg = flame_graph(&mut t, 0);
    assert_eq!(fg.total, i64::MAX);
    let mut other = tree(&[(&["a"], big)]);
    t.merge(&other);
    assert_eq!(t.total(), i64::MAX);
    let fg = flame_graph(&mut t, 1);
    assert_eq!(fg.total, i64::MAX);
    let d = flame_graph_diff(&mut t, &mut other, 1);
    assert_eq!(d.total, i64::MAX);
    let d = flame_graph_diff(&mut t, &mut other, 0);
    assert_eq!(d.left_ticks, i64::MAX);
    // Saturated geometry may not decode, but reading it must not panic.
    let _ = decode_stacks(&d.names, &d.levels, 7, 0, 2);
}

#[test]
fn malformed_levels_are_errors() {
    let names = strings(&["total", "a"]);
    assert!(decode_stacks(&names, &[vec![0, 1, 0]], 4, 0, 2).is_err());
    assert!(decode_stacks(&names, &[vec![0, 1, 0, 0], vec![0, 1, 1, 7]], 4, 0, 2).is_err());
    assert!(decode_stacks(&names, &[vec![0, 1, 0, 0], vec![5, 1, 1, 1]], 4, 0, 2).is_err());
}

#[test]
fn sums_past_i64_max_saturate_instead_of_overflowing() {
    // Sample values are outside input: two of i64::MAX overflowed the tree's sums (insert,
    // finish, merge) and the flame graph's x positions, a panic in debug builds and a negative
    // total in release. They now saturate.
    let big = i64::MAX;
    let mut t = tree(&[(&["a", "b"], big), (&["a", "c"], big), (&["d"], 1)]);
    for max_nodes in [0, 1, 2, 7] {
        let fg = flame_graph(&mut t, max_nodes);
        assert_eq!(fg.total, big, "max_nodes {max_nodes}");
        assert_eq!(fg.max_self, big, "max_nodes {max_nodes}");
        let _ = fg.stacks();
    }
    let mut right = tree(&[(&["a"], big)]);
    let d = flame_graph_diff(&mut t, &mut right, 0);
    assert_eq!((d.total, d.left_ticks, d.right_ticks), (big, big, big));
    let mut merged = t.clone();
    merged.merge(&right);
    merged.merge(&t);
    merged.finish();
    assert_eq!(merged.total(), big);
    assert!(merged.stacks().iter().all(|(_, v)| *v > 0));
}

#[test]
fn levels_whose_positions_overflow_are_errors() {
    let names = strings(&["total", "a"]);
    let levels = [vec![0, 1, 0, 0], vec![i64::MAX, 1, 1, 1, 0, 1, 1, 1]];
    assert!(decode_stacks(&names, &levels, 4, 0, 2).is_err());
    let levels = [vec![0, i64::MAX, 0, 0], vec![i64::MAX - 1, 5, 5, 1]];
    assert!(decode_stacks(&names, &levels, 4, 0, 2).is_err());
}
