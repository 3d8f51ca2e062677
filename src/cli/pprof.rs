//! `scraper pprof info | delta | merge`: the profile core (src/pprof) for users and tests.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use crate::pprof::{
    Cumulative, DEFAULT_LEVEL, DEFAULT_MAX_DECOMPRESSED, DeltaEngine, DeltaOptions, Limits, decode,
    encode, info, merge,
};

#[derive(Debug, Subcommand)]
pub(crate) enum PprofCommand {
    /// Print a profile's sample types, totals and top functions.
    Info {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// How many functions to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Rank functions by this sample type (default: the profile's default type).
        #[arg(long = "type", value_name = "NAME")]
        sample_type: Option<String>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Delta of two scrapes of a cumulative profile: NEW minus OLD per stack, negatives
    /// clamped to zero, zero samples dropped. By default only Alloy's cumulative types
    /// (alloc_objects, alloc_space, contentions, delay) are subtracted; others are NEW's.
    Delta {
        #[arg(value_name = "OLD")]
        old: PathBuf,
        #[arg(value_name = "NEW")]
        new: PathBuf,
        /// Output file ("-" for stdout); gzipped pprof.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: PathBuf,
        /// Subtract every sample type (like `go tool pprof -base`).
        #[arg(long, conflicts_with = "types")]
        all_types: bool,
        /// Subtract exactly these sample types (comma-separated names).
        #[arg(long, value_delimiter = ',', value_name = "NAMES")]
        types: Vec<String>,
        #[command(flatten)]
        encode: EncodeArgs,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Merge profiles of the same type into one (values of equal stacks summed).
    Merge {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Output file ("-" for stdout); gzipped pprof.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: PathBuf,
        #[command(flatten)]
        encode: EncodeArgs,
        #[command(flatten)]
        limits: LimitArgs,
    },
}

#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// gzip level of the output, 0 (none) to 9 (smallest).
    #[arg(long, default_value_t = DEFAULT_LEVEL, value_parser = clap::value_parser!(u32).range(0..=9))]
    level: u32,
}

#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    /// Largest accepted profile, in bytes after decompression.
    #[arg(long = "max-size", value_name = "BYTES", default_value_t = DEFAULT_MAX_DECOMPRESSED)]
    max_size: usize,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            max_decompressed_bytes: self.max_size,
        }
    }
}

pub(super) fn run(command: PprofCommand) -> anyhow::Result<ExitCode> {
    match command {
        PprofCommand::Info {
            file,
            top,
            sample_type,
            limits,
        } => {
            let p = decode(&read(&file)?, &limits.limits())
                .with_context(|| format!("decoding {}", file.display()))?;
            let index = match sample_type {
                None => None,
                Some(name) => Some(
                    p.sample_type
                        .iter()
                        .position(|t| {
                            usize::try_from(t.r#type)
                                .ok()
                                .and_then(|i| p.string_table.get(i))
                                == Some(&name)
                        })
                        .with_context(|| {
                            format!("{} has no sample type {name:?}", file.display())
                        })?,
                ),
            };
            print!("{}", info::summarize(&p, index, top));
        }
        PprofCommand::Delta {
            old,
            new,
            output,
            all_types,
            types,
            encode,
            limits,
        } => {
            let cumulative = if all_types {
                Cumulative::All
            } else if !types.is_empty() {
                Cumulative::Types(types)
            } else {
                Cumulative::Alloy
            };
            let mut engine = DeltaEngine::new(DeltaOptions {
                cumulative,
                limits: limits.limits(),
                level: encode.level,
            });
            let d = engine
                .diff(&read(&old)?, &read(&new)?)
                .with_context(|| format!("delta of {} and {}", old.display(), new.display()))?;
            if !d.cumulative {
                eprintln!("warning: no sample type is cumulative; the output is NEW's values");
            }
            for w in &d.warnings {
                eprintln!("warning: {w} (a scraper would reset its baseline here)");
            }
            let s = &d.stats;
            eprintln!(
                "delta: {} samples ({} in NEW, {} stacks, {} matched OLD, {} values clamped); {} bytes raw, {} gzipped",
                s.samples_out,
                s.samples_in,
                s.stacks,
                s.matched,
                s.clamped_values,
                s.raw_bytes_out,
                d.profile.len()
            );
            write(&output, &d.profile)?;
        }
        PprofCommand::Merge {
            files,
            output,
            encode: enc,
            limits,
        } => {
            let mut profiles = Vec::with_capacity(files.len());
            for f in &files {
                profiles.push(
                    decode(&read(f)?, &limits.limits())
                        .with_context(|| format!("decoding {}", f.display()))?,
                );
            }
            let merged = merge(&profiles).context("merging")?;
            let bytes = encode(&merged, enc.level);
            eprintln!(
                "merged {} profiles: {} samples, {} bytes gzipped",
                profiles.len(),
                merged.sample.len(),
                bytes.len()
            );
            write(&output, &bytes)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).context("writing to stdout")?;
        return out.flush().context("writing to stdout");
    }
    if path.as_os_str().is_empty() {
        bail!("empty output path");
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}
