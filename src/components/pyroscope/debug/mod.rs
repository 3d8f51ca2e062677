//! `pyroscope.debug`: a receiver that prints every profile it gets as text (labels, sample
//! types and totals, the heaviest stacks), like the OpenTelemetry debug exporter, so that a
//! pipeline can be watched working with no backend at all.
//!
//! ```alloy
//! pyroscope.debug "console" {
//!   verbosity  = "normal"   // "basic" (one line per profile), "normal", "detailed" (every frame)
//!   top_stacks = 5          // stacks listed per profile
//! }
//!
//! pyroscope.scrape "app" {
//!   targets    = [{"__address__" = "localhost:6060", "service_name" = "app"}]
//!   forward_to = [pyroscope.debug.console.receiver]
//! }
//! ```
//!
//! Output goes to standard output (logs go to standard error). `append` only queues: decoding
//! and printing happen on the component's own task, and when that falls behind (more than 256
//! profiles waiting) further profiles are dropped and counted, never making a producer wait.
//! The debug info (`/api/v0/web/components/<id>`) shows the counts and the last ten profiles.

pub mod format;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::Deserialize;
use std::io::Write as _;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::format::{Verbosity, render, summarize};
use crate::profiles::{Appendable, Profile, Receiver};
use crate::runtime::{BoxError, Component, ComponentOptions};
use crate::sync::lock;
use crate::syntax::value::Value;

/// Profiles waiting to be printed before new ones are dropped.
const QUEUE: usize = 256;
/// Profiles kept for the debug info.
const RECENT: usize = 10;

fn default_verbosity() -> String {
    "normal".to_string()
}
fn default_top() -> u64 {
    5
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    pub verbosity: Verbosity,
    pub top_stacks: usize,
}

#[derive(Deserialize)]
#[serde(rename = "pyroscope.debug")]
struct RawArguments {
    #[serde(default = "default_verbosity")]
    verbosity: String,
    #[serde(default = "default_top")]
    top_stacks: u64,
}

impl TryFrom<RawArguments> for Arguments {
    type Error = String;
    fn try_from(r: RawArguments) -> Result<Self, String> {
        Ok(Arguments {
            verbosity: Verbosity::parse(&r.verbosity)?,
            top_stacks: usize::try_from(r.top_stacks).unwrap_or(usize::MAX),
        })
    }
}

struct Sink {
    tx: mpsc::Sender<Profile>,
    received: AtomicU64,
    dropped: AtomicU64,
}

