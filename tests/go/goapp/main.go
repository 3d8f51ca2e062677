// goapp is a small Go service for the pprof oracle tests: it serves net/http/pprof on
// 127.0.0.1 (port chosen by the kernel, printed on stdout) and keeps allocating, contending on a
// mutex and blocking on channels along a few distinct call paths, so its heap, allocs, mutex
// and block profiles change between scrapes. Standard library only.
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
	"time"
)

var (
	mu       sync.Mutex
	retained [][]byte
	shared   int
)

//go:noinline
func allocFixed() []byte { return make([]byte, 64) }

// allocVarying allocates objects of changing sizes on one stack: Go scales heap samples by
// their average size, so this stack's alloc_objects can go down between scrapes while its
// alloc_space goes up.
//
//go:noinline
func allocVarying(r *rand.Rand) []byte { return make([]byte, 16+r.Intn(64<<10)) }

//go:noinline
func allocDeep(depth int) []byte {
	if depth == 0 {
		return make([]byte, 256)
	}
	return allocDeep(depth - 1)
}

//go:noinline
func retain(b []byte) {
	retained = append(retained, b)
	if len(retained) > 2000 {
		retained = retained[1000:]
	}
}

func allocLoop() {
	r := rand.New(rand.NewSource(1))
	lastGC := time.Now()
	for {
		for i := 0; i < 200; i++ {
			_ = allocFixed()
			b := allocVarying(r)
			if i%50 == 0 {
				retain(b)
			}
			_ = allocDeep(i % 8)
		}
		// Heap profiles only change at a GC; force one often so scrapes see new data.
		if time.Since(lastGC) > 200*time.Millisecond {
			runtime.GC()
			lastGC = time.Now()
		}
		time.Sleep(2 * time.Millisecond)
	}
}

//go:noinline
func contend(id int) {
	for {
		mu.Lock()
		shared += id
		time.Sleep(50 * time.Microsecond)
		mu.Unlock()
		time.Sleep(time.Duration(id) * 100 * time.Microsecond)
	}
}

//go:noinline
func consume(ch <-chan int) {
	for range ch {
	}
}

//go:noinline
func produce(ch chan<- int) {
	for i := 0; ; i++ {
		time.Sleep(time.Millisecond)
		ch <- i
	}
}

func main() {
	memRate := flag.Int("memprofilerate", 4096, "runtime.MemProfileRate")
	flag.Parse()
	runtime.MemProfileRate = *memRate
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go allocLoop()
	for i := 1; i <= 3; i++ {
		go contend(i)
	}
	ch := make(chan int)
	go produce(ch)
	go consume(ch)
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
