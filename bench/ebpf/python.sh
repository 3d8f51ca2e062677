#!/usr/bin/env bash
# pyroscope.ebpf's Python frame walk: what it costs, side by side with native-only mode. Two
# CPython processes run tests/ebpf/python/hot.py (busy on both cores); the scraper samples them
# at 97 Hz, once with `python_enabled = true` and once with `false`. Needs root (BPF).
#
#   sudo bash bench/ebpf/python.sh                  # 3 rounds of 30 s per mode
#   ROUNDS=1 SECONDS_PER_RUN=20 PYTHON=/usr/bin/python3.11 bash bench/ebpf/python.sh
#
# Reported per mode: the scraper's CPU (utime+stime, % of one core) and its BPF programs'
# run_time_ns / run_cnt (ns per sample, and % of one core).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-3}
RUN=${SECONDS_PER_RUN:-30}
WARMUP=${WARMUP:-10}
PYTHON=${PYTHON:-/usr/bin/python3.11}
BIN=${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/scraper}
WORK=$(mktemp -d)
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo "")
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  if [ -n "$STATS_WAS" ]; then sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

[ -x "$BIN" ] || cargo build --release --quiet
. bench/ebpf/lib.sh
CLK=$(getconf CLK_TCK)
sysctl -q -w kernel.bpf_stats_enabled=1
"$PYTHON" tests/ebpf/python/hot.py > /dev/null &
A=$!
"$PYTHON" tests/ebpf/python/hot.py > /dev/null &
B=$!

run() {
  local walk=$1
  start_scraper "$(cat <<ALLOY
pyroscope.ebpf "py" {
  targets        = [{"__process_pid__" = "$A", "service_name" = "a"}, {"__process_pid__" = "$B", "service_name" = "b"}]
  forward_to     = [pyroscope.debug.out.receiver]
  python_enabled = $walk
}
ALLOY
)"
  local pid=$SCRAPER_PID
  sleep "$WARMUP"
  local t0 b0 t1 b1
  t0=$(cpu_ticks $pid); b0=$(bpf_prog_stats $pid)
  sleep "$RUN"
  t1=$(cpu_ticks $pid); b1=$(bpf_prog_stats $pid)
  kill $pid; wait $pid 2>/dev/null || true
  set -- $b0 $b1
  awk -v w="$walk" -v dt=$((t1 - t0)) -v rt=$(($3 - $1)) -v rc=$(($4 - $2)) -v s="$RUN" \
    -v clk="$CLK" 'BEGIN {
    printf "python_enabled %-5s scraper CPU %5.2f%%  BPF %5.0f runs/s %6.0f ns/run %5.2f%% of a core\n",
      w, 100 * dt / clk / s, rc / s, (rc ? rt / rc : 0), 100 * rt / 1e9 / s }'
}

for round in $(seq "$ROUNDS"); do
  echo "round $round"
  for walk in false true; do run "$walk"; done
done
