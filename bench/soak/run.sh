#!/usr/bin/env bash
# The one-hour soak of docs/PERFORMANCE.md ("Soak"): tests/soak.rs's ignored `soak` test with
# the release binary. SOAK_TARGETS pods (default 1,000) discovered from the fake API server,
# 1 % of them replaced every 5 s, five profile types each from the bench/load Go fixture,
# written to the bench/load counting receiver, for SOAK_SECONDS (default 3600). It fails on
# duplicate scrapes, loops that outlive their pods, missed scrapes, growing descriptors or
# threads, or an RSS trend; it prints a summary and writes the samples (every 10 s: RSS, open
# descriptors, threads, scrape loops) to $SOAK_REPORT (default target/soak.csv).
#
#   bench/soak/run.sh
#   SOAK_SECONDS=600 SOAK_TARGETS=200 bench/soak/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --bin scraper
export SOAK_BIN="$target/release/scraper"
export SOAK_REPORT="${SOAK_REPORT:-$target/soak.csv}"
export SOAK_SECONDS="${SOAK_SECONDS:-3600}" SOAK_TARGETS="${SOAK_TARGETS:-1000}"
export SCRAPER_REQUIRE_GO=1
cargo test --test soak -- --ignored --exact soak --nocapture
