// pprofcheck is the oracle of the pprof tests: it checks profiles written by `scraper pprof`
// with google/pprof's own profile package (Debian's golang-github-google-pprof-dev, built in
// GOPATH mode: GOPATH=/usr/share/gocode GO111MODULE=off).
//
//	pprofcheck delta [-all | -types a,b] OLD NEW OURS
//	    expected = pprof's delta (what `go tool pprof -base OLD NEW` computes: OLD scaled by -1
//	    and merged into NEW) restricted to the cumulative sample types, per-sample negatives
//	    clamped to zero, all-zero samples dropped; the other types are NEW's. Compares the
//	    totals per stack (function/file/line of every frame, plus labels) with OURS.
//	pprofcheck merge OURS IN...
//	    expected = profile.Merge(IN...); compares totals per stack with OURS.
//	pprofcheck valid FILE...
//	    parses each file (ParseData + CheckValid).
//	pprofcheck totals FILE
//	    parses the file and prints its sample count, each sample type's total (sum of absolute
//	    values) and its comments, one per line: "samples N", "total TYPE UNIT SUM",
//	    "comment TEXT".
//
// Exit status 0 when everything matches; mismatches are listed on stdout.
package main

import (
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "delta":
		fs := flag.NewFlagSet("delta", flag.ExitOnError)
		all := fs.Bool("all", false, "treat every sample type as cumulative")
		types := fs.String("types", "alloc_objects,alloc_space,contentions,delay", "cumulative sample types")
		fs.Parse(os.Args[2:])
		if fs.NArg() != 3 {
			usage()
		}
		old, new, ours := load(fs.Arg(0)), load(fs.Arg(1)), load(fs.Arg(2))
		want := delta(old, new, cumulative(new, *all, *types))
		os.Exit(compare(want, ours))
	case "merge":
		if len(os.Args) < 4 {
			usage()
		}
		ours := load(os.Args[2])
		var ins []*profile.Profile
		for _, f := range os.Args[3:] {
			ins = append(ins, load(f))
		}
		want, err := profile.Merge(ins)
		if err != nil {
			fail("merge: %v", err)
		}
		os.Exit(compare(want, ours))
	case "totals":
		if len(os.Args) != 3 {
			usage()
		}
		p := load(os.Args[2])
		fmt.Printf("samples %d\n", len(p.Sample))
		for i, st := range p.SampleType {
			var sum uint64
			for _, s := range p.Sample {
				v := s.Value[i]
				if v < 0 {
					v = -v
				}
				sum += uint64(v)
			}
			fmt.Printf("total %s %s %d\n", st.Type, st.Unit, sum)
		}
		for _, c := range p.Comments {
			fmt.Printf("comment %s\n", c)
		}
	case "valid":
		for _, f := range os.Args[2:] {
			load(f)
		}
		fmt.Printf("ok: %d valid profiles\n", len(os.Args)-2)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pprofcheck delta [-all|-types a,b] OLD NEW OURS | merge OURS IN... | valid FILE... | totals FILE")
	os.Exit(2)
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pprofcheck: "+format+"\n", args...)
	os.Exit(2)
}

func load(path string) *profile.Profile {
	data, err := ioutil.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		fail("%s: %v", path, err)
	}
	if err := p.CheckValid(); err != nil {
		fail("%s: %v", path, err)
	}
	return p
}

func cumulative(p *profile.Profile, all bool, types string) []bool {
	names := map[string]bool{}
	for _, t := range strings.Split(types, ",") {
		names[t] = true
	}
	mask := make([]bool, len(p.SampleType))
	for i, st := range p.SampleType {
		mask[i] = all || names[st.Type]
	}
	return mask
}

// delta computes NEW - OLD the pprof way (Scale(-1) + Merge) on the cumulative types.
func delta(old, new *profile.Profile, cum []bool) *profile.Profile {
	base := old.Copy()
	ratios := make([]float64, len(cum))
	for i, c := range cum {
		if c {
			ratios[i] = -1
		}
	}
	if err := base.ScaleN(ratios); err != nil {
		fail("scale: %v", err)
	}
	out, err := profile.Merge([]*profile.Profile{new.Copy(), base})
	if err != nil {
		fail("merge: %v", err)
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
	return out
}

// stacks sums sample values per symbolic stack + labels.
func stacks(p *profile.Profile) map[string][]int64 {
	out := map[string][]int64{}
	for _, s := range p.Sample {
		var frames []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				name, file := "?", "?"
				if ln.Function != nil {
					name, file = ln.Function.Name, ln.Function.Filename
				}
				frames = append(frames, fmt.Sprintf("%s@%s:%d", name, file, ln.Line))
			}
		}
		var labels []string
		for k, v := range s.Label {
			labels = append(labels, fmt.Sprintf("%s=%q", k, v))
		}
		for k, v := range s.NumLabel {
			labels = append(labels, fmt.Sprintf("%s=%v%v", k, v, s.NumUnit[k]))
		}
		sort.Strings(labels)
		key := strings.Join(frames, ";") + " {" + strings.Join(labels, ",") + "}"
		acc, ok := out[key]
		if !ok {
			acc = make([]int64, len(s.Value))
			out[key] = acc
		}
		for i, v := range s.Value {
			acc[i] += v
		}
	}
	for k, v := range out {
		zero := true
		for _, x := range v {
			zero = zero && x == 0
		}
		if zero {
			delete(out, k)
		}
	}
	return out
}

func totals(m map[string][]int64) []int64 {
	var t []int64
	for _, v := range m {
		if t == nil {
			t = make([]int64, len(v))
		}
		for i, x := range v {
			t[i] += x
		}
	}
	return t
}

func compare(want, got *profile.Profile) int {
	if len(want.SampleType) != len(got.SampleType) {
		fmt.Printf("MISMATCH: sample types %v vs %v\n", want.SampleType, got.SampleType)
		return 1
	}
	for i := range want.SampleType {
		if want.SampleType[i].Type != got.SampleType[i].Type || want.SampleType[i].Unit != got.SampleType[i].Unit {
			fmt.Printf("MISMATCH: sample types %v vs %v\n", want.SampleType, got.SampleType)
			return 1
		}
	}
	w, g := stacks(want), stacks(got)
	var bad []string
	for k, wv := range w {
		if gv, ok := g[k]; !ok || fmt.Sprint(gv) != fmt.Sprint(wv) {
			bad = append(bad, fmt.Sprintf("  %s: want %v, got %v", k, wv, gv))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			bad = append(bad, fmt.Sprintf("  %s: want nothing, got %v", k, gv))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("  ... and %d more", len(bad)-20))
		}
		fmt.Printf("MISMATCH: %d of %d stacks differ\n%s\n", len(bad), len(w), strings.Join(bad, "\n"))
		return 1
	}
	fmt.Printf("ok: %d stacks, %d samples, totals %v\n", len(w), len(got.Sample), totals(w))
	return 0
}
