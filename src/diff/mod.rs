//! Before/after comparison of two merged profiles (issue 9 item 5): what changed in a service
//! between two time windows, e.g. across an upgrade.
//!
//! [`diff`] takes one merged profile per window and produces a [`Report`]: a per-function table
//! ([`Report::render_table`] for the terminal) and the merged call tree behind a differential
//! flame graph ([`Report::render_html`], [`Report::render_svg`]).
//!
//! Choices worth knowing when reading the output:
//!
//! * Values are normalised so that a longer window or more replicas do not look like growth
//!   ([`Measure`]): what accumulates (CPU time, allocations, contentions) is a rate, the window's
//!   value divided by its length in seconds and by the number of instances that contributed;
//!   what is a state (heap in use, goroutines) is the average of the window's snapshots.
//! * A frame's width in the flame graph is proportional to before + after (both normalised), not
//!   to after alone: a function that disappeared must stay visible to show up as shrunk, and
//!   max(before, after) is not additive — two siblings can each be larger in a different window
//!   and together overflow their parent.
//! * Colour follows the change of a frame's total (the value of its call path, what the width
//!   is made of): red grew, blue shrank, grey changed by less than 1 %; intensity grows linearly
//!   with the relative change and saturates at ±100 % (new frames are full red, vanished ones
//!   full blue). See [`Node::change`].
//! * Frames are merged by function name, so a call path matches across windows even when the
//!   binaries (and so addresses and ids) differ.

pub mod fail_on;
#[cfg(test)]
mod fixture;
mod html;
mod json;
mod markdown;
mod model;
mod stats;
mod stats_t;
mod svg;
mod table;
#[cfg(test)]
mod tests;
mod units;
mod window;

use crate::pprof::proto::Profile;

pub use json::SCHEMA_VERSION;
pub use units::{Measure, format_change, format_rate, format_span, format_value, is_snapshot};
pub use window::{seconds as window_seconds, side_labels, title};

/// One side of the comparison.
#[derive(Clone, Debug)]
pub struct Window {
    /// The window's profiles merged into one (see [`crate::pprof::merge()`]).
    pub profile: Profile,
    /// The window's length; values are divided by it.
    pub seconds: f64,
    /// How many scraped instances (series) contributed; values are divided by it too.
    pub instances: usize,
    /// How many profiles were merged (0 = the source did not say); snapshot types such as
    /// `inuse_space` are averaged over them.
    pub profiles: usize,
    /// Shown in reports, e.g. "before: 12:00..12:30".
    pub label: String,
}

/// What to compare and how much of it to show.
#[derive(Clone, Debug)]
pub struct Options {
    /// (type, unit) of the sample values to compare, e.g. ("cpu", "nanoseconds"); an empty unit
    /// matches any unit. None = the profile's `default_sample_type` if set, else its last type.
    pub sample_type: Option<(String, String)>,
    /// Rows of the table in the terminal and in the HTML report; 0 = all.
    pub top: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sample_type: None,
            top: 20,
        }
    }
}

/// Each window cut into parts (time buckets: see docs/DIFF-STATISTICS.md), each part a
/// [`Window`] of its own (its merged profiles, seconds, instances, profiles), for the
/// statistics: the spread of the parts' values is what tells a change from noise.
#[derive(Clone, Debug, Default)]
pub struct Parts {
    pub before: Vec<Window>,
    pub after: Vec<Window>,
}

/// How the statistics decide (docs/DIFF-STATISTICS.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StatsOptions {
    /// Confidence of the intervals, jointly over the functions tested (e.g. 0.95).
    pub confidence: f64,
    /// Functions whose value is below this share (percent) of the total in both windows are not
    /// tested (verdict [`Verdict::BelowNoiseFloor`]), and a function's change smaller than this
    /// share of the before total is `NoChange` however tight its interval.
    pub noise_floor_pct: f64,
    /// A change whose estimate is smaller than this (percent of before) is `NoChange` even
    /// when its interval excludes 0: a program's CPU rate drifts by a percent or so between
    /// any two windows (frequency, caches, neighbours), which a tight interval would otherwise
    /// call a change nobody should act on.
    pub min_change_pct: f64,
}

