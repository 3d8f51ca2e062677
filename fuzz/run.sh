#!/usr/bin/env bash
# Runs fuzz targets for SECONDS each (default 60) from the committed seeds in
# fuzz/corpus/<target>: all of them (decode delta syntax relabel push_response receive querier), or the ones
# named after SECONDS. New inputs go to a temporary corpus, so the committed one stays as it
# is; a crash leaves its input in fuzz/artifacts/<target>/ and fails the script. The syntax
# target also reads the shared Alloy corpus (../shared/alloy-corpus/valid, read-only) when it
# is there. See fuzz/README.md.
#
# cargo-fuzz needs nightly-only rustc flags (sanitizers, coverage); RUSTC_BOOTSTRAP=1 lets the
# stable toolchain accept them. Installs cargo-fuzz when it is missing; libFuzzer itself is
# compiled from source by libfuzzer-sys, which needs a C++ compiler (g++). The first build
# compiles the whole dependency tree instrumented (~10 minutes on 2 cores); later runs reuse it.
#
# Extra libFuzzer options go in FUZZ_ARGS (e.g. "-fork=2 -ignore_crashes=1" for long runs);
# extra cargo-fuzz options in FUZZ_CARGO_ARGS (e.g. "--no-trace-compares": comparison tracing
# takes most of the time of the regex-heavy targets, see fuzz/README.md).
# FUZZ_SANITIZER=none builds without AddressSanitizer, 2-4x faster: what the long runs use, since
# the fuzzed code has no unsafe of its own (panics, overflow checks, timeouts and the RSS limit
# still stop the run). It builds into a separate target directory so the ASan build stays.
#
#   fuzz/run.sh 60
#   fuzz/run.sh 3600 syntax
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
shift || true
all=(decode delta syntax relabel push_response receive querier)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for target in "${targets[@]}"; do
  if [[ " ${all[*]} " != *" $target "* ]]; then
    echo "unknown fuzz target $target (known: ${all[*]})" >&2
    exit 2
  fi
done
export RUSTC_BOOTSTRAP=1
# Instrumented builds must not share artifacts with the main build: under CI's shared
# CARGO_TARGET_DIR use a subdirectory of it, else cargo-fuzz's default (fuzz/target).
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR="$CARGO_TARGET_DIR/fuzz"
fi
sanitizer="${FUZZ_SANITIZER:-address}"
if [ "$sanitizer" != address ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/sanitizer-$sanitizer"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
  echo "==> fuzz $target for ${seconds}s"
  mkdir -p "$work/$target"
  corpora=("$work/$target" "corpus/$target")
  # Extra seeds, only read: the first corpus directory is the one libFuzzer writes to.
  if [ "$target" = syntax ] && [ -d ../../shared/alloy-corpus/valid ]; then
    corpora+=(../../shared/alloy-corpus/valid)
  fi
  # -O: optimized (with debug assertions, -a, so integer overflow also crashes).
  # Inputs up to 16 KiB cover the real seeds; 2 GiB RSS flags unbounded allocation.
  # shellcheck disable=SC2086
  cargo fuzz run -O -a -s "$sanitizer" ${FUZZ_CARGO_ARGS:-} "$target" "${corpora[@]}" -- \
    -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    ${FUZZ_ARGS:-}
done
