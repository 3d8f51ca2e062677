// A CPU-bound Go program for the DWARF unwinding test (tests/ebpf_unwind.rs):
// main.main -> main.unwindTop -> main.unwindMid -> main.unwindLeaf, nearly all of the time in
// main.unwindLeaf. Built with symbols and stripped (-ldflags="-s -w").
//
// main.unwindLeaf is frameless: it calls nothing and keeps everything in registers, so the Go
// compiler gives it no frame and does not save BP. A frame-pointer walk from inside it reads
// the frame of unwindMid as if it were its own and reports unwindTop as its caller, losing
// unwindMid; only .gopclntab's frame sizes (or CFI) unwind it correctly. unwindMid calls it in
// a hot loop, and the leaf loops long enough per call that most samples land inside it.
//
// unwind_go            spin forever
// unwind_go SECONDS    spin for SECONDS of wall time, then exit
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func unwindLeaf(x uint64) uint64 {
	for i := 0; i < 4096; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func unwindMid(seed uint64) uint64 {
	x := seed
	for i := 0; i < 512; i++ {
		x = unwindLeaf(x)
	}
	return x ^ (x >> 29)
}

//go:noinline
func unwindTop(seed uint64) uint64 {
	x := unwindMid(seed + 1)
	return x ^ (x >> 31)
}

func main() {
	var limit time.Duration
	if len(os.Args) > 1 {
		if s, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			limit = time.Duration(s * float64(time.Second))
		}
	}
	start := time.Now()
	for {
		sink = unwindTop(sink + 1)
		if limit > 0 && time.Since(start) >= limit {
			return
		}
	}
}