impl Default for StatsOptions {
    fn default() -> Self {
        StatsOptions {
            confidence: 0.95,
            noise_floor_pct: 1.0,
            min_change_pct: 5.0,
        }
    }
}

/// Why two windows cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The requested sample type is not in one of the profiles.
    #[error("{side} profile has no sample type {ty}/{unit} (it has: {available})")]
    SampleTypeMissing {
        side: Side,
        ty: String,
        unit: String,
        available: String,
    },
    /// A profile without any sample type has nothing to compare.
    #[error("{side} profile has no sample types")]
    NoSampleTypes { side: Side },
    /// The windows measure different things, e.g. cpu before and memory after.
    #[error(
        "the windows' sample types differ: before is {before}, after is {after}; choose one both have"
    )]
    SampleTypeMismatch { before: String, after: String },
    /// Seconds or instances cannot normalise the values.
    #[error("{side} window: {reason}")]
    InvalidWindow { side: Side, reason: String },
    /// The profile references something it does not contain.
    #[error("{side} profile is malformed: {reason}")]
    Malformed { side: Side, reason: String },
}

/// Which window an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Before => "before",
            Side::After => "after",
        })
    }
}

/// The comparison: per-function rows, both windows' summaries and the merged call tree.
#[derive(Clone, Debug)]
pub struct Report {
    /// Every function seen in either window, by impact: the larger of |flat change| and |cum
    /// change| descending, then |flat change|, then name.
    pub rows: Vec<Row>,
    /// The sample type's unit as in the profile, e.g. "nanoseconds"; values are this unit per
    /// second per instance, or an average per instance (see `measure`).
    pub unit: String,
    /// How the values are normalised, from the sample type.
    pub measure: Measure,
    /// The sample type compared, e.g. "cpu".
    pub sample_type: String,
    pub before: Summary,
    pub after: Summary,
    /// The call trees of both windows merged, for the flame graphs.
    pub tree: Tree,
    /// Rows the HTML report lists (from [`Options::top`]; 0 = all).
    pub top: usize,
    /// The change of the whole profile's total, with its statistics (None as for rows).
    pub total_stats: Option<Change>,
    /// None when the windows carry no parts to test.
    pub statistics: Option<Statistics>,
}

/// One function's normalised values (see [`Report::measure`]) in both windows.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub function: String,
    /// Value of samples where the function is the leaf (innermost inlined frame included).
    pub flat_before: f64,
    pub flat_after: f64,
    /// Value of samples whose stack contains the function, counted once per sample.
    pub cum_before: f64,
    pub cum_after: f64,
    /// (after − before) / before × 100; None when before is 0.
    pub flat_change_pct: Option<f64>,
    pub cum_change_pct: Option<f64>,
    /// The statistics of the flat and cum changes; None when the windows carry no parts to
    /// test (a window given as one merged profile).
    pub flat_stats: Option<Change>,
    pub cum_stats: Option<Change>,
}

/// The statistical verdict on a change (docs/DIFF-STATISTICS.md says how it is reached).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The value grew, with confidence.
    Increase,
    /// The value shrank, with confidence.
    Decrease,
    /// Tested, and the change cannot be told from noise.
    NoChange,
    /// Too small a share of the total in both windows to be tested.
    BelowNoiseFloor,
}

/// One change with its confidence interval. Values are normalised like the row's.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Change {
    /// Estimated after − before (difference of the windows' means over their parts).
    pub delta: f64,
    /// Confidence interval of `delta` at [`Statistics::confidence`], (low, high).
    pub interval: (f64, f64),
    /// `delta` and its interval as a percentage of before; None when before is 0.
    pub pct: Option<f64>,
    pub pct_interval: Option<(f64, f64)>,
    /// The test's p-value, after the correction for testing many functions.
    pub p_value: f64,
    pub verdict: Verdict,
}

