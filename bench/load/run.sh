#!/usr/bin/env bash
# The scraper under load (docs/PERFORMANCE.md, "pyroscope.scrape at scale" and "Load"):
# TARGETS (default 1,000) targets served by one local Go fixture (bench/load/fixture, one port,
# a path prefix per target), 5 profile types each (Alloy's defaults: allocs, block, goroutine,
# mutex, CPU with seconds=14), scrape_interval 15 s, profiles forwarded by pyroscope.write to a
# counting receiver (bench/load/receiver). Reports the scraper's CPU per scraped profile, RSS
# per target (RSS minus that of the same process with no targets), scrape lateness p50/p99
# (when each scrape started after its scheduled time), missed scrapes, and the profiles the
# receiver got.
#
# Profiles served are real: allocs, goroutine and a 10 s CPU profile captured on the first run
# from Debian's Prometheus (on 127.0.0.1 with a throw-away TSDB, ten self-scrape jobs at 1 s,
# recording rules, a query loop during the CPU profile, CAPTURE_WARMUP=90 s after start), block
# and mutex from tests/data/pprof (goapp; Prometheus does not enable them). Delete
# $SCRAPE_BENCH_DATA/cpu.pb.gz to capture again.
#
# Also open file descriptors per target (the scraper's, minus those it holds with no targets).
#
#   bench/load/run.sh                  # TARGETS=1000 WARMUP=45 WINDOW=120
#   TARGETS=5000 bench/load/run.sh
#   bench/load/run.sh --done-when      # issue 23's Load line: 8,000 targets, each figure
#                                      # checked against its bound (PASS/FAIL lines)
# SCRAPER=path runs that binary instead of building one (the target dir may be shared).
# Everything goes to $SCRAPE_BENCH_DATA (default target/scrape-bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
done_when=0
if [ "${1:-}" = "--done-when" ]; then
  done_when=1
  : "${TARGETS:=8000}" "${WARMUP:=60}" "${WINDOW:=120}" "${SELF_PROFILE:=0}"
fi
targets="${TARGETS:-1000}"
warmup="${WARMUP:-45}"
window="${WINDOW:-120}"
data="${SCRAPE_BENCH_DATA:-${CARGO_TARGET_DIR:-target}/scrape-bench}"
mkdir -p "$data"
data="$(cd "$data" && pwd)"
export GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS=

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 300); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.2; done; echo "no answer from $1" >&2; return 1; }

if [ -n "${SCRAPER:-}" ]; then
  scraper="$SCRAPER"
else
  cargo build --release --bin scraper
  scraper="${CARGO_TARGET_DIR:-target}/release/scraper"
fi
go build -o "$data/fixture" bench/load/fixture/main.go
go build -o "$data/receiver" bench/load/receiver/main.go

if [ ! -f "$data/cpu.pb.gz" ]; then
  echo "==> capturing profiles from Debian's prometheus"
  prom="$(command -v prometheus || true)"
  [ -n "$prom" ] || { echo "prometheus not installed (apt-get install -y prometheus)" >&2; exit 1; }
  pp="$(free_port)"
  rm -rf "$data/prom" && mkdir -p "$data/prom"
  # Ten self-scrape jobs at 1 s and two recording rules, as in docs/performance-anchors §2.1,
  # so that its heap and CPU profiles have the sizes of a real busy service.
  {
    printf 'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yml]\nscrape_configs:\n'
    for j in $(seq 1 10); do printf '  - job_name: self%s\n    static_configs:\n      - targets: [127.0.0.1:%s]\n' "$j" "$pp"; done
  } >"$data/prom/prometheus.yml"
  printf 'groups:\n  - name: r\n    rules:\n      - record: job:up:sum\n        expr: sum by (job) (up)\n      - record: job:samples:rate\n        expr: sum by (job) (rate(scrape_samples_scraped[1m]))\n' >"$data/prom/rules.yml"
  "$prom" --config.file="$data/prom/prometheus.yml" --storage.tsdb.path="$data/prom/tsdb" \
    --web.listen-address="127.0.0.1:$pp" >"$data/prom/log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$pp/-/ready"
  sleep "${CAPTURE_WARMUP:-90}"
  ( for _ in $(seq 1 200); do curl -fsS -o /dev/null "http://127.0.0.1:$pp/api/v1/query?query=rate(prometheus_http_requests_total%5B1m%5D)" || true; sleep 0.05; done ) &
  load=$!
  curl -fsS -o "$data/cpu.pb.gz.tmp" "http://127.0.0.1:$pp/debug/pprof/profile?seconds=10"
  curl -fsS -o "$data/allocs.pb.gz" "http://127.0.0.1:$pp/debug/pprof/allocs"
  curl -fsS -o "$data/goroutine.pb.gz" "http://127.0.0.1:$pp/debug/pprof/goroutine"
  wait "$load"
  kill "${pids[-1]}"
  mv "$data/cpu.pb.gz.tmp" "$data/cpu.pb.gz"
