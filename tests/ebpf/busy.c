// A CPU-bound C program for the pyroscope.ebpf tests and the overhead benchmark: nearly all
// of its time is in hot_c_spin. Built with frame pointers so the sampler can unwind it.
//
// busy_c            spin forever
// busy_c SECONDS    spin for SECONDS of wall time, then print the spin rate per CPU-second
//                   of this process (which factors out time the process spent descheduled)
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long hot_c_spin(unsigned long n)
{
	unsigned long x = n;
	for (unsigned long i = 0; i < 2000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static double now(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 0;
	double start = now(CLOCK_MONOTONIC), cpu0 = now(CLOCK_PROCESS_CPUTIME_ID);
	unsigned long spins = 0;
	for (;;) {
		sink = hot_c_spin(sink + spins);
		spins++;
		if (limit > 0 && (spins & 15) == 0 && now(CLOCK_MONOTONIC) - start >= limit)
			break;
	}
	double cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
	printf("spins_per_cpu_second %.3f cpu_seconds %.3f\n", spins / cpu, cpu);
	return 0;
}
