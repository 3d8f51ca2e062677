# Shared by the bench/ebpf/*.sh scripts (sourced): CPU ticks of a process, the summed run time
# and run count of the BPF programs a process holds (needs kernel.bpf_stats_enabled=1), and
# starting the scraper on one pyroscope.ebpf block that forwards to pyroscope.debug.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# "run_time_ns run_cnt" summed over the BPF programs process $1 holds (each counted once,
# however many fds refer to it); "0 0" without any (the perf fallback).
bpf_prog_stats() {
  local pid=$1 fd info id seen=" " rt=0 rc=0
  for fd in /proc/"$pid"/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "anon_inode:bpf-prog" ] || continue
    info=/proc/$pid/fdinfo/${fd##*/}
    id=$(awk '$1 == "prog_id:" {print $2}' "$info")
    case "$seen" in *" $id "*) continue ;; esac
    seen="$seen$id "
    rt=$((rt + $(awk '$1 == "run_time_ns:" {print $2}' "$info")))
    rc=$((rc + $(awk '$1 == "run_cnt:" {print $2}' "$info")))
  done
  echo "$rt $rc"
}

# Writes $WORK/bench.alloy: the block in $1 (forwarding to pyroscope.debug.out.receiver) and
# that pyroscope.debug; starts "$BIN" on it in the background, its pid in SCRAPER_PID and its
# output in $WORK/scraper.log. Extra environment for the scraper comes from the caller's.
start_scraper() {
  printf '%s\n\npyroscope.debug "out" {\n  verbosity = "basic"\n}\n' "$1" > "$WORK/bench.alloy"
  "$BIN" run "$WORK/bench.alloy" --server.http.listen-addr 127.0.0.1:0 \
    --storage.path "$WORK/data" > "$WORK/scraper.log" 2>&1 &
  SCRAPER_PID=$!
}