fi
cp tests/data/pprof/goapp-block-2.pb.gz "$data/block.pb.gz"
cp tests/data/pprof/goapp-mutex-2.pb.gz "$data/mutex.pb.gz"

echo "==> fixture with $targets targets"
# PER_TARGET_ADDRESS=1 (the default with --done-when): every target on an address of its own
# (127.1.x.y, one port), so that connections are pooled per target as with pods; fixtures of
# at most 4,000 targets each, for their descriptor limit.
per_target="${PER_TARGET_ADDRESS:-$done_when}"
fixture_pids=()
port=0
if [ "$per_target" = 1 ]; then
  for ((from = 0; from < targets; from += 4000)); do
    to=$((from + 4000 > targets ? targets : from + 4000))
    out="$data/fixture-$from.addr"
    # Removed first: the redirect below truncates it only once the child runs, and a
    # previous run's "listening" line must not be read in between.
    rm -f "$out"
    "$data/fixture" -data "$data" -targets "$targets" -per-target-address -port "$port" -from "$from" -to "$to" \
      >"$out" 2>"$data/fixture-$from.log" &
    fixture_pids+=($!)
    pids+=($!)
    for _ in $(seq 1 300); do grep -qs listening "$out" && break; sleep 0.1; done
    port="$(sed -n 's/^targets on port //p' "$out")"
    [ "$from" = 0 ] && cp "$out" "$data/fixture.addr"
  done
else
  rm -f "$data/fixture.addr"
  "$data/fixture" -data "$data" -targets "$targets" >"$data/fixture.addr" 2>"$data/fixture.log" &
  fixture_pids+=($!)
  pids+=($!)
  for _ in $(seq 1 100); do grep -q listening "$data/fixture.addr" && break; sleep 0.1; done
  cat "$data/fixture.log"
fi
addr="$(sed -n 's/^listening on //p' "$data/fixture.addr")"

rm -f "$data/receiver.addr"
"$data/receiver" >"$data/receiver.addr" 2>"$data/receiver.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q listening "$data/receiver.addr" && break; sleep 0.1; done
recv="$(sed -n 's/^listening on //p' "$data/receiver.addr")"

