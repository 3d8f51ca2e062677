// A CPU-bound Go program for the pyroscope.ebpf tests: nearly all of its time is in
// main.hotGoSpin. Built both with symbols and stripped (-ldflags="-s -w"), where only
// .gopclntab can name its functions.
package main

var sink uint64

//go:noinline
func hotGoSpin(seed uint64) uint64 {
	x := seed
	for i := 0; i < 2000000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func main() {
	x := uint64(1)
	for {
		x = hotGoSpin(x)
		sink = x
	}
}
