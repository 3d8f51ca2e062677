//! `scraper::gocompat` against Go itself: `tests/go/gocompat` (built with Debian's Go) prints
//! `unicode.IsPrint` for every code point and quotes and escapes the strings we send it with
//! `strconv.Quote`, `strconv.QuoteToASCII`, `url.QueryEscape` and `url.QueryUnescape`; ours must
//! give the same bytes; and Go's `time` (duration text both ways, RFC 3339 timestamps).
//!
//! Code points that this Go's Unicode tables leave unassigned are not compared: their
//! printability depends on the Unicode version (Go 1.19 has Unicode 13, our tables are newer).
//! Skips (printing why) without Go, unless `SCRAPER_REQUIRE_GO=1`.

mod scrape_support;
mod support;

use std::collections::HashMap;
use std::io::Write as _;
use std::process::{Command, Stdio};

use scrape_support::{build_go, have_go};
use scraper::gocompat;

/// Runs the oracle in `mode` with `input` on its standard input; its standard output.
fn ask_go(bin: &std::path::Path, mode: &str, input: String) -> String {
    let mut child = Command::new(bin)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run gocompat {mode}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    // Written from another thread: the oracle answers while it reads, and both pipes are finite.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("gocompat output");
    writer.join().expect("writer thread").expect("write inputs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Go's verdict per code point: (printable, assigned in its Unicode tables).
fn go_print_table(bin: &std::path::Path) -> Vec<(bool, bool)> {
    let out = Command::new(bin)
        .arg("print")
        .output()
        .expect("run gocompat print");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).expect("ASCII output");
    let table: Vec<(bool, bool)> = text
        .lines()
        .map(|l| (l.as_bytes()[0] == b'1', l.as_bytes()[1] == b'1'))
        .collect();
    assert_eq!(table.len(), 0x110000, "one line per code point");
    table
}

#[test]
fn is_print_agrees_with_go_on_every_assigned_code_point() {
    if !have_go() {
        return;
    }
    let go = build_go("gocompat");
    let table = go_print_table(&go.bin);
    let mut compared = 0;
    let mut differ = Vec::new();
    for (cp, &(printable, assigned)) in table.iter().enumerate() {
        let Some(c) = char::from_u32(cp as u32) else {
            continue;
        };
        if !assigned {
            continue;
        }
        compared += 1;
        if gocompat::is_print(c) != printable {
            differ.push(format!("U+{cp:04X} go={printable}"));
        }
    }
    assert!(compared > 100_000, "only {compared} code points compared");
    assert!(
        differ.is_empty(),
        "{} of {compared} code points differ: {:?}",
        differ.len(),
        &differ[..differ.len().min(40)]
    );
}

#[test]
fn quoting_and_query_escaping_match_go_byte_for_byte() {
    if !have_go() {
        return;
    }
    let go = build_go("gocompat");
    let table = go_print_table(&go.bin);
    // Every code point Go has assigned, 48 to a string, plus strings that exercise escapes.
    let assigned: Vec<char> = table
        .iter()
        .enumerate()
        .filter(|(_, (_, assigned))| *assigned)
        .filter_map(|(cp, _)| char::from_u32(cp as u32))
        .collect();
    let mut inputs: Vec<String> = assigned.chunks(48).map(|c| c.iter().collect()).collect();
    inputs.extend(
        [
            "",
            "plain",
            "a b+c&d=e/f?g#h",
            "quote\" back\\slash 'single'",
            "\u{7}\u{8}\u{c}\n\r\t\u{b}\u{0}\u{1f}\u{7f}",
            "%C3%A9+%20",
            "%zz",
            "%4",
            "%",
            "100%",
            "\u{a0}\u{ad}\u{200b}\u{2028}\u{feff}\u{fffd}",
        ]
        .map(String::from),
    );
    let lines: String = inputs
        .iter()
        .map(|s| serde_json::to_string(s).expect("json") + "\n")
        .collect();
    let text = ask_go(&go.bin, "quote", lines);
    let answers: Vec<HashMap<String, String>> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert_eq!(answers.len(), inputs.len());
    let mut differ = Vec::new();
    for (input, go) in inputs.iter().zip(&answers) {
        let unquery = match gocompat::query_unescape(input) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        };
        let ours = [
            ("quote", gocompat::quote(input)),
            ("ascii", gocompat::quote_ascii(input)),
            ("query", gocompat::query_escape(input)),
            ("unquery", unquery),
        ];
        for (what, value) in ours {
            if go.get(what) != Some(&value) {
                differ.push(format!(
                    "{what} of {input:?}:\n  go:   {:?}\n  ours: {value:?}",
                    go.get(what)
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} differences, first:\n{}",
        differ.len(),
        differ[..differ.len().min(10)].join("\n")
    );
}

/// A deterministic spread of float64s: random bit patterns (every exponent, denormals
/// included), round numbers, halfway cases, and the extremes.
fn floats() -> Vec<f64> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // xorshift64*: reproducible without a dependency.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut out: Vec<f64> = (0..4000)
        .map(|_| f64::from_bits(next()))
        .filter(|v| v.is_finite())
        .collect();
    out.extend((0..2000).map(|_| (next() % 2_000_001) as f64 / 1000.0 - 1000.0));
    out.extend([
        0.0,
        -0.0,
        1.0,
        0.5,
        0.125,
        2.5,
        1e21,
        1e-7,
        123456789.0,
        0.1,
        1.0 / 3.0,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
    ]);
    out
}

/// `strconv.FormatFloat` as `fmt` uses it for `%e %E %f %g %G %b %x %X`, with shortest and
/// fixed precisions: ours (`syntax::stdlib::go_format_float`, behind the stdlib's `format`)
/// against Go's own.
#[test]
fn float_formatting_matches_strconv() {
    if !have_go() {
        return;
    }
    let go = build_go("gocompat");
    let mut cases: Vec<(f64, char, Option<usize>)> = Vec::new();
    for v in floats() {
        // %F is fmt's alias of %f (strconv has no 'F').
        for verb in ['e', 'E', 'f', 'g', 'G', 'b', 'x', 'X'] {
            for prec in [None, Some(0), Some(1), Some(3), Some(6), Some(17)] {
                // %b takes no precision.
                if verb == 'b' && prec.is_some() {
                    continue;
                }
                cases.push((v, verb, prec));
            }
        }
    }
    let lines: String = cases
        .iter()
        .map(|(v, verb, prec)| {
            let p = prec.map_or(-1, |p| p as i64);
            format!("{:x} {verb} {p}\n", v.to_bits())
        })
        .collect();
    let text = ask_go(&go.bin, "float", lines);
    let answers: Vec<&str> = text.lines().collect();
    assert_eq!(answers.len(), cases.len());
    let mut differ = Vec::new();
    for ((v, verb, prec), go) in cases.iter().zip(&answers) {
        let ours = scraper::syntax::stdlib::go_format_float(*v, *verb, *prec);
        if ours != *go {
            differ.push(format!(
                "{v:e} ({:x}) %{verb} {prec:?}: go {go} ours {ours}",
                v.to_bits()
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ, first:\n{}",
        differ.len(),
        cases.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}

/// `time.Duration.String()`, `time.ParseDuration` (values and error messages) and RFC 3339
/// formatting: `gocompat::time` against Go's `time`.
#[test]
fn durations_and_timestamps_match_go_time() {
    if !have_go() {
        return;
    }
    let go = build_go("gocompat");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    };
    let mut nanos: Vec<i64> = vec![0, 1, 999, 1_000, 1_500, 999_999, 1_000_000, 1_000_000_000];
    nanos.extend([60_000_000_000, 3_600_000_000_000, i64::MAX]);
    for _ in 0..3000 {
        // Every magnitude: a random value shifted down by a random amount.
        let v = next();
        nanos.push((v >> (v % 63)) as i64 & i64::MAX);
    }
    let mut texts: Vec<String> = [
        "0",
        "1s",
        "1.5s",
        "-1.5s",
        "+2m",
        "1h2m3.004005006s",
        "500ms",
        "1us",
        "1\u{b5}s",
        "1\u{3bc}s",
        ".5s",
        "5.s",
        "1e3s",
        "",
        "s",
        "1",
        "1x",
        "-",
        "1h-2m",
        "9223372036854775807ns",
        "9223372036854775808ns",
        "2562047h47m16.854775807s",
        "2562048h",
        "0.000000001s",
        "0.0000000001s",
        "1.0000000001s",
        "3m3m",
        "\u{3b1}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    texts.extend(nanos.iter().take(500).map(|n| {
        scraper::gocompat::time::format_go_duration(std::time::Duration::from_nanos(*n as u64))
    }));
    // Timestamps from 1970 to well past 2100, at every precision.
    let stamps: Vec<i64> = (0..2000)
        .map(|_| (next() % 5_000_000_000_000_000_000) as i64)
        .chain([0, 1, 999_999_999, 1_000_000_000, 951_782_400_000_000_000])
        .collect();

    let mut lines = String::new();
    for n in &nanos {
        lines.push_str(&format!("S {n}\n"));
    }
    for t in &texts {
        lines.push_str(&format!("P {t}\n"));
    }
    for t in &stamps {
        lines.push_str(&format!("T {t}\nM {t}\n"));
    }
    let text = ask_go(&go.bin, "time", lines);
    let mut answers = text.lines();
    let mut differ = Vec::new();
    let mut check = |what: String, ours: String| {
        let go = answers.next().unwrap_or("<missing>").to_string();
        if go != ours {
            differ.push(format!("{what}: go {go:?} ours {ours:?}"));
        }
    };
    use scraper::gocompat::time as t;
    for n in &nanos {
        let ours = t::format_go_duration(std::time::Duration::from_nanos(*n as u64));
        check(format!("String({n})"), ours);
    }
    for s in &texts {
        let ours = match t::parse_go_duration_nanos(s) {
            Ok(n) => n.to_string(),
            Err(e) => format!("error: {e}"),
        };
        check(format!("ParseDuration({s:?})"), ours);
    }
    for n in &stamps {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(*n as u64);
        check(format!("RFC3339Nano({n})"), t::rfc3339_nanos(at));
        check(format!("millis({n})"), t::rfc3339_millis(at));
    }
    assert!(
        differ.is_empty(),
        "{} differences, first:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}
