//! Turns one collection interval's samples into pprof profiles, one per process.
//!
//! Stacks are deduplicated as they arrive, keyed by their raw addresses, so each distinct
//! stack is symbolized once per interval, at its first sample, while its process is alive.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::pprof::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

use super::symbolize::Frame;

/// Separates kernel from user addresses in a stack key (no frame has this address).
const SPLIT: u64 = u64::MAX;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct StackKey {
    pid: u32,
    /// Zeroed when the thread name is not wanted, so threads share stacks.
    comm: [u8; 16],
    addrs: Box<[u64]>,
}

struct StackEntry {
    frames: Box<[u32]>,
    count: u64,
    /// Sum of the samples' own values (off-CPU nanoseconds); unused for CPU samples, whose
    /// value is `count` periods.
    weight: u64,
}

/// Samples of one interval.
pub struct Interval {
    started: SystemTime,
    frames: HashMap<Frame, u32>,
    frame_list: Vec<Frame>,
    stacks: HashMap<StackKey, StackEntry>,
    samples: u64,
}

/// How profiles are built.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Nanoseconds one sample stands for: 1e9 / sample rate.
    pub period_ns: i64,
    /// Add a `comm` label to samples.
    pub comm_label: bool,
    /// Add a `pid` label to samples.
    pub pid_label: bool,
    /// Off-CPU profile: sample type `offcpu`/`nanoseconds` with each stack's summed weight,
    /// period 1 and no period type, as Alloy builds it; else `cpu`/`nanoseconds` counts.
    pub off_cpu: bool,
}

/// One finished profile.
pub struct PidProfile {
    pub pid: u32,
    /// Encoded (uncompressed) pprof.
    pub pprof: Vec<u8>,
    pub samples: u64,
}

impl Default for Interval {
    fn default() -> Self {
        Interval::new(SystemTime::now())
    }
}

impl Interval {
    pub fn new(started: SystemTime) -> Self {
        Interval {
            started,
            frames: HashMap::new(),
            frame_list: Vec::new(),
            stacks: HashMap::new(),
            samples: 0,
        }
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Distinct stacks so far.
    pub fn stacks(&self) -> usize {
        self.stacks.len()
    }

    /// Counts one sample; `symbolize` is called only for a stack not seen yet this interval
    /// and returns its frames leaf first.
    pub fn add(
        &mut self,
        pid: u32,
        comm: [u8; 16],
        kernel: &[u64],
        user: &[u64],
        symbolize: impl FnOnce() -> Vec<Frame>,
    ) {
        self.add_weighted(pid, comm, kernel, user, 0, symbolize)
    }

    /// [`Interval::add`] for a sample with its own value (off-CPU nanoseconds).
    pub fn add_weighted(
        &mut self,
        pid: u32,
        comm: [u8; 16],
        kernel: &[u64],
        user: &[u64],
        weight: u64,
        symbolize: impl FnOnce() -> Vec<Frame>,
    ) {
        self.samples += 1;
        let mut addrs = Vec::with_capacity(kernel.len() + 1 + user.len());
        addrs.extend_from_slice(kernel);
        addrs.push(SPLIT);
        addrs.extend_from_slice(user);
        let key = StackKey {
            pid,
            comm,
            addrs: addrs.into(),
        };
        if let Some(e) = self.stacks.get_mut(&key) {
            e.count += 1;
            e.weight = e.weight.saturating_add(weight);
            return;
        }
        let frames = symbolize().into_iter().map(|f| self.intern(f)).collect();
        self.stacks.insert(
            key,
            StackEntry {
                frames,
                count: 1,
                weight,
            },
        );
    }

    /// Calls `each(pid, frame, samples)` for every frame of every stack so far, with the
    /// samples of that stack: the session judges from it how much of what it sampled it could
    /// name.
    pub fn for_each_frame(&self, mut each: impl FnMut(u32, &Frame, u64)) {
        for (key, entry) in &self.stacks {
            for &id in &entry.frames {
                if let Some(frame) = self.frame_list.get(id as usize) {
                    each(key.pid, frame, entry.count);
                }
            }
        }
    }

    fn intern(&mut self, f: Frame) -> u32 {
        if let Some(&id) = self.frames.get(&f) {
            return id;
        }
        let id = self.frame_list.len() as u32;
        self.frame_list.push(f.clone());
        self.frames.insert(f, id);
        id
    }

    /// The profiles of every process sampled in the interval, ending at `ended`.
    pub fn finish(self, shape: Shape, ended: SystemTime) -> Vec<PidProfile> {
        let mut by_pid: HashMap<u32, Vec<(&StackKey, &StackEntry)>> = HashMap::new();
        for (k, e) in &self.stacks {
            by_pid.entry(k.pid).or_default().push((k, e));
        }
        let time_nanos = nanos_since_epoch(self.started);
        let duration_nanos = ended
            .duration_since(self.started)
            .map(|d| d.as_nanos().min(i64::MAX as u128) as i64)
            .unwrap_or(0);
        let mut out: Vec<PidProfile> = by_pid
            .into_iter()
            .map(|(pid, stacks)| {
                let mut b = Builder::new(&self.frame_list);
                let samples = stacks.iter().map(|(_, e)| e.count).sum();
                let profile = b.build(pid, &stacks, shape, time_nanos, duration_nanos);
                PidProfile {
                    pid,
                    pprof: prost::Message::encode_to_vec(&profile),
                    samples,
                }
            })
            .collect();
        out.sort_by_key(|p| p.pid);
        out
    }
}

fn nanos_since_epoch(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos().min(i64::MAX as u128) as i64)
        .unwrap_or(0)
}

