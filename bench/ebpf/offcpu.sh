#!/usr/bin/env bash
# pyroscope.ebpf off-CPU overhead: what `off_cpu_threshold` costs on a request/response
# workload (bench/ebpf/pingpong.c: PAIRS client/server thread pairs, one round trip every
# PAUSE_US per pair), side by side in one run: off-CPU off (threshold 0), on with every
# switch-out chosen (threshold 1, the default 1 ms minimum), and on at threshold 0.1.
# Needs root (BPF).
#
#   sudo bash bench/ebpf/offcpu.sh                  # 3 rounds of 20 s per mode
#   ROUNDS=1 SECONDS_PER_RUN=10 PAIRS=8 PAUSE_US=200 bash bench/ebpf/offcpu.sh
#
# Reported per mode:
# * ctxt/s: the host's context switches a second over the window (/proc/stat `ctxt`), the
#   workload's and everything else's;
# * scraper CPU: utime+stime of the scraper (% of one core);
# * BPF: run_time_ns / run_cnt of the scraper's BPF programs (kernel.bpf_stats_enabled is 1 for
#   the run), as ns per run and as % of one core. The off-CPU program runs on every context
#   switch of the host and is charged to the switching tasks, not to the scraper, so it is
#   reported apart; the CPU sampler's runs are in the same sum (97 Hz x CPUs, ~4 us each).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-3}
RUN=${SECONDS_PER_RUN:-20}
WARMUP=${WARMUP:-5}
PAIRS=${PAIRS:-4}
PAUSE_US=${PAUSE_US:-500}
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
gcc -O2 -pthread -o "$WORK/pingpong" bench/ebpf/pingpong.c
CLK=$(getconf CLK_TCK)
sysctl -q -w kernel.bpf_stats_enabled=1
"$WORK/pingpong" "$PAIRS" "$PAUSE_US" &
TARGET=$!

ctxt() { awk '$1 == "ctxt" {print $2}' /proc/stat; }
. bench/ebpf/lib.sh

run() {
  local threshold=$1
  start_scraper "$(cat <<ALLOY
pyroscope.ebpf "pp" {
  targets           = [{"__process_pid__" = "$TARGET", "service_name" = "pingpong"}]
  forward_to        = [pyroscope.debug.out.receiver]
  off_cpu_threshold = $threshold
}
ALLOY
)"
  local pid=$SCRAPER_PID
  sleep "$WARMUP"
  local t0 c0 b0 t1 c1 b1
  t0=$(cpu_ticks $pid); c0=$(ctxt); b0=$(bpf_prog_stats $pid)
  sleep "$RUN"
  t1=$(cpu_ticks $pid); c1=$(ctxt); b1=$(bpf_prog_stats $pid)
  kill $pid; wait $pid 2>/dev/null || true
  set -- $b0 $b1
  awk -v th="$threshold" -v dt=$((t1 - t0)) -v dc=$((c1 - c0)) -v rt=$(($3 - $1)) \
    -v rc=$(($4 - $2)) -v s="$RUN" -v clk="$CLK" 'BEGIN {
    printf "threshold %-4s ctxt/s %8.0f  scraper CPU %5.2f%%  BPF %7.0f runs/s %6.0f ns/run %5.2f%% of a core\n",
      th, dc / s, 100 * dt / clk / s, rc / s, (rc ? rt / rc : 0), 100 * rt / 1e9 / s }'
}

for round in $(seq "$ROUNDS"); do
  echo "round $round"
  for threshold in 0 1 0.1; do run "$threshold"; done
done
