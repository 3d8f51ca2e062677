//! The renderings: the terminal table, the HTML report and the SVG, with and without
//! statistics.

use super::*;

fn sample_report() -> Report {
    let mut before = cpu()
        .cpu_sample(&["main.alpha", "main.main"], 600_000_000)
        .cpu_sample(&["main.beta", "main.main"], 60_000_000)
        .window(60.0, 1);
    before.label = "before: 12:00..12:01".into();
    let mut after = cpu()
        .cpu_sample(&["main.alpha", "main.main"], 120_000_000)
        .cpu_sample(&["main.beta", "main.main"], 360_000_000)
        .cpu_sample(
            &[
                "github.com/example/service/internal/handlers.(*Server).ServeHTTP",
                "main.main",
            ],
            6_000_000,
        )
        .window(60.0, 2);
    after.label = "after: 13:00..13:01".into();
    diff(&before, &after, &Options::default()).expect("diff")
}

#[test]
fn table_rendering() {
    let r = sample_report();
    let text = r.render_table(10, 120);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "cpu/nanoseconds, per second per instance");
    assert_eq!(
        lines[1],
        "before: 12:00..12:01  1m × 1 instance, 1 profile  total 660ms = 11.0ms/s  (2 samples)"
    );
    assert_eq!(
        lines[2],
        "after: 13:00..13:01   1m × 2 instances, 2 profiles  total 486ms = 4.05ms/s  (3 samples)"
    );
    assert_eq!(lines[3], "");
    let header = lines[4];
    assert!(
        header.starts_with("FLAT BEFORE  FLAT AFTER  FLAT CHANGE"),
        "{header}"
    );
    assert!(header.ends_with("CUM CHANGE  FUNCTION"), "{header}");
    // alpha: 10ms/s → 1ms/s; beta: 1ms/s → 3ms/s; ServeHTTP new at 50µs/s.
    let alpha = lines[5];
    assert!(alpha.ends_with("  main.alpha"), "{alpha}");
    let cols: Vec<&str> = alpha.split_whitespace().collect();
    assert_eq!(cols[..3], ["10.0ms/s", "1.00ms/s", "-90.0%"]);
    // main's cum fell by 6.95ms/s, more than beta's rise of 2ms/s.
    assert!(lines[6].ends_with("  main.main"), "{}", lines[6]);
    assert!(lines[7].ends_with("  main.beta"), "{}", lines[7]);
    assert!(lines[7].contains("+200.0%"), "{}", lines[7]);
    let serve = lines
        .iter()
        .find(|l| l.contains("ServeHTTP"))
        .expect("ServeHTTP row");
    assert!(serve.contains("new"), "{serve}");
    assert!(serve.contains("50.0µs/s"), "{serve}");
    // Columns line up: every row's function starts where the header's FUNCTION does.
    let at = header.find("FUNCTION").expect("FUNCTION");
    for l in &lines[5..] {
        let prefix: String = l.chars().take(at).collect();
        assert!(prefix.ends_with("  "), "{l:?}");
        assert!(l.chars().nth(at).is_some_and(|c| c != ' '), "{l:?}");
    }
    assert!(lines.iter().all(|l| l.chars().count() <= 120), "{text}");

    // Narrow: long names lose their start, keeping the method; top limits the rows.
    let narrow = r.render_table(4, 100);
    let serve = narrow
        .lines()
        .find(|l| l.contains("ServeHTTP"))
        .expect("row");
    assert!(serve.contains("…"), "{serve}");
    assert!(serve.ends_with("(*Server).ServeHTTP"), "{serve}");
    assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
    let one = r.render_table(1, 120);
    assert!(
        one.contains("main.alpha") && !one.contains("main.beta"),
        "{one}"
    );
    assert!(
        one.trim_end().ends_with("(1 of 4 functions shown)"),
        "{one}"
    );
    assert_eq!(r.render_table(0, 120).lines().count(), 5 + 4);
}

