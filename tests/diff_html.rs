//! The `scraper diff` HTML report in a real browser: headless Chromium loads the page offline,
//! and the test checks that the script ran without console errors, drew the flame graph with
//! grown and shrunk frames (from the counts the page's script records on `<body>`, and from the
//! screenshot's pixels), and that hover, click-to-zoom, search and reset work.
//!
//! Without Chromium the test explains and passes, unless SCRAPER_REQUIRE_CHROMIUM=1 (CI), where
//! it fails.

mod support;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use scraper::diff::{Options, Parts, Report, StatsOptions, Window, diff_with_parts};
use scraper::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};

const TIMEOUT: Duration = Duration::from_secs(90);

/// A cpu profile of `(leaf, nanoseconds)` samples, each called from main.main.
fn profile(samples: &[(&str, i64)]) -> Profile {
    let mut p = Profile {
        string_table: vec![
            String::new(),
            "cpu".into(),
            "nanoseconds".into(),
            "main.main".into(),
        ],
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        ..Profile::default()
    };
    let add = |p: &mut Profile, name_index: i64| -> u64 {
        let id = p.function.len() as u64 + 1;
        p.function.push(Function {
            id,
            name: name_index,
            ..Function::default()
        });
        p.location.push(Location {
            id,
            address: 0x1000 * id,
            line: vec![Line {
                function_id: id,
                line: 10,
                column: 0,
            }],
            ..Location::default()
        });
        id
    };
    let main = add(&mut p, 3);
    for (leaf, ns) in samples {
        p.string_table.push((*leaf).to_string());
        let name = p.string_table.len() as i64 - 1;
        let leaf = add(&mut p, name);
        p.sample.push(Sample {
            location_id: vec![leaf, main],
            value: vec![*ns],
            label: vec![],
        });
    }
    p
}

