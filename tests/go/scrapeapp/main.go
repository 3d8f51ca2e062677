// scrapeapp is the Go target of the pyroscope.scrape end-to-end tests: it serves net/http/pprof
// on 127.0.0.1 (port chosen by the kernel unless -listen says otherwise, printed on stdout as "listening on ADDR") and keeps
// every profile type busy: CPU in one of two functions chosen at run time (GET /work?fn=alpha,
// beta or none), allocations, mutex contention, channel blocking and a few parked goroutines.
// CPU work runs at a duty cycle (-duty, default 0.3) so that the tests do not hog shared
// machines. Standard library only.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var (
	mode     atomic.Value // "alpha", "beta" or "none"
	sink     uint64
	mu       sync.Mutex
	shared   int
	retained [][]byte
)

//go:noinline
func spin(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func alphaWork(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		sink += spin(20000)
	}
}

//go:noinline
func betaWork(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		sink += spin(20000)
	}
}

// alphaCalls and betaCalls run a fixed number of spin calls: CPU work that does not shrink
// when the machine is busy (the duty-cycle loops run for a wall-clock time, so contention
// lowers their CPU), as the statistics tests need a workload that only changes when asked to.
//
//go:noinline
func alphaCalls(n int) {
	for i := 0; i < n; i++ {
		sink += spin(20000)
	}
}

//go:noinline
func betaCalls(n int) {
	for i := 0; i < n; i++ {
		sink += spin(20000)
	}
}

// fixedLoop runs alphaCalls' `calls` spin calls and betaCalls' `calls × betaScale` once per
// tick, on an OS thread of its own: Go's CPU profiler samples each thread every 10 ms of that
// thread's CPU time, so no other goroutine's work lands on this thread's samples. A late tick
// is caught up, not dropped, so the work per second stays the same on a busy machine. Within a
// tick the calls come in a random order (one call each): in a fixed order (all of alpha, then
// all of beta) the profiler's timer drifts slowly against the tick, so the share of samples
// landing in alpha drifted too, and two adjacent windows of one unchanged program measured
// alphaCalls +58 % apart; in a random order each sample lands in alpha or beta with their
// shares of the work whatever the timer's phase.
func fixedLoop(calls int, betaScale float64) {
	const tick = 10 * time.Millisecond
	runtime.LockOSThread()
	beta := int(float64(calls)*betaScale + 0.5)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	next := time.Now()
	for {
		a, b := calls, beta
		for a+b > 0 {
			if rng.Intn(a+b) < a {
				alphaCalls(1)
				a--
			} else {
				betaCalls(1)
				b--
			}
		}
		next = next.Add(tick)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
}

func cpuLoop(duty float64) {
	const period = 10 * time.Millisecond
	busy := time.Duration(float64(period) * duty)
	for {
		switch mode.Load().(string) {
		case "alpha":
			alphaWork(busy)
		case "beta":
			betaWork(busy)
		}
		time.Sleep(period - busy)
	}
}

//go:noinline
func allocSmall() []byte { return make([]byte, 128) }

//go:noinline
func allocLarge() []byte { return make([]byte, 32<<10) }

func allocLoop() {
	last := time.Now()
	for i := 0; ; i++ {
		for j := 0; j < 100; j++ {
			_ = allocSmall()
		}
		b := allocLarge()
		if i%20 == 0 {
			retained = append(retained, b)
			if len(retained) > 200 {
				retained = retained[100:]
			}
		}
		// Heap profiles change only at a GC.
		if time.Since(last) > 200*time.Millisecond {
			runtime.GC()
			last = time.Now()
		}
		time.Sleep(2 * time.Millisecond)
	}
}

//go:noinline
func contend(id int) {
	for {
		mu.Lock()
		shared += id
		time.Sleep(100 * time.Microsecond)
		mu.Unlock()
		time.Sleep(time.Duration(id) * 200 * time.Microsecond)
	}
}

//go:noinline
func blockOnChannel(ch <-chan int) {
	for range ch {
	}
}

func main() {
	duty := flag.Float64("duty", 0.3, "fraction of each 10 ms spent on CPU work")
	fn := flag.String("fn", "alpha", "initial CPU function: alpha, beta or none")
	// The Kubernetes pipeline test gives each "pod" its own loopback address and the port the
	// pod declares.
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	calls := flag.Int("calls", 0, "if > 0: instead of the duty cycle, every 10 ms alphaCalls and betaCalls each run this many spin calls (a fixed amount of work)")
	betaScale := flag.Float64("beta-scale", 1, "with -calls: betaCalls runs this many times the calls of alphaCalls (1.1 = 10 % more CPU)")
	flag.Parse()
	mode.Store(*fn)
	runtime.MemProfileRate = 4096
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	http.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		f := r.URL.Query().Get("fn")
		switch f {
		case "alpha", "beta", "none":
			mode.Store(f)
			fmt.Fprintf(w, "cpu work now in %s\n", f)
		default:
			http.Error(w, "fn must be alpha, beta or none", http.StatusBadRequest)
		}
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *calls > 0 {
		go fixedLoop(*calls, *betaScale)
	} else {
		go cpuLoop(*duty)
	}
	go allocLoop()
	for i := 1; i <= 2; i++ {
		go contend(i)
	}
	ch := make(chan int)
	go blockOnChannel(ch)
	go func() {
		for i := 0; ; i++ {
			time.Sleep(time.Millisecond)
			ch <- i
		}
	}()
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
