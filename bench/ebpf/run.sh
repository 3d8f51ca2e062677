#!/usr/bin/env bash
# pyroscope.ebpf overhead: what `scraper run` costs while it samples two busy processes at
# 97 Hz on every CPU, side by side in one run: without the scraper, with frame-pointer-only
# unwinding (SCRAPER_EBPF_UNWIND=fp, no stack copy), and with the default CFI unwinding (a
# 32 KiB stack copy per sample, unwound in user space with .eh_frame). The issue's budget: the
# scraper's own CPU <= 1 % of one core and RSS <= 150 MiB, BPF time per sample reported. Needs
# root (BPF); set SAMPLER=perf to measure the perf_event_open fallback instead.
#
#   sudo bash bench/ebpf/run.sh            # 4 rounds of 30 s per mode
#   ROUNDS=3 SECONDS_PER_RUN=30 bash bench/ebpf/run.sh
#
# Method (spec ebpf-notes.md §8): two copies of tests/ebpf/busy.c (one per CPU) each report
# spins per CPU-second of their own (CLOCK_PROCESS_CPUTIME_ID), which factors out time they
# were descheduled by other work on the machine. They are built -fomit-frame-pointer, like
# most distribution binaries: the frame-pointer walk then loses their callers (truncated
# stacks), and the CFI unwinder has real work per sample. Each round runs the three modes in
# turn: off, fp, cfi.
#
# * scraper CPU: utime+stime from /proc/<pid>/stat over the measured window (after a warm-up
#   that includes loading BPF and the first symbolization); RSS is VmRSS at the end and VmHWM
#   (peak).
# * BPF time per sample: kernel.bpf_stats_enabled is set to 1 for the run (the old value is put
#   back on exit) and run_time_ns / run_cnt of the scraper's BPF program are read from
#   /proc/<pid>/fdinfo at both ends of the window. run_cnt counts every tick the program sees
#   (idle and non-target ones too), so "ns/run" is its mean cost per tick. The kernel charges
#   this time to the interrupted (busy) processes, so it shows in their slowdown, not in the
#   scraper's CPU.
# * samples/s: the component's samples_total (target samples read from the ring) over the
#   window; unwinder: its debugInfo.unwinder counters at the end of the run (stacks unwound,
#   share complete, share truncated), from http://ADDR/api/v0/web/components.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-4}
RUN=${SECONDS_PER_RUN:-30}
WARMUP=${WARMUP:-5}
WORK=$(mktemp -d)
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo "")
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  if [ -n "$STATS_WAS" ]; then sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

cargo build --release --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/scraper"
gcc -O2 -fomit-frame-pointer -o "$WORK/busy_c" tests/ebpf/busy.c
CLK=$(getconf CLK_TCK)
# Counting BPF run time costs two clock reads per run; on for every mode alike.
sysctl -q -w kernel.bpf_stats_enabled=1

cat > "$WORK/bench.alloy" <<ALLOY
discovery.process "all" { }

discovery.relabel "busy" {
  targets = discovery.process.all.targets
  rule {
    source_labels = ["__meta_process_exe"]
    regex         = "$WORK/busy_c"
    action        = "keep"
  }
  rule {
    target_label = "service_name"
    replacement  = "busy"
  }
}

pyroscope.ebpf "busy" {
  targets     = discovery.relabel.busy.output
  forward_to  = [pyroscope.debug.out.receiver]
  sample_rate = 97
}

pyroscope.debug "out" {
  verbosity = "basic"
}
ALLOY

# Mean spins per CPU-second of the two busy processes' outputs.
busy_rate() { awk '{s += $2; n++} END {printf "%.2f", s / n}' "$WORK/a.out" "$WORK/b.out"; }

status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
. bench/ebpf/lib.sh

# From the component's debug info at the scraper listening on $1: samples_total, then the
# unwinder's stacks, complete and truncated (all reasons); zeros for what it does not say (no
# unwinder in frame-pointer mode) or when it cannot be read.
debug_fields() {
  curl -sf "http://$1/api/v0/web/components/pyroscope.ebpf.busy" | python3 -c '
import json, sys
d = json.load(sys.stdin).get("debugInfo", {})
u = d.get("unwinder") or {}
print(d.get("samples_total", 0), u.get("stacks", 0), u.get("complete", 0),
      sum((u.get("truncated") or {}).values()))' 2>/dev/null || echo "0 0 0 0"
}