/// Builds one process's profile: strings, mappings (one per module), functions and
/// locations (one per distinct frame).
struct Builder<'a> {
    frames: &'a [Frame],
    strings: Vec<String>,
    string_ids: HashMap<Arc<str>, i64>,
    /// Interval frame id -> location id.
    locations: HashMap<u32, u64>,
    mappings: HashMap<Arc<str>, u64>,
    profile: Profile,
}

impl<'a> Builder<'a> {
    fn new(frames: &'a [Frame]) -> Self {
        Builder {
            frames,
            strings: vec![String::new()],
            string_ids: HashMap::new(),
            locations: HashMap::new(),
            mappings: HashMap::new(),
            profile: Profile::default(),
        }
    }

    fn string(&mut self, s: &Arc<str>) -> i64 {
        if s.is_empty() {
            return 0;
        }
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.clone(), id);
        id
    }

    fn str(&mut self, s: &str) -> i64 {
        self.string(&Arc::from(s))
    }

    fn location(&mut self, frame_id: u32) -> u64 {
        if let Some(&id) = self.locations.get(&frame_id) {
            return id;
        }
        let Some(frame) = self.frames.get(frame_id as usize).cloned() else {
            return 0;
        };
        let mapping_id = match self.mappings.get(&frame.module) {
            Some(&id) => id,
            None => {
                let id = self.profile.mapping.len() as u64 + 1;
                let filename = self.string(&frame.module);
                self.profile.mapping.push(Mapping {
                    id,
                    filename,
                    has_functions: true,
                    ..Default::default()
                });
                self.mappings.insert(frame.module.clone(), id);
                id
            }
        };
        let function_id = self.profile.function.len() as u64 + 1;
        let name = self.string(&frame.function);
        let (filename, line) = match &frame.source {
            Some(src) => (self.string(&src.file), src.line),
            None => (0, 0),
        };
        self.profile.function.push(Function {
            id: function_id,
            name,
            system_name: name,
            filename,
            ..Default::default()
        });
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location {
            id,
            mapping_id,
            line: vec![Line {
                function_id,
                line,
                ..Default::default()
            }],
            ..Default::default()
        });
        self.locations.insert(frame_id, id);
        id
    }

    fn build(
        &mut self,
        pid: u32,
        stacks: &[(&StackKey, &StackEntry)],
        shape: Shape,
        time_nanos: i64,
        duration_nanos: i64,
    ) -> Profile {
        let kind = self.str(if shape.off_cpu { "offcpu" } else { "cpu" });
        let ns = self.str("nanoseconds");
        let comm_key = self.str("comm");
        let pid_key = self.str("pid");
        self.profile.sample_type = vec![ValueType {
            r#type: kind,
            unit: ns,
        }];
        if shape.off_cpu {
            self.profile.period = 1;
        } else {
            self.profile.period_type = Some(ValueType {
                r#type: kind,
                unit: ns,
            });
            self.profile.period = shape.period_ns;
        }
        self.profile.time_nanos = time_nanos;
        self.profile.duration_nanos = duration_nanos;
        for (key, entry) in stacks {
            let location_id = entry.frames.iter().map(|&f| self.location(f)).collect();
            let mut label = Vec::new();
            if shape.comm_label {
                let end = key.comm.iter().position(|&b| b == 0).unwrap_or(16);
                let comm = String::from_utf8_lossy(&key.comm[..end]).into_owned();
                let str = self.str(&comm);
                label.push(Label {
                    key: comm_key,
                    str,
                    ..Default::default()
                });
            }
            if shape.pid_label {
                let str = self.str(&pid.to_string());
                label.push(Label {
                    key: pid_key,
                    str,
                    ..Default::default()
                });
            }
            self.profile.sample.push(Sample {
                location_id,
                value: vec![if shape.off_cpu {
                    entry.weight.min(i64::MAX as u64) as i64
                } else {
                    (entry.count as i64).saturating_mul(shape.period_ns)
                }],
                label,
            });
        }
        let mut p = std::mem::take(&mut self.profile);
        p.string_table = std::mem::take(&mut self.strings);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    fn frame(f: &str, m: &str) -> Frame {
        Frame {
            function: f.into(),
            module: m.into(),
            source: None,
        }
    }

    #[test]
    fn one_valid_profile_per_process_with_counts_times_period() {
        let mut iv = Interval::new(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(100));
        let mut symbolized = 0;
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"spin");
        for _ in 0..3 {
            iv.add(1, comm, &[], &[0x10, 0x20], || {
                symbolized += 1;
                vec![frame("hot", "a.out"), frame("main", "a.out")]
            });
        }
        iv.add(1, comm, &[0xffff_0001], &[0x20], || {
            vec![
                frame("do_syscall_64", "[kernel.kallsyms]"),
                frame("main", "a.out"),
            ]
        });
        iv.add(2, [0; 16], &[], &[0x10], || vec![frame("hot", "a.out")]);
        assert_eq!(symbolized, 1, "a repeated stack is symbolized once");
        assert_eq!(iv.samples(), 5);
        let shape = Shape {
            period_ns: 10_309_278,
            comm_label: true,
            pid_label: true,
            off_cpu: false,
        };
        let out = iv.finish(
            shape,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(115),
        );
        assert_eq!(
            out.iter().map(|p| (p.pid, p.samples)).collect::<Vec<_>>(),
            [(1, 4), (2, 1)]
        );
        let p = Profile::decode(out[0].pprof.as_slice()).expect("decodes");
        crate::pprof::validate(&p).expect("valid pprof");
        assert_eq!(p.duration_nanos, 15_000_000_000);
        assert_eq!(p.time_nanos, 100_000_000_000);
        let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(total, 4 * 10_309_278);
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(p.sample_type[0].r#type), "cpu");
        assert_eq!(s(p.sample_type[0].unit), "nanoseconds");
        // Leaf first; `main` shares one location across stacks.
        let heavy = p
            .sample
            .iter()
            .find(|x| x.value[0] == 3 * 10_309_278)
            .expect("heavy");
        let names: Vec<&str> = heavy
            .location_id
            .iter()
            .map(|&id| {
                let loc = &p.location[id as usize - 1];
                s(p.function[loc.line[0].function_id as usize - 1].name)
            })
            .collect();
        assert_eq!(names, ["hot", "main"]);
        assert_eq!(p.location.len(), 3);
        assert_eq!(p.mapping.len(), 2);
        let labels: Vec<(&str, &str)> = heavy.label.iter().map(|l| (s(l.key), s(l.str))).collect();
        assert_eq!(labels, [("comm", "spin"), ("pid", "1")]);
    }

    #[test]
    fn off_cpu_profiles_sum_their_samples_weights_as_alloy_types_them() {
        let mut iv = Interval::new(SystemTime::UNIX_EPOCH);
        let stack = || vec![frame("block_long", "a.out"), frame("main", "a.out")];
        iv.add_weighted(7, [0; 16], &[0xffff_0001], &[0x10], 50_000_000, stack);
        iv.add_weighted(7, [0; 16], &[0xffff_0001], &[0x10], 51_000_000, stack);
        iv.add_weighted(7, [0; 16], &[], &[0x20], 3_000_000, || {
            vec![frame("other", "a.out")]
        });
        let shape = Shape {
            period_ns: 10_309_278,
            comm_label: false,
            pid_label: false,
            off_cpu: true,
        };
        let out = iv.finish(
            shape,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1),
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].samples, 3);
        let p = Profile::decode(out[0].pprof.as_slice()).expect("decodes");
        crate::pprof::validate(&p).expect("valid pprof");
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(p.sample_type[0].r#type), "offcpu");
        assert_eq!(s(p.sample_type[0].unit), "nanoseconds");
        assert_eq!(p.period, 1);
        assert!(p.period_type.is_none());
        let mut values: Vec<i64> = p.sample.iter().map(|x| x.value[0]).collect();
        values.sort();
        assert_eq!(values, [3_000_000, 101_000_000]);
    }
}