fn report() -> Report {
    // Over a minute on one instance each: alpha falls from 10ms/s to 3.33ms/s, beta rises from
    // 1.67ms/s to 8.33ms/s, and the total (so main.main) stays the same.
    let before = Window {
        profile: profile(&[("main.alpha", 600_000_000), ("main.beta", 100_000_000)]),
        seconds: 60.0,
        instances: 1,
        profiles: 1,
        label: "before: 12:00..12:01".into(),
    };
    let after = Window {
        profile: profile(&[("main.alpha", 200_000_000), ("main.beta", 500_000_000)]),
        seconds: 60.0,
        instances: 1,
        profiles: 1,
        label: "after: 13:00..13:01".into(),
    };
    // Six 10 s parts per window around those rates, for the statistics: both changes are
    // significant, so their frames keep full colour and their tooltips carry the verdict.
    let parts = |alpha: f64, beta: f64| -> Vec<Window> {
        [-0.02, 0.01, 0.0, 0.02, -0.01, 0.005]
            .iter()
            .map(|wobble| Window {
                profile: profile(&[
                    ("main.alpha", (alpha * 10.0 * (1.0 + wobble)) as i64),
                    ("main.beta", (beta * 10.0 * (1.0 - wobble)) as i64),
                ]),
                seconds: 10.0,
                instances: 1,
                profiles: 1,
                label: String::new(),
            })
            .collect()
    };
    let parts = Parts {
        before: parts(10e6, 1.667e6),
        after: parts(3.333e6, 8.333e6),
    };
    diff_with_parts(
        &before,
        &after,
        &parts,
        &StatsOptions::default(),
        &Options::default(),
    )
    .expect("diff")
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

struct Run {
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium on `page` with `args` and a fresh profile directory.
fn run_chromium(bin: &Path, dir: &Path, page: &Path, args: &[&str]) -> Run {
    let user_data = tempfile::tempdir_in(dir).expect("user data dir");
    let out = support::child::run(
        Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", user_data.path().display()))
            .args(args)
            .arg(format!("file://{}", page.display())),
        "chromium",
        TIMEOUT,
    );
    let Some(status) = out.status else {
        panic!("chromium did not finish within {TIMEOUT:?}");
    };
    assert!(
        status.success(),
        "chromium failed: {status}\n{}",
        out.stderr
    );
    Run {
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

/// The value of `name="…"` on the first element that has it.
fn attr<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = dom.find(&key)? + key.len();
    let len = dom[start..].find('"')?;
    Some(&dom[start..start + len])
}

fn count(dom: &str, name: &str) -> usize {
    attr(dom, name)
        .unwrap_or_else(|| panic!("no {name} in the DOM"))
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Lines Chromium logs for the page's console (errors, warnings, logs alike).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn html_report_in_chromium() {
    let Some(bin) = chromium() else {
        let required = std::env::var("SCRAPER_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "SCRAPER_REQUIRE_CHROMIUM=1 but no chromium on PATH (Debian package chromium; .ci/run installs it)"
        );
        eprintln!(
            "skipping: chromium is not installed (Debian package chromium; .ci/run installs it)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let html = report().render_html("cpu: before vs after");
    assert!(!html.contains("http://") && !html.contains("https://"));
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).expect("write page");

    // Structure, counts and console.
    let run = run_chromium(
        &bin,
        dir.path(),
        &page,
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
    );
    let dom = &run.stdout;
    assert_eq!(
        console_lines(&run.stderr),
        Vec::<&str>::new(),
        "console output"
    );
    assert_eq!(attr(dom, "data-errors"), None, "script errors");
    assert_eq!(
        attr(dom, "data-ready"),
        Some("1"),
        "script did not finish:\n{dom}"
    );
    // total, main.main, main.alpha, main.beta.
    assert_eq!(count(dom, "data-frames"), 4);
    assert_eq!(count(dom, "data-grown"), 1);
    assert_eq!(count(dom, "data-shrunk"), 1);
    assert_eq!(count(dom, "data-unchanged"), 2);
    for text in [
        "<tr data-fn=\"main.alpha\">",
        "<tr data-fn=\"main.beta\">",
        "before: 12:00..12:01",
        "after: 13:00..13:01",
        "-66.7%",
        "+400.0%",
    ] {
        assert!(dom.contains(text), "{text} missing from the DOM");
    }

    // Pixels: the screenshot shows the red and the blue frame.
    let png = dir.path().join("report.png");
    let shot = format!("--screenshot={}", png.display());
    run_chromium(&bin, dir.path(), &page, &[&shot, "--window-size=1200,900"]);
    let bytes = std::fs::read(&png).expect("screenshot");
    assert!(bytes.len() > 5_000, "screenshot of {} bytes", bytes.len());
    let image = decode_png(&bytes);
    assert_eq!((image.width, image.height), (1200, 900));
    let (mut red, mut blue) = (0, 0);
    for [r, g, b] in image.pixels() {
        // beta: hsl(0,85%,50%) ≈ (236,19,19); alpha: hsl(220,85%,62.7%) ≈ (79,133,240).
        if r > 200 && g < 80 && b < 80 {
            red += 1;
        }
        if b > 200 && r < 130 && g < 170 {
            blue += 1;
        }
    }
    // The legend's swatches are 144 pixels each; frames are thousands.
    assert!(red > 2_000, "{red} red pixels");
    assert!(blue > 2_000, "{blue} blue pixels");

    // Interaction: a test-only script hovers and clicks the frames the way a user would.
    let interactive = html.replace("</body>", &format!("<script>{INTERACT}</script>\n</body>"));
    let page = dir.path().join("interactive.html");
    std::fs::write(&page, interactive).expect("write page");
    let run = run_chromium(
        &bin,
        dir.path(),
        &page,
        &[
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            "--window-size=1200,900",
        ],
    );
    let dom = &run.stdout;
    assert_eq!(
        console_lines(&run.stderr),
        Vec::<&str>::new(),
        "console output"
    );
    assert_eq!(attr(dom, "data-errors"), None, "script errors");
    assert_eq!(
        attr(dom, "data-t-hover"),
        Some("main.beta"),
        "hovering the row never showed main.beta"
    );
    assert!(
        attr(dom, "data-t-tip")
            .is_some_and(|t| t.contains("+400.0%") && t.contains("verdict: ▲ up +")),
        "tooltip: {:?}",
        attr(dom, "data-t-tip")
    );
    assert_eq!(attr(dom, "data-t-zoomed"), Some("main.beta"));
    // Zoomed into beta: beta and its ancestors only.
    assert_eq!(attr(dom, "data-t-zoomed-frames"), Some("3"));
    assert_eq!(attr(dom, "data-t-matches"), Some("1"));
    assert_eq!(attr(dom, "data-t-reset"), Some("total 4"));
}

/// Hovers along the row of main.alpha and main.beta until the tooltip names beta, clicks it,
/// searches for "alpha", then presses Escape; records what the page showed on <html>.
const INTERACT: &str = r#"
(function () {
  var root = document.documentElement, body = document.body;
  var canvas = document.getElementById('flame-canvas'), tip = document.getElementById('tip');
  var r = canvas.getBoundingClientRect();
  var y = r.top + 2 * 18 + 9;
  function mouse(type, x) {
    canvas.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, bubbles: true }));
  }
  for (var x = r.left + 1; x < r.right; x += 5) {
    mouse('mousemove', x);
    var b = tip.querySelector('b');
    if (!tip.hidden && b && b.textContent === 'main.beta') {
      root.setAttribute('data-t-hover', b.textContent);
      root.setAttribute('data-t-tip', tip.textContent);
      mouse('click', x);
      root.setAttribute('data-t-zoomed', body.dataset.focus);
      root.setAttribute('data-t-zoomed-frames', body.dataset.frames);
      break;
    }
  }
  var search = document.getElementById('search');
  search.value = 'alpha';
  search.dispatchEvent(new Event('input'));
  document.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }));
  root.setAttribute('data-t-matches', body.dataset.matches);
  root.setAttribute('data-t-reset', body.dataset.focus + ' ' + body.dataset.frames);
})();
"#;

