#!/usr/bin/env bash
# pyroscope.ebpf overhead: what `scraper run` costs while it samples two busy processes at
# 97 Hz on every CPU (issue 8's budget: scraper CPU <= 0.5% of one core, RSS <= 50 MB, busy
# processes slowed < 1%). Needs root (BPF); set SAMPLER=perf to measure the fallback instead.
#
#   sudo bash bench/ebpf/run.sh            # 4 rounds of 30 s with and without the scraper
#   ROUNDS=2 SECONDS_PER_RUN=20 bash bench/ebpf/run.sh
#
# Method (spec ebpf-notes.md §8): two copies of tests/ebpf/busy.c (one per CPU) each report
# spins per CPU-second of their own (CLOCK_PROCESS_CPUTIME_ID), which factors out time they
# were descheduled by other work on the machine. Runs alternate without and with the scraper.
# The scraper's CPU is utime+stime from /proc/<pid>/stat over the measured window (after a
# warm-up that includes loading BPF and the first symbolization); RSS is VmRSS at the end and
# VmHWM (peak). BPF program time is charged by the kernel to the interrupted (busy) processes,
# so it shows up in their slowdown, not in the scraper's CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-4}
RUN=${SECONDS_PER_RUN:-30}
WARMUP=${WARMUP:-5}
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

cargo build --release --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/scraper"
gcc -O2 -fno-omit-frame-pointer -o "$WORK/busy_c" tests/ebpf/busy.c
CLK=$(getconf CLK_TCK)

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

# Runs two busy processes for RUN seconds; prints their mean spins per CPU-second.
busy_pair() {
  "$WORK/busy_c" "$RUN" > "$WORK/a.out" & local a=$!
  "$WORK/busy_c" "$RUN" > "$WORK/b.out" & local b=$!
  wait $a $b
  awk '{s += $2; n++} END {printf "%.2f", s / n}' "$WORK/a.out" "$WORK/b.out"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

printf '%-6s %-10s %12s %12s %10s %10s\n' round scraper spins/cpu-s scraper-cpu% rss-MB peak-MB
: > "$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
  base=$(busy_pair)
  printf '%-6s %-10s %12s\n' "$r" off "$base"

  SCRAPER_EBPF_SAMPLER=${SAMPLER:-} "$BIN" run "$WORK/bench.alloy" \
    --server.http.listen-addr 127.0.0.1:0 --storage.path "$WORK/data" \
    > "$WORK/scraper.out" 2> "$WORK/scraper.err" &
  spid=$!
  # Busy processes start first so discovery finds them during the warm-up.
  "$WORK/busy_c" "$((RUN + WARMUP))" > "$WORK/a.out" & a=$!
  "$WORK/busy_c" "$((RUN + WARMUP))" > "$WORK/b.out" & b=$!
  sleep "$WARMUP"
  t0=$(cpu_ticks $spid); s0=$(date +%s.%N)
  wait $a $b
  t1=$(cpu_ticks $spid); s1=$(date +%s.%N)
  rss=$(status_kb $spid VmRSS); peak=$(status_kb $spid VmHWM)
  kill $spid; wait $spid 2>/dev/null || true
  with=$(awk '{s += $2; n++} END {printf "%.2f", s / n}' "$WORK/a.out" "$WORK/b.out")
  cpu=$(awk -v t="$((t1 - t0))" -v c="$CLK" -v a="$s0" -v b="$s1" 'BEGIN {printf "%.3f", 100 * t / c / (b - a)}')
  awk -v r="$r" -v w="$with" -v c="$cpu" -v m="$rss" -v p="$peak" \
    'BEGIN {printf "%-6s %-10s %12s %12s %10.1f %10.1f\n", r, "on", w, c, m / 1024, p / 1024}'
  echo "$base $with $cpu $rss $peak" >> "$WORK/results"
  grep -q 'process_cpu' "$WORK/scraper.out" || { echo "the scraper produced no profile:"; tail -20 "$WORK/scraper.err"; exit 1; }
done
awk '{b += $1; w += $2; if ($3 > c) c = $3; if ($4 > m) m = $4; if ($5 > p) p = $5; n++}
  END {
    printf "\nbusy slowdown: %.2f%% (mean over %d rounds; negative = faster)\n", 100 * (1 - w / b), n
    printf "scraper CPU: max %.3f%% of one core; RSS max %.1f MB; peak (VmHWM) max %.1f MB\n", c, m / 1024, p / 1024
  }' "$WORK/results"
