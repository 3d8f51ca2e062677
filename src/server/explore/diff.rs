//! `GET /api/v0/explore/diff?type=ID&query=SEL&before_from=MS&before_to=MS&after_from=MS&after_to=MS`:
//! the HTML report `scraper diff --html` writes for these two windows (the UI shows it in an
//! iframe), statistics and verdicts included. Built by the same steps: [`select_required`] per
//! window, cut into [`crate::query::buckets`] (`scraper diff`'s default `--parts`),
//! [`Window::measured`], [`crate::diff::diff_with_parts`] with the default options,
//! [`crate::diff::title`].

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::params::Params;
use super::stores;
use crate::diff::{Options, Parts, StatsOptions, Window};
use crate::query::source::{Query, select_required};
use crate::server::AppState;

pub(super) async fn diff(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let params = Params::from_request(query)?;
    // As `scraper diff`: a profile straddling a window's start belongs to neither window.
    let before = Query {
        exclude_straddling: true,
        ..params.query("before_", None)?
    };
    let after = Query {
        exclude_straddling: true,
        ..params.query("after_", None)?
    };
    let html = stores::read("server.explore.diff", &state.stores, move |s| {
        report(s, &before, &after)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response())
}

/// Parts per window: `scraper diff`'s default `--parts`.
const PARTS: usize = 20;

/// The report for two queries that differ only in their range.
fn report(
    source: &dyn crate::query::source::ProfileSource,
    before: &Query,
    after: &Query,
) -> Result<String, ApiError> {
    let (before_label, after_label) = crate::diff::side_labels(None);
    let side = |q: &Query, what: &str, label: &str| -> Result<(Window, Vec<Window>), ApiError> {
        let merged = select_required(source, q, what, &mut |_, _| {})?;
        let parts = crate::query::buckets::buckets(source, q, &merged, PARTS)?
            .into_iter()
            .map(|(m, range)| Window::measured(m.profile, m.profiles, m.series, range, label))
            .collect();
        let whole = Window::measured(
            merged.profile,
            merged.profiles,
            merged.series,
            (q.from, q.to),
            label,
        );
        Ok((whole, parts))
    };
    let (before_window, before_parts) = side(before, "the before window", &before_label)?;
    let (after_window, after_parts) = side(after, "the after window", &after_label)?;
    let opts = Options {
        sample_type: Some(before.profile_type.sample_type()),
        ..Options::default()
    };
    let report = crate::diff::diff_with_parts(
        &before_window,
        &after_window,
        &Parts {
            before: before_parts,
            after: after_parts,
        },
        &StatsOptions::default(),
        &opts,
    )?;
    let title = crate::diff::title(
        &before.profile_type.name,
        &before.selector.to_string(),
        None,
    );
    Ok(report.render_html(&title))
}
