// pprofgo is the Go side of the pprof benchmark (bench/pprof.sh): one scrape round = parse the
// new gzipped profile + delta against the previous one + write gzipped pprof, timed the same
// way as the Rust side, with google/pprof's profile package (Debian
// golang-github-google-pprof-dev, GOPATH mode).
//
//	merge: google/pprof's way (`pprof -base`): Merge([new, old scaled by -1]) on the cumulative
//	       types, negatives clamped, zero samples dropped. The scaled old profile is prepared
//	       once, outside the timed rounds.
//	map:   a hash-map delta (fastdelta-like): each sample's key hashes its locations'
//	       addresses and its labels; the map from the previous round gives the old values; the
//	       round builds the next map (the state the next scrape needs), rewrites the values in
//	       place, drops zero samples and unreferenced locations/functions, and writes.
//
// Prints one line per run: pair algo iterations and medians of wall/CPU ns, allocated bytes
// and allocations per round, plus output size and the process's peak RSS.
//
//	pprofgo -algo merge|map [-n 5] [-name wide] [-o OUT] OLD NEW
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/maphash"
	"io/ioutil"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
)

var cumulativeNames = map[string]bool{"alloc_objects": true, "alloc_space": true, "contentions": true, "delay": true}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pprofgo:", err)
	os.Exit(1)
}

func cumulative(p *profile.Profile) []bool {
	m := make([]bool, len(p.SampleType))
	for i, t := range p.SampleType {
		m[i] = cumulativeNames[t.Type]
	}
	return m
}

func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// peakRSSKiB is this process image's peak resident set (VmHWM), like the Rust side reports.
func peakRSSKiB() int64 {
	data, err := ioutil.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d", &kb)
			return kb
		}
	}
	return 0
}

// --- merge algorithm ---

func mergeDelta(base *profile.Profile, newGz []byte, cum []bool) (*profile.Profile, error) {
	p, err := profile.ParseData(newGz)
	if err != nil {
		return nil, err
	}
	out, err := profile.Merge([]*profile.Profile{p, base})
	if err != nil {
		return nil, err
	}
	kept := out.Sample[:0]
	for _, s := range out.Sample {
		nonzero := false
		for i, v := range s.Value {
			if cum[i] && v < 0 {
				s.Value[i] = 0
			}
			nonzero = nonzero || s.Value[i] != 0
		}
		if nonzero {
			kept = append(kept, s)
		}
	}
	out.Sample = kept
	if old := base.TimeNanos; old > 0 && p.TimeNanos > old {
		out.DurationNanos = p.TimeNanos - old
	}
	return out, nil
}

// --- map algorithm ---

type state struct {
	vals map[uint64][]int64
	time int64
}

var seed = maphash.MakeSeed()

func sampleKey(h *maphash.Hash, s *profile.Sample, buf []byte, labels []string) uint64 {
	h.Reset()
	for _, l := range s.Location {
		addr := l.Address
		if l.Mapping != nil {
			addr -= l.Mapping.Start
		}
		binary.LittleEndian.PutUint64(buf, addr)
		h.Write(buf[:8])
	}
	labels = labels[:0]
	for k, v := range s.Label {
		labels = append(labels, fmt.Sprint(k, v))
	}
	for k, v := range s.NumLabel {
		labels = append(labels, fmt.Sprint(k, v, s.NumUnit[k]))
	}
	if len(labels) > 1 {
		sort.Strings(labels)
	}
	for _, l := range labels {
		h.WriteString(l)
		h.WriteByte(0)
	}
	return h.Sum64()
}

func buildState(p *profile.Profile, cum []bool) *state {
	st := &state{vals: make(map[uint64][]int64, len(p.Sample)), time: p.TimeNanos}
	var h maphash.Hash
	h.SetSeed(seed)
	buf := make([]byte, 8)
	var labels []string
	for _, s := range p.Sample {
		k := sampleKey(&h, s, buf, labels)
		v := st.vals[k]
		if v == nil {
			v = make([]int64, len(cum))
			st.vals[k] = v
		}
		for i, x := range s.Value {
			if cum[i] {
				v[i] += x
			}
		}
	}
	return st
}