python3 - "$addr" "$targets" "$data" "$recv" "${TYPES:-}" "$per_target" "$port" <<'PY'
import sys
addr, n, data = sys.argv[1], int(sys.argv[2]), sys.argv[3]
recv = sys.argv[4]
per_target, port = sys.argv[6] == "1", sys.argv[7]
def address(i):
    return "127.1.%d.%d:%s" % (i // 250, i % 250 + 1, port) if per_target else addr
# TYPES=process_cpu,memory,... enables only those profile types (to split memory by type).
only = [t for t in sys.argv[5].split(",") if t]
types = ""
if only:
    types = "  profiling_config {\n" + "".join(
        "    profile.%s {\n      enabled = %s\n    }\n" % (t, "true" if t in only else "false")
        for t in ["block", "goroutine", "memory", "mutex", "process_cpu"]) + "  }\n"
head = 'pyroscope.write "discard" {\n  endpoint {\n    url = "http://%s"\n  }\n}\n\n' % recv
def scrape(targets):
    return head + 'pyroscope.scrape "bench" {\n' + types + '  targets = [\n' + ''.join(
        '    {"__address__" = "%s", "__profile_path_prefix__" = "/t/%d", "service_name" = "svc-%d", "pod" = "pod-%d"},\n' % (address(i), i, i % 50, i)
        for i in range(targets)) + '  ]\n  forward_to = [pyroscope.write.discard.receiver]\n}\n'
open(data + "/bench.alloy", "w").write(scrape(n))
open(data + "/empty.alloy", "w").write(scrape(0).replace("targets = [\n  ]", "targets = []"))
PY

ticks="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
fixture_ticks() { local t=0; for p in "${fixture_pids[@]}"; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fd_count() { ls "/proc/$1/fd" | wc -l; }
# Sums over the scrape loops of the debug info: scrapes, failures, forwarded, missed, loops.
loops() {
  curl -fsS "http://$1/api/v0/web/components/pyroscope.scrape.bench" | python3 -c '
import json, sys
t = json.load(sys.stdin)["debugInfo"]["targets"]
print(sum(x["scrapes_total"] for x in t), sum(x["failures_total"] for x in t), sum(x["forwarded_total"] for x in t), sum(x["missed_total"] for x in t), len(t))'
}
# The lateness histogram's cumulative buckets, as "le:count,le:count,...".
lateness() {
  curl -fsS "http://$1/metrics" | python3 -c '
import sys
b = []
for l in sys.stdin:
    if l.startswith("pyroscope_scrape_lateness_seconds_bucket{"):
        le = l.split("le=\"")[1].split("\"")[0]
        b.append("%s:%s" % (le, l.rsplit(" ", 1)[1].strip()))
print(",".join(b))'
}
run_scraper() { # config port -> pid
  "$scraper" run "$data/$1" --server.http.listen-addr "127.0.0.1:$2" --storage.path "$data/storage-$2" \
    >/dev/null 2>"$data/scraper-$2.log" &
  echo $!
}

echo "==> baseline: same config, no targets"
p0="$(free_port)"
pid0="$(run_scraper empty.alloy "$p0")"
pids+=("$pid0")
wait_http "http://127.0.0.1:$p0/-/ready"
sleep 10
rss0="$(rss_kib "$pid0")"
fds0="$(fd_count "$pid0")"
kill "$pid0"

echo "==> $targets targets x 5 types: warm-up ${warmup}s, then ${window}s measured"
p1="$(free_port)"
pid="$(run_scraper bench.alloy "$p1")"
pids+=("$pid")
wait_http "http://127.0.0.1:$p1/-/ready"
sleep "$warmup"
read -r s0 f0 w0 m0 n <<<"$(loops "127.0.0.1:$p1")"
l0="$(lateness "127.0.0.1:$p1")"
r0="$(curl -fsS "http://$recv/count")"
c0="$(cpu_ticks "$pid")"; fc0="$(fixture_ticks)"
# Descriptors sampled through the window (steady state: the median; and the maximum).
fd_samples=()
end=$((SECONDS + window))
while [ "$SECONDS" -lt "$end" ]; do
  fd_samples+=("$(fd_count "$pid")")
  sleep 5
done
c1="$(cpu_ticks "$pid")"; fc1="$(fixture_ticks)"
read -r s1 f1 w1 m1 _ <<<"$(loops "127.0.0.1:$p1")"
l1="$(lateness "127.0.0.1:$p1")"
r1="$(curl -fsS "http://$recv/count")"
rss="$(rss_kib "$pid")"
hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")"
curl -fsS "http://127.0.0.1:$p1/metrics" | grep -E '^pyroscope_scrape_(errors_total|delta_state_bytes|targets)|^pyroscope_write_(queue_bytes|queue_profiles|dropped_profiles_total)' || true
rm -f "$data/scraper-cpu.txt"
if [ "${SELF_PROFILE:-1}" = 1 ]; then
  # After the measured window: where the CPU goes, from scraper's own CPU profile.
  curl -fsS -o "$data/scraper-cpu.pb.gz" "http://127.0.0.1:$p1/debug/pprof/profile?seconds=30"
  "$scraper" pprof info "$data/scraper-cpu.pb.gz" --top 25 | sed -n '/^Top/,$p' >"$data/scraper-cpu.txt" || true
fi

python3 - <<PY
ticks = $ticks
done_when = $done_when
fd_samples = sorted([${fd_samples[*]/%/,}])
fds_median = fd_samples[len(fd_samples) // 2]
checks = []
scrapes, failures, forwarded = $s1 - $s0, $f1 - $f0, $w1 - $w0
cpu = ($c1 - $c0) / ticks
fcpu = ($fc1 - $fc0) / ticks
print(f"loops: $n; window ${window}s: {scrapes} scrapes ({scrapes / $window:.1f}/s), {failures} failed, {forwarded} forwarded")
print(f"scraper CPU: {cpu:.2f}s = {cpu / $window * 100:.1f}% of a core; {cpu * 1000 / max(scrapes, 1):.3f} ms per scraped profile")
checks.append(("CPU per profile <= 0.25 ms", cpu * 1000 / max(scrapes, 1) <= 0.25))
print(f"fixture CPU: {fcpu:.2f}s ({fcpu * 1000 / max(scrapes, 1):.3f} ms per profile served)")
print(f"RSS: {$rss / 1024:.1f} MiB with $targets targets (peak {$hwm / 1024:.1f} MiB), {$rss0 / 1024:.1f} MiB without; "
      f"{($rss - $rss0) / $targets:.1f} KiB per target")
checks.append(("RSS per target <= 64 KiB", ($rss - $rss0) / $targets <= 64))
print(f"open fds: median {fds_median}, max {fd_samples[-1]} with $targets targets, $fds0 without; "
      f"{(fds_median - $fds0) / $targets:.2f} per target")
checks.append(("fds per target <= 1.3", (fds_median - $fds0) / $targets <= 1.3))
print(f"missed scrapes (a loop's previous scrape still running): {$m1 - $m0}")
checks.append(("0 missed scrapes", $m1 - $m0 == 0 and failures == 0))
received = int("$r1".split()[0]) - int("$r0".split()[0])
print(f"receiver: {received} profiles pushed in the window ({received / $window:.1f}/s)")
# Lateness quantiles from the histogram's growth over the window (upper bucket bounds).
def parse(s):
    return [(float(le) if le != "+Inf" else float("inf"), float(c)) for le, c in (x.split(":") for x in s.split(",") if x)]
a, b = parse("$l0"), parse("$l1")
d = [(le, c1 - c0) for (le, c1), (_, c0) in zip(b, a)]
total = d[-1][1] if d else 0
def q(p):
    for le, c in d:
        if c >= p * total:
            return le
    return float("inf")
print(f"scrape lateness: p50 <= {q(0.5) * 1000:.0f} ms, p99 <= {q(0.99) * 1000:.0f} ms ({int(total)} scrapes started)")
checks.append(("lateness p99 < 1 s", q(0.99) < 1.0))
if done_when:
    for name, ok in checks:
        print(("PASS  " if ok else "FAIL  ") + name)
PY
if [ -f "$data/scraper-cpu.txt" ]; then
  echo "==> scraper's own CPU profile (30 s after the window)"
  cat "$data/scraper-cpu.txt"
fi