impl Appendable for Sink {
    fn append(&self, profiles: Vec<Profile>) {
        for p in profiles {
            self.received.fetch_add(1, Ordering::Relaxed);
            if self.tx.try_send(p).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The `pyroscope.debug` component.
pub struct Debug {
    id: String,
    sink: Arc<Sink>,
    receiver: Arc<Receiver>,
    rx: Mutex<Option<mpsc::Receiver<Profile>>>,
    args: RwLock<Arguments>,
    recent: Mutex<VecDeque<serde_json::Value>>,
    printed: AtomicU64,
}

fn exports(receiver: &Arc<Receiver>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    Value::Object(m)
}

impl Debug {
    /// Renders one profile and remembers its summary.
    fn show(&self, profile: &Profile) -> String {
        let args = crate::sync::read(&self.args).clone();
        let seq = self.printed.fetch_add(1, Ordering::Relaxed) + 1;
        let summary = summarize(profile, args.top_stacks);
        let text = render(&self.id, seq, &summary, args.verbosity);
        let mut recent = lock(&self.recent);
        if recent.len() == RECENT {
            recent.pop_front();
        }
        let mut entry = serde_json::to_value(&summary).unwrap_or_default();
        if let Some(o) = entry.as_object_mut() {
            o.insert("seq".into(), seq.into());
            o.insert(
                "labels".into(),
                serde_json::Value::Object(
                    summary
                        .labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone().into()))
                        .collect(),
                ),
            );
        }
        recent.push_back(entry);
        text
    }
}

impl Component for Debug {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable())
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let sink = Arc::new(Sink {
            tx,
            received: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        let receiver = Arc::new(Receiver(sink.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(Debug {
            id: opts.id,
            sink,
            receiver,
            rx: Mutex::new(Some(rx)),
            args: RwLock::new(args),
            recent: Mutex::new(VecDeque::new()),
            printed: AtomicU64::new(0),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        *crate::sync::write(&self.args) = args;
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "received_total": self.sink.received.load(Ordering::Relaxed),
            "dropped_total": self.sink.dropped.load(Ordering::Relaxed),
            "printed_total": self.printed.load(Ordering::Relaxed),
            "recent": lock(&self.recent).iter().cloned().collect::<Vec<_>>(),
        }))
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let Some(mut rx) = lock(&self.rx).take() else {
            return Err("pyroscope.debug run twice".into());
        };
        let _keep = self.receiver.clone();
        loop {
            let profile = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                p = rx.recv() => match p {
                    Some(p) => p,
                    None => return Ok(()),
                },
            };
            // Decoding is CPU work and stdout may block: keep both off the runtime's workers.
            let me = self.clone();
            crate::runtime::task::spawn_blocking("pyroscope.debug.print", move || {
                let text = me.show(&profile);
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()
            })
            .await??;
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::pprof::gzip;
    use crate::pprof::proto::{Function, Line, Location, Profile as Pprof, Sample, ValueType};
    use crate::syntax::decode::from_body;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    fn cpu_profile() -> Vec<u8> {
        let strings: Vec<String> = [
            "",
            "samples",
            "count",
            "cpu",
            "nanoseconds",
            "main.work",
            "main.go",
            "main.main",
            "runtime.main",
            "main.idle",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let func = |id: u64, name: i64| Function {
            id,
            name,
            filename: 6,
            ..Default::default()
        };
        let loc = |id: u64, f: u64, line: i64| Location {
            id,
            line: vec![Line {
                function_id: f,
                line,
                column: 0,
            }],
            ..Default::default()
        };
        let p = Pprof {
            sample_type: vec![
                ValueType { r#type: 1, unit: 2 },
                ValueType { r#type: 3, unit: 4 },
            ],
            period_type: Some(ValueType { r#type: 3, unit: 4 }),
            period: 10_000_000,
            duration_nanos: 2_000_000_000,
            function: vec![func(1, 5), func(2, 7), func(3, 8), func(4, 9)],
            location: vec![loc(1, 1, 10), loc(2, 2, 20), loc(3, 3, 30), loc(4, 4, 40)],
            sample: vec![
                Sample {
                    location_id: vec![1, 2, 3],
                    value: vec![75, 750_000_000],
                    label: vec![],
                },
                Sample {
                    location_id: vec![4, 2, 3],
                    value: vec![25, 250_000_000],
                    label: vec![],
                },
            ],
            string_table: strings,
            ..Default::default()
        };
        gzip(&p.encode_to_vec(), 1)
    }

    fn profile() -> Profile {
        Profile::new(
            vec![
                ("service_name".into(), "app".into()),
                ("__name__".into(), "process_cpu".into()),
                ("instance".into(), "a:1".into()),
            ],
            cpu_profile(),
        )
    }

    #[test]
    fn renders_labels_types_and_top_stacks() {
        let s = summarize(&profile(), 5);
        assert_eq!(s.sample_types, ["samples/count", "cpu/nanoseconds"]);
        assert_eq!(s.totals, [100, 1_000_000_000]);
        assert_eq!(s.ranked_by, "cpu/nanoseconds");
        assert_eq!(
            s.top_stacks[0].frames,
            ["main.work", "main.main", "runtime.main"]
        );
        assert_eq!(s.top_stacks[0].percent, 75.0);

        let text = render("pyroscope.debug.x", 1, &s, Verbosity::Normal);
        let want = [
            "pyroscope.debug.x: profile #1 process_cpu service_name=\"app\" instance=\"a:1\"",
            "  labels: {__name__=\"process_cpu\", instance=\"a:1\", service_name=\"app\"}",
            "  sample types: samples/count (total 100), cpu/nanoseconds (total 1.00s)",
            "  period: 10000000 cpu/nanoseconds; duration: 2.00s",
            "  top 2 stacks by cpu/nanoseconds (leaf first):",
            "     75.00%      0.75s  main.work < main.main < runtime.main",
            "     25.00%      0.25s  main.idle < main.main < runtime.main",
        ];
        for w in want {
            assert!(text.contains(w), "missing {w:?} in:\n{text}");
        }
        let basic = render("d", 1, &s, Verbosity::Basic);
        assert_eq!(basic.lines().count(), 1, "{basic}");
        let detailed = render("d", 1, &s, Verbosity::Detailed);
        assert!(
            detailed.contains("        main.work main.go:10"),
            "{detailed}"
        );

        let bad = Profile::new(vec![], b"\x1f\x8bnot really".to_vec());
        let text = render("d", 2, &summarize(&bad, 5), Verbosity::Normal);
        assert!(text.contains("INVALID: invalid gzip data"), "{text}");
    }

    #[test]
    fn stacks_are_grouped_by_function_names() {
        // main.idle sampled at three addresses (20 % each) is one stack of 60 %: it must rank
        // first, once, ahead of main.work's 40 % at one address.
        let raw =
            crate::pprof::decode(&cpu_profile(), &crate::pprof::Limits::default()).expect("decode");
        let mut p = raw.clone();
        for (id, line) in [(5, 41), (6, 42)] {
            p.location.push(Location {
                id,
                line: vec![Line {
                    function_id: 4,
                    line,
                    column: 0,
                }],
                ..Default::default()
            });
        }
        p.sample = [(1, 40), (4, 20), (5, 20), (6, 20)]
            .into_iter()
            .map(|(leaf, v)| Sample {
                location_id: vec![leaf, 2, 3],
                value: vec![v, v * 10_000_000],
                label: vec![],
            })
            .collect();
        let profile = Profile::new(
            vec![("__name__".into(), "process_cpu".into())],
            gzip(&p.encode_to_vec(), 1),
        );
        let s = summarize(&profile, 5);
        let stacks: Vec<(Vec<String>, f64)> = s
            .top_stacks
            .iter()
            .map(|t| (t.frames.clone(), t.percent))
            .collect();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            stacks,
            [
                (names(&["main.idle", "main.main", "runtime.main"]), 60.0),
                (names(&["main.work", "main.main", "runtime.main"]), 40.0),
            ]
        );
        // `detailed` shows one of the grouped addresses' lines.
        assert!(s.frame_details[0][0].starts_with("main.idle main.go:4"));
    }

    #[test]
    fn arguments() {
        let decode = |src: &str| {
            let (file, diags) = parse_file(src);
            assert!(diags.is_empty(), "{diags:?}");
            let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
            from_body::<Arguments>(&body).map_err(|d| d[0].message.clone())
        };
        assert_eq!(
            decode(""),
            Ok(Arguments {
                verbosity: Verbosity::Normal,
                top_stacks: 5
            })
        );
        assert_eq!(
            decode("verbosity = \"detailed\"\ntop_stacks = 2").map(|a| a.verbosity),
            Ok(Verbosity::Detailed)
        );
        assert!(decode("verbosity = \"loud\"").is_err_and(|e| e.contains("unknown verbosity")));
    }

    #[test]
    fn append_never_blocks_and_counts_drops() {
        let opts = ComponentOptions::standalone(
            "pyroscope.debug.t",
            "pyroscope.debug",
            Debug::initial_exports(),
        );
        let d = Debug::build(
            opts,
            Arguments {
                verbosity: Verbosity::Basic,
                top_stacks: 5,
            },
        )
        .expect("build");
        // Not running: the queue fills, then drops.
        for _ in 0..QUEUE + 10 {
            d.receiver.append(vec![profile()]);
        }
        let info = d.debug_info().expect("info");
        assert_eq!(info["received_total"], (QUEUE + 10) as u64);
        assert_eq!(info["dropped_total"], 10);
        let text = d.show(&profile());
        assert!(
            text.starts_with("pyroscope.debug.t: profile #1 process_cpu"),
            "{text}"
        );
        assert_eq!(
            d.debug_info().expect("info")["recent"][0]["labels"]["service_name"],
            "app"
        );
    }
}