/// How the statistics were computed, for the report's reader.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Statistics {
    /// The test, e.g. "welch".
    pub method: String,
    /// E.g. 0.95.
    pub confidence: f64,
    /// Parts (profiles or time buckets) in each window that the test compared.
    pub before_parts: usize,
    pub after_parts: usize,
    /// Functions below this share of the total (percent) in both windows are not tested.
    pub noise_floor_pct: f64,
    /// Changes estimated below this (percent of before) are not called significant.
    pub min_change_pct: f64,
    /// Functions tested.
    pub tested: usize,
}

/// One window as compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub label: String,
    pub seconds: f64,
    pub instances: usize,
    /// Profiles merged (0 = unknown).
    pub profiles: usize,
    /// Samples in the profile (including those with a zero value for the compared type).
    pub samples: usize,
    /// Sum of the compared values as in the profile (not normalised).
    pub total: f64,
    /// `total` normalised as [`Report::measure`] says.
    pub normalised: f64,
}

/// The merged call tree. `nodes[0]` is the root ("total"); nodes are in pre-order (a node's
/// descendants follow it) with siblings sorted by name, so both renderers lay it out alike.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

/// One call path; all values are normalised (see [`Report::measure`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    /// 0 for the root, 1 for the outermost frames.
    pub depth: usize,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// Value of samples through this path.
    pub before: f64,
    pub after: f64,
    /// Value of samples ending here.
    pub self_before: f64,
    pub self_after: f64,
}

impl Node {
    /// The frame's colour as a signed intensity in [-1, 1]: positive grew, negative shrank, 0
    /// unchanged (see the module docs).
    pub fn change(&self) -> f64 {
        model::change_intensity(self.before, self.after)
    }
}

/// Compares two windows; see the module docs for the semantics.
pub fn diff(before: &Window, after: &Window, opts: &Options) -> Result<Report, DiffError> {
    model::build(before, after, opts)
}

/// [`diff`], plus the statistics of each change computed over the windows' parts: fills
/// [`Row::flat_stats`], [`Row::cum_stats`], [`Report::total_stats`] and
/// [`Report::statistics`] (left None when either window has fewer than two parts, or when the
/// values are sums of snapshots that cannot be averaged, [`Measure::SumPerInstance`]).
pub fn diff_with_parts(
    before: &Window,
    after: &Window,
    parts: &Parts,
    stats: &StatsOptions,
    opts: &Options,
) -> Result<Report, DiffError> {
    model::build_with_parts(before, after, Some((parts, stats)), opts)
}

impl Report {
    /// The row of `function`, if it was seen in either window.
    pub fn row(&self, function: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.function == function)
    }

    /// Plain-text table of the `top` rows (0 = all) fitted to `width` columns: long function
    /// names are shortened from the left, since their end names the function.
    pub fn render_table(&self, top: usize, width: usize) -> String {
        table::render(self, top, width)
    }

    /// One self-contained HTML page (no external resources): summaries, an interactive
    /// differential flame graph (hover for values, click to zoom, search) and the top rows.
    pub fn render_html(&self, title: &str) -> String {
        html::render(self, title)
    }

    /// A static differential flame graph; each frame's `<title>` holds its values.
    pub fn render_svg(&self, title: &str) -> String {
        svg::render(self, title)
    }

    /// The JSON document of `--format json` (docs/diff-report.schema.json): the `top` rows
    /// (0 = all) and the `--fail-on` results.
    pub fn render_json(&self, title: &str, top: usize, fail_on: &fail_on::Evaluation) -> String {
        json::render(self, title, top, fail_on)
    }

    /// GitHub-flavoured markdown for a pull-request comment: the `top` rows (0 = all) and the
    /// `--fail-on` results.
    pub fn render_markdown(
        &self,
        title: &str,
        top: usize,
        fail_on: &fail_on::Evaluation,
    ) -> String {
        markdown::render(self, title, top, fail_on)
    }
}
