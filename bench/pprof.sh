#!/usr/bin/env bash
# The pprof delta benchmark, Rust and Go side by side in one run (docs/PERFORMANCE.md):
#   1. builds bench/pprofgen and bench/pprofgo (google/pprof from Debian's
#      golang-github-google-pprof-dev, GOPATH mode) and generates the large heap pairs;
#   2. checks that the three implementations produce the same delta (tests/go/pprofcheck);
#   3. runs REPS (default 3) interleaved repetitions of: Rust (`cargo bench --bench pprof`),
#      Go Merge-based delta, Go hash-map delta, each on every pair;
#   4. prints every line and, per pair and implementation, the median CPU ms per round.
# Inputs: the generated narrow/wide pairs plus the real goapp and Prometheus heap pairs from
# bench/pprof-data. Everything goes to $PPROF_BENCH_DATA (default target/pprof-bench).
#
#   bench/pprof.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
data="${PPROF_BENCH_DATA:-${CARGO_TARGET_DIR:-target}/pprof-bench}"
mkdir -p "$data"
data="$(cd "$data" && pwd)"
export GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS=

go build -o "$data/pprofgen" bench/pprofgen/main.go
go build -o "$data/pprofgo" bench/pprofgo/main.go
go build -o "$data/pprofcheck" tests/go/pprofcheck/main.go
if [ ! -f "$data/wide-heap-2.pb.gz" ]; then
  "$data/pprofgen" -out "$data"
fi
cp bench/pprof-data/*.pb.gz "$data/"   # the real small pairs
pairs=(goapp-heap prometheus-heap narrow-heap wide-heap)

# Build once, then run the binaries directly: the tree may change while the benchmark runs.
bench_bin="$(cargo bench --bench pprof --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1)"
[ -x "$bench_bin" ] || { echo "building the Rust benchmark failed" >&2; exit 1; }
cargo build --release --bin scraper
scraper_bin="${CARGO_TARGET_DIR:-target}/release/scraper"
echo "==> same delta from all three (pprofcheck: google/pprof's own delta per stack)"
for p in "${pairs[@]}"; do
  old="$data/$p-1.pb.gz" new="$data/$p-2.pb.gz"
  "$scraper_bin" pprof delta "$old" "$new" -o "$data/$p-rust.pb.gz" 2>/dev/null
  for algo in merge map; do
    "$data/pprofgo" -algo "$algo" -n 1 -o "$data/$p-go-$algo.pb.gz" "$old" "$new" >/dev/null
  done
  for impl in rust go-merge go-map; do
    printf '%-16s %-9s ' "$p" "$impl"
    "$data/pprofcheck" delta "$old" "$new" "$data/$p-$impl.pb.gz"
  done
done

results="$data/results.txt"
: > "$results"
for r in $(seq 1 "$reps"); do
  echo "==> repetition $r of $reps"
  for p in "${pairs[@]}"; do
    PPROF_BENCH_DATA="$data" PPROF_BENCH_ONLY="$p" "$bench_bin" | tee -a "$results"
  done
  for algo in merge map; do
    for p in "${pairs[@]}"; do
      n=5
      case "$p" in goapp-*|prometheus-*) n=50 ;; esac
      "$data/pprofgo" -algo "$algo" -n "$n" -name "$p" "$data/$p-1.pb.gz" "$data/$p-2.pb.gz" | tee -a "$results"
    done
  done
done

echo "==> medians over the repetitions of the per-round medians"
med() { # lines field
  echo "$1" | sed -n "s/.* $2=\([0-9.]*\).*/\1/p" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
for p in "${pairs[@]}"; do
  declare -A cpu=()
  for impl in rust-l6 rust-l1 go-merge go-map; do
    lines="$(grep "^$p $impl " "$results" || true)"
    [ -n "$lines" ] || continue
    cpu[$impl]="$(med "$lines" cpu_ms)"
    printf '%-16s %-9s cpu_ms %9s  wall_ms %9s  alloc_mb %7s  peak_rss_mb %7s  out_gz %8s' \
      "$p" "$impl" "${cpu[$impl]}" "$(med "$lines" wall_ms)" "$(med "$lines" alloc_mb)" \
      "$(med "$lines" peak_rss_mb)" "$(med "$lines" out_gz)"
    printf '  state_kb %8s' "$(med "$lines" state_kb)"
    case "$impl" in rust-*) printf ' (%s%% of raw)' "$(med "$lines" state_pct)" ;; esac
    echo
  done
  awk -v p="$p" -v r6="${cpu[rust-l6]}" -v r1="${cpu[rust-l1]}" -v gm="${cpu[go-merge]}" -v gh="${cpu[go-map]}" \
    'BEGIN { printf "%-16s speed-up (CPU): vs go-merge %.1fx (level 1: %.1fx), vs go-map %.1fx (level 1: %.1fx)\n", p, gm / r6, gm / r1, gh / r6, gh / r1 }'
  unset cpu
done
