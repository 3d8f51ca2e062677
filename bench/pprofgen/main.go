// pprofgen writes the large heap pairs of the pprof benchmark (bench/pprof.sh), shaped like the
// stress case of the project's Go baseline (docs: performance-anchors §2.4): about 50,000
// distinct stacks of 29-30 frames, Go heap sample types and the "bytes" label Go puts on heap
// samples, deterministic (fixed seed).
//
//	narrow: frames drawn from 64 functions
//	wide:   frames drawn from 4,096 functions (~4 MB raw)
//
// The second profile of a pair is the first one later: ~35% of the stacks allocated more,
// some in-use values changed, and ~2,500 new stacks appeared.
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go run bench/pprofgen/main.go -out DIR
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"github.com/google/pprof/profile"
)

const (
	stacks    = 50057
	newStacks = 2523
	mapStart  = 0x400000
)

var sizeClasses = []int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

type gen struct {
	p        *profile.Profile
	mapping  *profile.Mapping
	funcs    map[string]*profile.Function
	locs     map[string]*profile.Location
	branches []string
}

func newGen(nbranch int) *gen {
	m := &profile.Mapping{ID: 1, Start: mapStart, Limit: mapStart + 0x4000000, File: "/usr/bin/stackgen", BuildID: "8f3c2e1d", HasFunctions: true}
	g := &gen{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
				{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
			},
			DefaultSampleType: "inuse_space",
			PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
			Period:            524288,
			Mapping:           []*profile.Mapping{m},
		},
		mapping: m,
		funcs:   map[string]*profile.Function{},
		locs:    map[string]*profile.Location{},
	}
	for i := 0; i < nbranch; i++ {
		g.branches = append(g.branches, fmt.Sprintf("main.branch%04d", i))
	}
	return g
}

// location returns the location of a call site: function `name` at `line`.
func (g *gen) location(name, file string, line int64) *profile.Location {
	key := fmt.Sprintf("%s:%d", name, line)
	if l, ok := g.locs[key]; ok {
		return l
	}
	f, ok := g.funcs[name]
	if !ok {
		f = &profile.Function{ID: uint64(len(g.p.Function) + 1), Name: name, SystemName: name, Filename: file, StartLine: line - 3}
		g.funcs[name] = f
		g.p.Function = append(g.p.Function, f)
	}
	l := &profile.Location{
		ID:      uint64(len(g.p.Location) + 1),
		Mapping: g.mapping,
		Address: mapStart + 0x1000 + uint64(len(g.p.Location))*0x40,
		Line:    []profile.Line{{Function: f, Line: line}},
	}
	g.locs[key] = l
	g.p.Location = append(g.p.Location, l)
	return l
}

// stack builds the frames of stack number n (leaf first): 3 runtime/allocation frames at the
// leaf; main.main and runtime.main at the root; in between a call tree 6 levels deep with 8
// children per node (n's base-8 digits pick the path, so stacks are distinct and share their
// root-side parts like real programs' stacks do), each level adding a frame and 3 helpers
// (4 on odd n at the last level, for 30-frame stacks).
func (g *gen) stack(n int) []*profile.Location {
	nb := uint64(len(g.branches))
	var rootFirst []*profile.Location
	rootFirst = append(rootFirst, g.location("runtime.main", "runtime/proc.go", 250), g.location("main.main", "main.go", 12))
	prefix := uint64(14695981039346656037)
	digits := n
	var path [6]int
	for d := 5; d >= 0; d-- {
		path[d] = digits % 8
		digits /= 8
	}
	for d := 0; d < 6; d++ {
		prefix = (prefix ^ uint64(path[d]+1)) * 1099511628211
		helpers := 3
		if d == 5 && n%2 == 1 {
			helpers = 4
		}
		for k := 0; k <= helpers; k++ {
			h := (prefix ^ uint64(k*131)) * 1099511628211
			b := int((h >> 17) % nb)
			line := int64(100 + b%50 + k%2)
			rootFirst = append(rootFirst, g.location(g.branches[b], "main.go", line))
		}
	}
	rootFirst = append(rootFirst,
		g.location("main.alloc", "main.go", 41),
		g.location("runtime.newobject", "runtime/malloc.go", 1254),
		g.location("runtime.mallocgc", "runtime/malloc.go", 1090),
	)
	locs := make([]*profile.Location, len(rootFirst))
	for i, l := range rootFirst {
		locs[len(rootFirst)-1-i] = l
	}
	return locs
}

func scale(count, size int64) (int64, int64) {
	// Roughly what runtime/pprof's scaleHeapSample does at the default rate.
	return count * 4, count * size * 4
}

func write(p *profile.Profile, path string) {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	if err := p.Write(f); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	out := flag.String("out", ".", "output directory")
	flag.Parse()
	for _, shape := range []struct {
		name    string
		nbranch int
	}{{"narrow", 64}, {"wide", 4096}} {
		g := newGen(shape.nbranch)
		r := rand.New(rand.NewSource(42))
		type rec struct {
			locs        []*profile.Location
			size        int64
			count, live int64
		}
		recs := make([]rec, 0, stacks+newStacks)
		for n := 0; n < stacks; n++ {
			rc := rec{locs: g.stack(n), size: sizeClasses[r.Intn(len(sizeClasses))], count: 1 + r.Int63n(200)}
			if r.Intn(10) == 0 {
				rc.live = 1 + r.Int63n(rc.count)
			}
			recs = append(recs, rc)
		}
		emit := func(recs []rec) *profile.Profile {
			p := g.p.Copy()
			// Copy() duplicates locations; rebuild samples against the copy's tables.
			byID := map[uint64]*profile.Location{}
			for _, l := range p.Location {
				byID[l.ID] = l
			}
			p.Sample = nil
			for _, rc := range recs {
				ao, as := scale(rc.count, rc.size)
				io, is := scale(rc.live, rc.size)
				locs := make([]*profile.Location, len(rc.locs))
				for i, l := range rc.locs {
					locs[i] = byID[l.ID]
				}
				p.Sample = append(p.Sample, &profile.Sample{
					Location: locs,
					Value:    []int64{ao, as, io, is},
					NumLabel: map[string][]int64{"bytes": {rc.size}},
				})
			}
			return p
		}
		p1 := emit(recs)
		p1.TimeNanos = 1700000000000000000
		// Later: some stacks allocated more, some live sets changed, new stacks appeared.
		for i := range recs {
			if r.Intn(100) < 35 {
				recs[i].count += 1 + r.Int63n(50)
			}
			if recs[i].live > 0 && r.Intn(3) == 0 {
				recs[i].live = r.Int63n(recs[i].count + 1)
			}
		}
		for n := stacks; n < stacks+newStacks; n++ {
			recs = append(recs, rec{locs: g.stack(n), size: sizeClasses[r.Intn(len(sizeClasses))], count: 1 + r.Int63n(20)})
		}
		p2 := emit(recs)
		p2.TimeNanos = p1.TimeNanos + 10e9
		for i, p := range []*profile.Profile{p1, p2} {
			if err := p.CheckValid(); err != nil {
				fail(err)
			}
			path := filepath.Join(*out, fmt.Sprintf("%s-heap-%d.pb.gz", shape.name, i+1))
			write(p, path)
			fmt.Printf("%s: %d samples, %d locations, %d functions\n", path, len(p.Sample), len(p.Location), len(p.Function))
		}
	}
}