#[test]
fn html_is_self_contained() {
    let mut r = sample_report();
    r.rows[0].function = "</script><img src=x onerror=alert(1)>".into();
    r.tree.nodes[2].name = "</script><b>x</b>".into();
    let html = r.render_html("cpu <before> & after");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "external URL"
    );
    assert!(
        !html.contains("src=\"") && !html.contains("href="),
        "external resource"
    );
    assert!(html.contains("<title>cpu &lt;before&gt; &amp; after</title>"));
    assert!(html.contains("<canvas id=\"flame-canvas\""));
    assert!(html.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!html.contains("<img"));
    // Only the page's own script elements close.
    assert_eq!(html.matches("</script>").count(), 3);
    assert!(html.contains("\\u003c/script>\\u003cb>x\\u003c/b>"));
    assert!(html.contains("before: 12:00..12:01") && html.contains("after: 13:00..13:01"));
    assert!(
        html.contains("<td class=\"n\">1m</td><td class=\"n\">2</td><td class=\"n\">2</td>"),
        "instances"
    );
    assert!(html.contains("main.beta"));

    // The embedded data is valid JSON with one entry per node.
    let start = html.find("type=\"application/json\">").expect("data") + 24;
    let len = html[start..].find("</script>").expect("end");
    let data: serde_json::Value = serde_json::from_str(&html[start..start + len]).expect("json");
    assert_eq!(data["unit"], "nanoseconds");
    assert_eq!(
        data["nodes"]["depth"].as_array().map(Vec::len),
        Some(r.tree.nodes.len())
    );
}

