// A CPU-bound C program for the DWARF unwinding test (tests/ebpf_unwind.rs): nearly all of its
// time is in chain_leaf, called through main -> chain_level1 -> chain_level2 -> chain_leaf.
// Built `gcc -O2 -fomit-frame-pointer`: %rbp is a general register here, so only the
// .eh_frame CFI can unwind these functions.
//
// Every chain function is `noipa`: gcc may then neither inline it, nor clone it
// (.isra/.constprop/.part names), nor use what it knows of its body at the call sites. Each
// caller also uses the callee's result after the call, so no call is a tail call that would
// drop the caller's frame.
//
// unwind_c            spin forever
// unwind_c SECONDS    spin for SECONDS of wall time, then exit
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noipa)) unsigned long chain_leaf(unsigned long seed)
{
	unsigned long x = seed;
	for (unsigned long i = 0; i < 2000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noipa)) unsigned long chain_level2(unsigned long seed)
{
	unsigned long x = chain_leaf(seed ^ 0x9e3779b97f4a7c15UL);
	return x ^ (x >> 29);
}

__attribute__((noipa)) unsigned long chain_level1(unsigned long seed)
{
	unsigned long x = chain_level2(seed + 1);
	return x ^ (x >> 31);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 0;
	double start = now();
	for (unsigned long spins = 1;; spins++) {
		sink = chain_level1(sink + spins);
		if (limit > 0 && (spins & 15) == 0 && now() - start >= limit)
			break;
	}
	return 0;
}