# One measured run with the scraper in mode $1 (fp or cfi); appends to $WORK/results and
# prints the row.
run_with_scraper() {
  local mode=$1 round=$2 base=$3 unwind=""
  [ "$mode" = fp ] && unwind=fp
  SCRAPER_EBPF_SAMPLER=${SAMPLER:-} SCRAPER_EBPF_UNWIND=$unwind "$BIN" run "$WORK/bench.alloy" \
    --server.http.listen-addr 127.0.0.1:0 --storage.path "$WORK/data" \
    > "$WORK/scraper.out" 2> "$WORK/scraper.err" &
  local spid=$!
  # Busy processes start first so discovery finds them during the warm-up.
  "$WORK/busy_c" "$((RUN + WARMUP))" > "$WORK/a.out" & local a=$!
  "$WORK/busy_c" "$((RUN + WARMUP))" > "$WORK/b.out" & local b=$!
  sleep "$WARMUP"
  local addr
  # The log line reads `msg="now listening for http traffic" addr=127.0.0.1:PORT`.
  addr=$(grep 'now listening for http traffic' "$WORK/scraper.err" | grep -o 'addr=[^ ]*' | head -1 | sed 's/addr=//')
  local bpf0 info0 t0 s0
  bpf0=$(bpf_prog_stats $spid)
  info0=$(debug_fields "$addr")
  t0=$(cpu_ticks $spid); s0=$(date +%s.%N)
  wait $a $b
  local bpf1 info1 t1 s1 rss peak
  t1=$(cpu_ticks $spid); s1=$(date +%s.%N)
  bpf1=$(bpf_prog_stats $spid)
  info1=$(debug_fields "$addr")
  rss=$(status_kb $spid VmRSS); peak=$(status_kb $spid VmHWM)
  kill $spid; wait $spid 2>/dev/null || true
  grep -q 'process_cpu' "$WORK/scraper.out" || { echo "the scraper produced no profile:"; tail -20 "$WORK/scraper.err"; exit 1; }
  local with
  with=$(busy_rate)
  # round mode base with cpu% rss peak ns/run runs/s samples/s stacks complete truncated
  awk -v r="$round" -v m="$mode" -v base="$base" -v w="$with" -v t="$((t1 - t0))" -v c="$CLK" \
    -v a="$s0" -v b="$s1" -v rss="$rss" -v peak="$peak" -v bpf0="$bpf0" -v bpf1="$bpf1" \
    -v i0="$info0" -v i1="$info1" 'BEGIN {
      secs = b - a
      split(bpf0, p0, " "); split(bpf1, p1, " "); split(i0, x0, " "); split(i1, x1, " ")
      runs = p1[2] - p0[2]
      ns = runs > 0 ? (p1[1] - p0[1]) / runs : 0
      printf "%s %s %s %s %.3f %s %s %.0f %.1f %.1f %d %d %d\n", r, m, base, w, 100 * t / c / secs,
        rss, peak, ns, runs / secs, (x1[1] - x0[1]) / secs, x1[2], x1[3], x1[4]
    }' | tee -a "$WORK/results" | awk '{
      printf "%-6s %-5s %12s %9.2f%% %9s%% %8.1f %8.1f %8s %8s %10s", $1, $2, $4, 100 * (1 - $4 / $3),
        $5, $6 / 1024, $7 / 1024, ($8 > 0 ? $8 : "-"), ($9 > 0 ? $9 : "-"), $10
      if ($11 > 0) printf " %8d %8.1f%% %8.1f%%", $11, 100 * $12 / $11, 100 * $13 / $11
      printf "\n"
    }'
}

printf '%-6s %-5s %12s %10s %10s %8s %8s %8s %8s %10s %8s %9s %9s\n' round mode spins/cpu-s \
  slowdown scraper-cpu rss-MiB peak-MiB ns/run runs/s samples/s stacks complete truncated
: > "$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
  "$WORK/busy_c" "$RUN" > "$WORK/a.out" & a=$!
  "$WORK/busy_c" "$RUN" > "$WORK/b.out" & b=$!
  wait $a $b
  base=$(busy_rate)
  printf '%-6s %-5s %12s\n' "$r" off "$base"
  run_with_scraper fp "$r" "$base"
  run_with_scraper cfi "$r" "$base"
done
echo
awk '{
    m = $2; n[m]++; slow[m] += 1 - $4 / $3; if ($5 > cpu[m]) cpu[m] = $5
    if ($6 > rss[m]) rss[m] = $6; if ($7 > peak[m]) peak[m] = $7
    ns[m] += $8; runs[m] += $9; smp[m] += $10; st[m] = $11; co[m] = $12; tr[m] = $13
  }
  END {
    printf "%-5s %10s %14s %12s %12s %9s %9s %10s %9s %10s\n", "mode", "slowdown", "scraper-cpu",
      "rss-MiB", "peak-MiB", "ns/run", "runs/s", "samples/s", "complete", "truncated"
    split("fp cfi", order, " ")
    for (i = 1; i <= 2; i++) {
      m = order[i]
      if (!(m in n)) continue
      printf "%-5s %9.2f%% %13.3f%% %12.1f %12.1f %9.0f %9.1f %10.1f", m, 100 * slow[m] / n[m],
        cpu[m], rss[m] / 1024, peak[m] / 1024, ns[m] / n[m], runs[m] / n[m], smp[m] / n[m]
      if (st[m] > 0) printf " %8.1f%% %9.1f%%", 100 * co[m] / st[m], 100 * tr[m] / st[m]
      else printf " %9s %10s", "-", "-"
      printf "\n"
    }
    printf "(slowdown: mean over %d rounds, negative = faster; scraper CPU: max, %% of one core;\n", n["cfi"]
    printf " RSS/peak: max; ns/run, runs/s, samples/s: means; unwinder shares: last round)\n"
  }' "$WORK/results"