func mapDelta(old *state, newGz []byte, cum []bool) (*profile.Profile, *state, error) {
	p, err := profile.ParseData(newGz)
	if err != nil {
		return nil, nil, err
	}
	next := &state{vals: make(map[uint64][]int64, len(p.Sample)), time: p.TimeNanos}
	slab := make([]int64, len(cum)*len(p.Sample))
	var h maphash.Hash
	h.SetSeed(seed)
	buf := make([]byte, 8)
	var labels []string
	// Sum duplicate stacks into the first sample that has them; remember each key.
	first := make(map[uint64]int, len(p.Sample))
	keys := make([]uint64, 0, len(p.Sample))
	kept := p.Sample[:0]
	for _, s := range p.Sample {
		k := sampleKey(&h, s, buf, labels)
		if i, ok := first[k]; ok {
			for j, x := range s.Value {
				kept[i].Value[j] += x
			}
			continue
		}
		first[k] = len(kept)
		kept = append(kept, s)
		keys = append(keys, k)
	}
	out := kept[:0]
	for i, s := range kept {
		k := keys[i]
		v := slab[:len(cum):len(cum)]
		slab = slab[len(cum):]
		for i, x := range s.Value {
			if cum[i] {
				v[i] = x
			}
		}
		next.vals[k] = v
		prev := old.vals[k]
		nonzero := false
		for i := range s.Value {
			if cum[i] {
				d := s.Value[i]
				if prev != nil {
					d -= prev[i]
				}
				if d < 0 {
					d = 0
				}
				s.Value[i] = d
			}
			nonzero = nonzero || s.Value[i] != 0
		}
		if nonzero {
			out = append(out, s)
		}
	}
	p.Sample = out
	// Drop what only the dropped samples referenced.
	usedLoc := map[*profile.Location]bool{}
	usedFn := map[*profile.Function]bool{}
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if !usedLoc[l] {
				usedLoc[l] = true
				for _, ln := range l.Line {
					usedFn[ln.Function] = true
				}
			}
		}
	}
	locs := p.Location[:0]
	for _, l := range p.Location {
		if usedLoc[l] {
			locs = append(locs, l)
		}
	}
	p.Location = locs
	fns := p.Function[:0]
	for _, f := range p.Function {
		if usedFn[f] {
			fns = append(fns, f)
		}
	}
	p.Function = fns
	if old.time > 0 && p.TimeNanos > old.time {
		p.DurationNanos = p.TimeNanos - old.time
	}
	return p, next, nil
}

func median(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func main() {
	algo := flag.String("algo", "map", "merge or map")
	n := flag.Int("n", 5, "timed rounds")
	name := flag.String("name", "pair", "name printed with the results")
	outPath := flag.String("o", "", "also write the delta of the last round to this file")
	flag.Parse()
	if flag.NArg() != 2 {
		fail(fmt.Errorf("usage: pprofgo -algo merge|map [-n N] [-name NAME] OLD NEW"))
	}
	oldGz, err := ioutil.ReadFile(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	newGz, err := ioutil.ReadFile(flag.Arg(1))
	if err != nil {
		fail(err)
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	// Steady state: what the previous round left behind, prepared untimed. Its size is the
	// state a scraper keeps per series: the parsed old profile (merge) or the map (map).
	h0 := heap()
	old, err := profile.ParseData(oldGz)
	if err != nil {
		fail(err)
	}
	cum := cumulative(old)
	var base *profile.Profile
	var oldState *state
	if *algo == "merge" {
		base = old
		ratios := make([]float64, len(cum))
		for i, c := range cum {
			if c {
				ratios[i] = -1
			}
		}
		base.ScaleN(ratios)
	} else {
		oldState = buildState(old, cum)
		old = nil
	}
	stateBytes := heap() - h0
	runtime.KeepAlive(base)
	runtime.KeepAlive(oldState)

	var last []byte
	round := func() (int, int) {
		var out *profile.Profile
		switch *algo {
		case "merge":
			out, err = mergeDelta(base, newGz, cum)
		case "map":
			out, _, err = mapDelta(oldState, newGz, cum)
		default:
			err = fmt.Errorf("unknown algo %q", *algo)
		}
		if err != nil {
			fail(err)
		}
		var b bytes.Buffer
		if err := out.Write(&b); err != nil {
			fail(err)
		}
		last = b.Bytes()
		return len(out.Sample), b.Len()
	}
	round() // warm-up
	var walls, cpus, bytesPer, allocsPer []int64
	var samples, gzBytes int
	for i := 0; i < *n; i++ {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0, t0 := cpuNanos(), time.Now()
		samples, gzBytes = round()
		walls = append(walls, time.Since(t0).Nanoseconds())
		cpus = append(cpus, cpuNanos()-c0)
		runtime.ReadMemStats(&m1)
		bytesPer = append(bytesPer, int64(m1.TotalAlloc-m0.TotalAlloc))
		allocsPer = append(allocsPer, int64(m1.Mallocs-m0.Mallocs))
	}
	if *outPath != "" {
		if err := ioutil.WriteFile(*outPath, last, 0o644); err != nil {
			fail(err)
		}
	}
	fmt.Printf("%s go-%s n=%d wall_ms=%.2f cpu_ms=%.2f alloc_mb=%.1f allocs=%d peak_rss_mb=%.1f out_samples=%d out_gz=%d state_kb=%.1f\n",
		*name, *algo, *n, float64(median(walls))/1e6, float64(median(cpus))/1e6,
		float64(median(bytesPer))/1e6, median(allocsPer), float64(peakRSSKiB())/1024, samples, gzBytes,
		float64(stateBytes)/1e3)
}
