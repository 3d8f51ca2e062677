# Shared by the bench/ebpf/*.sh scripts (sourced): CPU ticks of a process, and the summed
# run time and run count of the BPF programs a process holds (needs kernel.bpf_stats_enabled=1).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
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
