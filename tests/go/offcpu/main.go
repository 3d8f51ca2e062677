// Off-CPU fixture for tests/ebpf_offcpu.rs, the Go twin of tests/ebpf/offcpu/block.c.
//
// Waits for a line on stdin, then runs `rounds` rounds of blockLong (one 50 ms nanosleep)
// and blockShort (twenty 50 us nanosleeps), prints the time it measured around the sleeps,
// `long_ns=<n> short_ns=<n> short_over_ns=<n> long_calls=<n> short_calls=<n>`, and waits for
// stdin to close. `short_over_ns` sums the short sleeps that took at least minBlockNs (the
// test's off_cpu_min_block) on a busy machine: only those may be reported.
//
// The sleeps are syscall.Nanosleep, not time.Sleep: time.Sleep parks the goroutine and its
// thread goes on running others (or waits in the scheduler), so no thread would block with
// blockLong on its stack. A direct syscall blocks the goroutine's thread inside blockLong,
// which is what an off-CPU profile shows.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

const minBlockNs = 5 * 1000 * 1000

func slept(ns int64) int64 {
	ts := syscall.NsecToTimespec(ns)
	start := time.Now()
	_ = syscall.Nanosleep(&ts, nil)
	return int64(time.Since(start))
}

//go:noinline
func blockLong() int64 { return slept(50 * 1000 * 1000) }

//go:noinline
func blockShort() int64 { return slept(50 * 1000) }

func main() {
	rounds := 100
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil {
			rounds = n
		}
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(1)
	}
	var longNs, shortNs, shortOverNs int64
	var longCalls, shortCalls int
	for r := 0; r < rounds; r++ {
		longNs += blockLong()
		longCalls++
		for i := 0; i < 20; i++ {
			t := blockShort()
			shortNs += t
			if t >= minBlockNs {
				shortOverNs += t
			}
			shortCalls++
		}
	}
	fmt.Printf("long_ns=%d short_ns=%d short_over_ns=%d long_calls=%d short_calls=%d\n",
		longNs, shortNs, shortOverNs, longCalls, shortCalls)
	for {
		if _, err := in.ReadString('\n'); err != nil {
			return
		}
	}
}