#[test]
fn svg_rendering() {
    let r = sample_report();
    let svg = r.render_svg("cpu & more");
    assert!(svg.starts_with("<?xml"));
    assert!(svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<title>cpu &amp; more</title>"));
    // total, main.main, alpha, beta, ServeHTTP.
    assert_eq!(svg.matches("<rect x=").count(), 5);
    let frame = |name: &str| {
        svg.lines()
            .find(|l| l.starts_with(&format!("<g><title>{name}&#10;")))
            .unwrap_or_else(|| panic!("no frame {name}"))
            .to_string()
    };
    assert!(frame("main.alpha").contains(&format!("fill=\"{}\"", svg::colour(-0.9))));
    assert!(frame("main.beta").contains(&format!("fill=\"{}\"", svg::colour(1.0))));
    assert!(frame("main.alpha").contains("total: 10.0ms/s → 1.00ms/s (-90.0%)"));
    assert_eq!(svg::colour(0.0), "#cccccc");
    assert_eq!(svg::colour(1.0), "#ec1313");
    assert_eq!(svg::colour(-1.0), "#135bec");
    // Empty reports still render.
    let empty = run(cpu().window(1.0, 1), cpu().window(1.0, 1));
    assert!(empty.render_svg("x").ends_with("</svg>\n"));
    assert!(empty.render_table(5, 80).contains("FUNCTION"));
    assert!(empty.render_html("x").contains("<canvas"));
}

#[test]
fn html_leaves_out_invisible_frames() {
    let before = cpu()
        .cpu_sample(&["big", "main"], 10_000_000)
        .cpu_sample(&["tiny_leaf", "tiny", "main"], 1)
        .cpu_sample(&["after_tiny", "main"], 5_000_000)
        .window(1.0, 1);
    let r = run(before, cpu().window(1.0, 1));
    assert_eq!(r.tree.nodes.len(), 6);
    let html = r.render_html("x");
    let start = html.find("type=\"application/json\">").expect("data") + 24;
    let len = html[start..].find("</script>").expect("end");
    let data: serde_json::Value = serde_json::from_str(&html[start..start + len]).expect("json");
    let names: Vec<&str> = data["nodes"]["name"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(|i| data["names"][i.as_u64().expect("index") as usize].as_str())
        .collect();
    assert_eq!(names, ["total", "main", "after_tiny", "big"]);
    assert!(html.contains("tiny_leaf"), "the table still lists it");
}

/// Windows of five 1 s parts: alpha doubles, beta stays, gamma is below the 1 % floor.
fn report_with_parts() -> Report {
    let part = |alpha: i64, beta: i64| {
        cpu()
            .cpu_sample(&["main.alpha", "main.main"], alpha)
            .cpu_sample(&["main.beta", "main.main"], beta)
            .cpu_sample(&["main.gamma", "main.main"], 1_000_000)
            .window(1.0, 1)
    };
    let before: Vec<Window> = [(100, 50), (104, 52), (98, 49), (101, 51), (97, 48)]
        .iter()
        .map(|&(a, b)| part(a * 1_000_000, b * 1_000_000))
        .collect();
    let after: Vec<Window> = [(200, 50), (205, 48), (196, 52), (202, 49), (199, 51)]
        .iter()
        .map(|&(a, b)| part(a * 1_000_000, b * 1_000_000))
        .collect();
    diff_parts(before, after)
}

#[test]
fn statistics_give_verdicts_in_every_rendering() {
    let r = report_with_parts();
    let verdict = |f: &str| {
        r.row(f)
            .and_then(|row| row.cum_stats.as_ref())
            .map(|c| c.verdict)
    };
    assert_eq!(verdict("main.alpha"), Some(Verdict::Increase));
    assert_eq!(verdict("main.beta"), Some(Verdict::NoChange));
    assert_eq!(verdict("main.gamma"), Some(Verdict::BelowNoiseFloor));
    let alpha = r
        .row("main.alpha")
        .and_then(|row| row.cum_stats.clone())
        .expect("stats");
    // +100 % (100 → 200 ms/s), its interval around it and above 0.
    let pct = alpha.pct.expect("pct");
    let (lo, hi) = alpha.pct_interval.expect("interval");
    assert!((pct - 100.0).abs() < 1.0 && lo > 80.0 && hi < 120.0 && lo < pct && pct < hi);
    assert!(alpha.p_value < 0.001, "{alpha:?}");
    let st = r.statistics.clone().expect("statistics");
    assert_eq!((st.before_parts, st.after_parts), (5, 5));
    assert_eq!(st.method, "welch-bonferroni");
    // alpha, beta and main.main; gamma (0.6 % of the total) is below the floor.
    assert_eq!(st.tested, 3);
    assert_eq!(
        r.total_stats.as_ref().map(|c| c.verdict),
        Some(Verdict::Increase)
    );

    let table = r.render_table(0, 160);
    assert!(table.contains("VERDICT"), "{table}");
    assert!(table.contains("total: ▲ up +66."), "{table}");
    let line = |f: &str| {
        table
            .lines()
            .find(|l| l.ends_with(f))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("main.alpha").contains("▲ up +100."), "{table}");
    assert!(line("main.beta").contains("= same"), "{table}");
    assert!(line("main.gamma").contains("· below floor"), "{table}");

    let html = r.render_html("t");
    assert!(html.contains("<th title=") && html.contains(">verdict</th>"));
    assert!(html.contains("class=\"v up\"") && html.contains("\"verdicts\":["));
    assert!(html.contains("pale: not a significant change"));
    let svg = r.render_svg("t");
    assert!(svg.contains("pale: not a significant change"));
    assert!(svg.contains("verdict: ▲ up +100."), "{svg}");

    // Frames of functions without a significant change are pale: beta kept its hue (it
    // changed by a few per cent at most) at the faded strength.
    let sig = super::stats::Significance::of(&r);
    let node = |f: &str| r.tree.nodes.iter().find(|n| n.name == f).expect("node");
    assert_eq!(
        sig.intensity(node("main.alpha")),
        node("main.alpha").change()
    );
    let beta = node("main.beta");
    assert_eq!(sig.intensity(beta), beta.change() * super::stats::FADED);

    // Without parts: no statistics, and the table keeps its old columns.
    let plain = sample_report();
    assert!(plain.statistics.is_none() && plain.total_stats.is_none());
    assert!(!plain.render_table(0, 120).contains("VERDICT"));
    assert!(!plain.render_html("t").contains(">verdict</th>"));
}
