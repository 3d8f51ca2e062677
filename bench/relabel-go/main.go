// Command relabel-go runs the relabel benchmark workload written by `cargo bench --bench
// relabel` (RELABEL_BENCH_WORKLOAD=<file>) through Prometheus' own relabel implementation
// (github.com/prometheus/prometheus/model/relabel, from Debian's prometheus source package),
// so Rust and Go are measured on identical targets and rules. Built in GOPATH mode by
// bench/relabel.sh; stdlib plus Prometheus' packages only.
//
// Usage: relabel-go <workload.json>
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

type ruleJSON struct {
	SourceLabels []string `json:"source_labels"`
	Separator    string   `json:"separator"`
	Regex        string   `json:"regex"`
	Modulus      uint64   `json:"modulus"`
	TargetLabel  string   `json:"target_label"`
	Replacement  string   `json:"replacement"`
	Action       string   `json:"action"`
}

type scenario struct {
	Name    string              `json:"name"`
	Rules   []ruleJSON          `json:"rules"`
	Targets []map[string]string `json:"targets"`
}

type workload struct {
	Scenarios []scenario `json:"scenarios"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// cpuTime is the CPU time the process has used (user + system, every thread, the garbage
// collector's included), as benches/relabel.rs measures its own.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// best runs f in rounds of at least `round` and returns the best wall and CPU time per call
// of f.
func best(rounds int, round time.Duration, f func()) (float64, float64) {
	bestNs, bestCPU := -1.0, -1.0
	for r := 0; r < rounds; r++ {
		runtime.GC()
		start, cpu := time.Now(), cpuTime()
		n := 0
		for time.Since(start) < round {
			f()
			n++
		}
		ns := float64(time.Since(start).Nanoseconds()) / float64(n)
		cpuNs := float64((cpuTime() - cpu).Nanoseconds()) / float64(n)
		if bestNs < 0 || ns < bestNs {
			bestNs = ns
		}
		if bestCPU < 0 || cpuNs < bestCPU {
			bestCPU = cpuNs
		}
	}
	return bestNs, bestCPU
}

var sink int

func main() {
	if len(os.Args) != 2 {
		fail("usage: relabel-go <workload.json>")
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	var w workload
	if err := json.Unmarshal(data, &w); err != nil {
		fail("%v", err)
	}
	for _, sc := range w.Scenarios {
		run(sc)
	}
}

// fnv is FNV-1a 64, the digest benches/relabel.rs computes over its own output.
type fnv uint64

func (h *fnv) eat(s string) {
	for i := 0; i < len(s); i++ {
		*h ^= fnv(s[i])
		*h *= 0x100000001b3
	}
}

// digest hashes the kept label sets in order: name 0xff value 0xff per label (sorted, as
// labels.Labels are), 0xfe after each set.
func digest(out []labels.Labels) fnv {
	h := fnv(0xcbf29ce484222325)
	for _, l := range out {
		for _, lb := range l {
			h.eat(lb.Name)
			h.eat("\xff")
			h.eat(lb.Value)
			h.eat("\xff")
		}
		h.eat("\xfe")
	}
	return h
}

func run(sc scenario) {
	cfgs := make([]*relabel.Config, len(sc.Rules))
	for i, r := range sc.Rules {
		re, err := relabel.NewRegexp(r.Regex)
		if err != nil {
			fail("rule %d: %v", i, err)
		}
		src := make(model.LabelNames, len(r.SourceLabels))
		for j, s := range r.SourceLabels {
			src[j] = model.LabelName(s)
		}
		cfgs[i] = &relabel.Config{
			SourceLabels: src,
			Separator:    r.Separator,
			Regex:        re,
			Modulus:      r.Modulus,
			TargetLabel:  r.TargetLabel,
			Replacement:  r.Replacement,
			Action:       relabel.Action(r.Action),
		}
	}
	{
		lsets := make([]labels.Labels, len(sc.Targets))
		for i, t := range sc.Targets {
			lsets[i] = labels.FromMap(t)
		}
		// Rule applications: rules run per target until one drops it.
		apps := 0
		kept := 0
		for _, l := range lsets {
			c := l.Copy()
			keep := true
			for _, cfg := range cfgs {
				apps++
				if c, keep = relabel.Process(c, cfg); !keep {
					break
				}
			}
			if keep {
				kept++
			}
		}
		var outs []labels.Labels
		for _, l := range lsets {
			if out, keep := relabel.Process(l.Copy(), cfgs...); keep {
				outs = append(outs, out)
			}
		}
		// relabel.Process in 2.42 writes its result into the input's backing array, so every
		// call gets a fresh copy, as Prometheus itself does (it builds the pre-relabel label
		// set per target).
		copyProcess, copyProcessCPU := best(5, 500*time.Millisecond, func() {
			for _, l := range lsets {
				out, keep := relabel.Process(l.Copy(), cfgs...)
				if keep {
					sink += len(out)
				}
			}
		})
		copyOnly, _ := best(5, 200*time.Millisecond, func() {
			for _, l := range lsets {
				sink += len(l.Copy())
			}
		})
		fmt.Printf("RESULT go %s targets=%d rule_applications=%d kept=%d output_fnv=%016x copy_process_ns_per_rule=%.1f copy_process_cpu_ns_per_rule=%.1f copy_only_ns_per_target=%.1f gomaxprocs=%d %s\n",
			sc.Name, len(lsets), apps, kept, uint64(digest(outs)), copyProcess/float64(apps), copyProcessCPU/float64(apps), copyOnly/float64(len(lsets)),
			runtime.GOMAXPROCS(0), runtime.Version())
	}
}
