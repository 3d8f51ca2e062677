// A deep stack for the unwinding test (tests/ebpf_unwind.rs): the hot leaf runs 150 calls of
// `deep` below main, deeper than the 127 frames a frame-pointer walk in the kernel keeps:
//
//   deep_leaf <- deep x 150 <- main
//
// Built `gcc -O2 -fomit-frame-pointer`; `deep` uses its callee's result, so no call is a tail
// call, and `noipa` keeps gcc from turning the recursion into a loop.
//
// unwind_deep            run forever
// unwind_deep SECONDS    run for SECONDS of wall time, then exit
#include <stdlib.h>
#include <time.h>

#define DEPTH 150

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) unsigned long deep_leaf(unsigned long seed)
{
	unsigned long x = seed;
	for (unsigned long i = 0; i < 2000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noipa)) unsigned long deep(int n, unsigned long seed)
{
	/* Both calls use their result, so neither is a tail call that would drop this frame. */
	unsigned long x = n == 0 ? deep_leaf(seed) : deep(n - 1, seed + 1);
	return x ^ (x >> 3);
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 0;
	double start = now();
	for (unsigned long spins = 1;; spins++) {
		sink = deep(DEPTH, sink + spins);
		if (limit > 0 && (spins & 15) == 0 && now() - start >= limit)
			break;
	}
	return 0;
}
