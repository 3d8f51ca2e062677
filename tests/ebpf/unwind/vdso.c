// The vDSO for the unwinding test (tests/ebpf_unwind.rs): the hot loop reads the clock, which
// runs in the kernel's vDSO (not a system call) through libc's clock_gettime, so most samples
// must be unwound out of the vDSO and libc, neither built with frame pointers:
//
//   [vdso frames] <- [libc's clock_gettime] <- vdso_level2 <- vdso_level1 <- main
//
// Built `gcc -O2 -fomit-frame-pointer`.
//
// unwind_vdso            run forever
// unwind_vdso SECONDS    run for SECONDS of wall time, then exit
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noipa)) unsigned long vdso_level2(unsigned long seed)
{
	struct timespec ts;
	unsigned long x = seed;
	for (int i = 0; i < 20000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		x += (unsigned long)ts.tv_nsec;
	}
	return x;
}

__attribute__((noipa)) unsigned long vdso_level1(unsigned long seed)
{
	unsigned long x = vdso_level2(seed + 1);
	return x ^ (x >> 31);
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long spins = 1;; spins++) {
		sink = vdso_level1(sink + spins);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (limit > 0 && (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= limit)
			break;
	}
	return 0;
}
