#!/usr/bin/env bash
# Relabel benchmark, Rust versus Prometheus' Go implementation, side by side.
#
#   bash bench/relabel.sh          # full criterion run, then the comparison
#   QUICK=1 bash bench/relabel.sh  # summary timings only (about a minute)
#
# Workload: 10,000 pod-role targets of 60 labels through the 12 rules of
# shared/alloy-corpus/profiling/seed-otel-collector.alloy (`mixed`, `all_kept`) and through the
# Pyroscope Helm chart's labelmap-heavy annotation rules (`chart`); benches/relabel.rs writes it
# as JSON, the Go program reads the same file, and both print a digest of their output, which
# must agree. Go side: github.com/prometheus/prometheus/model/relabel 2.42 from Debian's
# `prometheus` source package (`apt-get source prometheus`) or, equally, `git archive v2.42.0`
# of a Prometheus clone unpacked as $WORK/src/prometheus-2.42.0; built in GOPATH mode against
# Debian's golang-*-dev packages. The script installs nothing: it names what is missing and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK="${RELABEL_BENCH_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}/relabel-bench}"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

log() { printf '\n==> %s\n' "$*" >&2; }

# 1. Go toolchain, Prometheus' dependencies, and Prometheus' source.
pkgs=(golang-go dpkg-dev golang-github-prometheus-common-dev golang-github-grafana-regexp-dev
      golang-github-cespare-xxhash-dev golang-gopkg-yaml.v2-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# A benchmark installs nothing itself (as the tests do not): it says what to install and stops.
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "install them with: apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
src=$(ls -d "$WORK"/src/prometheus-2.* 2>/dev/null | head -1 || true)
if [ -z "$src" ]; then
  echo "Prometheus' Debian source package is not in $WORK/src." >&2
  echo "fetch it with: mkdir -p '$WORK/src' && cd '$WORK/src' && apt-get source prometheus" >&2
  echo "(apt-get source needs a deb-src entry in /etc/apt/sources.list.d/; or, from a clone:" >&2
  echo " mkdir -p '$WORK/src/prometheus-2.42.0' && git -C <clone> archive v2.42.0 model util | tar -x -C '$WORK/src/prometheus-2.42.0')" >&2
  exit 1
fi

# 2. Build the Go program in GOPATH mode.
log "building bench/relabel-go against $(basename "$src")"
GOPATH_DIR="$WORK/gopath"
mkdir -p "$GOPATH_DIR/src/github.com/prometheus"
ln -sfn "$src" "$GOPATH_DIR/src/github.com/prometheus/prometheus"
ln -sfn "$ROOT/bench/relabel-go" "$GOPATH_DIR/src/relabel-go"
# Upstream sources import xxhash as .../xxhash/v2 (Debian's source package rewrites that);
# Debian installs the v2 code without the suffix.
mkdir -p "$GOPATH_DIR/src/github.com/cespare/xxhash"
ln -sfn /usr/share/gocode/src/github.com/cespare/xxhash "$GOPATH_DIR/src/github.com/cespare/xxhash/v2"
GO111MODULE=off GOPATH="$GOPATH_DIR:/usr/share/gocode" GOFLAGS= \
  go build -o "$WORK/relabel-go" relabel-go

# 3. Rust: the criterion report (skipped with QUICK=1). Also writes the workload JSON.
export RELABEL_BENCH_WORKLOAD="$WORK/workload.json"
: > "$WORK/rust.txt"
: > "$WORK/go.txt"
if [ -z "${QUICK:-}" ]; then
  log "cargo bench --bench relabel (criterion)"
  cargo bench --bench relabel | tee -a "$WORK/rust.txt"
fi

# 4. Summary timings, Rust and Go alternating (the machine is shared: alternating rounds see
#    the same background load), best of the rounds.
ROUNDS="${ROUNDS:-3}"
for i in $(seq "$ROUNDS"); do
  log "round $i/$ROUNDS: Rust"
  RELABEL_BENCH_SUMMARY_ONLY=1 cargo bench --bench relabel 2>/dev/null | grep '^RESULT' | tee -a "$WORK/rust.txt"
  log "round $i/$ROUNDS: Prometheus' relabel ($(go version | cut -d' ' -f3))"
  "$WORK/relabel-go" "$WORK/workload.json" | tee -a "$WORK/go.txt"
done

# 5. Side by side.
python3 - "$WORK/rust.txt" "$WORK/go.txt" <<'PY'
import sys
# What each round must reproduce exactly: a timing is the best of the rounds, but these are the
# output itself, so one round that differs from another is a failure, not a value to pick from.
EXACT = ("rule_applications", "kept", "output_fnv")
bad = False
def parse(path, side):
    global bad
    best = {}
    for line in open(path):
        if not line.startswith("RESULT "):
            continue
        parts = line.split()
        kv = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
        cur = best.setdefault(parts[2], dict(kv))
        for k, v in kv.items():
            if k in EXACT:
                if cur.get(k) != v:
                    print(f"{side} {parts[2]}: {k} differs between rounds ({cur.get(k)} and {v})")
                    bad = True
                continue
            try:
                if float(v) < float(cur[k]):
                    cur[k] = v
            except (ValueError, KeyError):
                pass
    for name, cur in best.items():
        for k in EXACT:
            if k not in cur:
                print(f"{side} {name}: no {k} in its RESULT lines")
                bad = True
    return best
rust, go = parse(sys.argv[1], "rust"), parse(sys.argv[2], "go")
print("\nns per rule application, best of the rounds (lower is better); wall clock and CPU time")
print(f"{'scenario':<10} {'rules run':>9} {'rust process':>13} {'rust clone+process':>19} {'go copy+Process':>16} {'speed-up':>9} {'rust cpu':>9} {'go cpu':>9} {'cpu speed-up':>13}")
for name in rust:
    r, g = rust[name], go.get(name, {})
    for k in ("rule_applications", "kept", "output_fnv"):
        if r.get(k) != g.get(k):
            print(f"{name}: {k} differs (rust {r.get(k)}, go {g.get(k)}): NOT identical output")
            bad = True
    rp, rc = float(r["process_ns_per_rule"]), float(r["clone_process_ns_per_rule"])
    gc = float(g.get("copy_process_ns_per_rule", "nan"))
    rcpu = float(r.get("clone_process_cpu_ns_per_rule", "nan"))
    gcpu = float(g.get("copy_process_cpu_ns_per_rule", "nan"))
    print(f"{name:<10} {r['rule_applications']:>9} {rp:>13.1f} {rc:>19.1f} {gc:>16.1f} {gc / rc:>8.1f}x {rcpu:>9.1f} {gcpu:>9.1f} {gcpu / rcpu:>12.1f}x")
print("\n(speed-up = Go copy+Process / Rust clone+process: both include copying the discovered target;")
print(" CPU time counts every thread of each process, Go's garbage collector included, and not the")
print(" time spent waiting for a core, which other jobs on a shared machine decide)")
if not bad:
    print("output identical (rule applications, kept targets and output digest) in every scenario")
sys.exit(1 if bad else 0)
PY