struct Image {
    width: usize,
    height: usize,
    channels: usize,
    data: Vec<u8>,
}

impl Image {
    fn pixels(&self) -> impl Iterator<Item = [u8; 3]> + '_ {
        self.data
            .chunks_exact(self.channels)
            .map(|p| [p[0], p[1], p[2]])
    }
}

/// Decodes the 8-bit RGB(A), non-interlaced PNGs Chromium writes (zlib via flate2, which the
/// crate already depends on).
fn decode_png(bytes: &[u8]) -> Image {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut pos = 8;
    let (mut width, mut height, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().expect("len")) as usize;
        let kind = &bytes[pos + 4..pos + 8];
        let body = &bytes[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().expect("w")) as usize;
                height = u32::from_be_bytes(body[4..8].try_into().expect("h")) as usize;
                assert_eq!(body[8], 8, "bit depth");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("colour type {other}"),
                };
                assert_eq!(body[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    assert!(width > 0 && height > 0, "no IHDR");
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .expect("inflate IDAT");
    let stride = width * channels;
    assert_eq!(raw.len(), height * (stride + 1), "image data size");
    let mut data = vec![0u8; height * stride];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for i in 0..stride {
            let a = if i >= channels {
                data[y * stride + i - channels]
            } else {
                0
            };
            let b = if y > 0 { data[(y - 1) * stride + i] } else { 0 };
            let c = if y > 0 && i >= channels {
                data[(y - 1) * stride + i - channels]
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => paeth(a, b, c),
                other => panic!("filter {other}"),
            };
            data[y * stride + i] = line[i].wrapping_add(predicted);
        }
    }
    Image {
        width,
        height,
        channels,
        data,
    }
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}
