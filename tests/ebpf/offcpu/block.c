// Off-CPU fixture for tests/ebpf_offcpu.rs: blocks in known functions and keeps its own
// account of the time it spent blocked in each.
//
// Waits for a line on stdin, then runs `rounds` rounds of: block_long() (one 50 ms
// nanosleep) and block_short() (twenty 50 us nanosleeps). It prints the totals it measured
// around the sleeps (CLOCK_MONOTONIC, nanoseconds) as one line,
// `long_ns=<n> short_ns=<n> short_over_ns=<n> long_calls=<n> short_calls=<n>`, then waits for
// stdin to close so that its maps stay readable until the scraper has symbolized its stacks.
// `short_over_ns` sums the short sleeps that took at least MIN_BLOCK_NS (the test's
// off_cpu_min_block) all the same, on a machine busy enough to keep a woken thread waiting
// for a CPU: only those may be reported.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MIN_BLOCK_NS (5 * 1000 * 1000LL)

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long slept(long ns)
{
	struct timespec req = { ns / 1000000000L, ns % 1000000000L };
	long long start = now_ns();
	nanosleep(&req, NULL);
	return now_ns() - start;
}

// noinline: each must be a frame of its own in the stacks the test looks for.
__attribute__((noinline)) long long block_long(void)
{
	long long t = slept(50 * 1000 * 1000);
	__asm__ volatile("" ::: "memory");
	return t;
}

__attribute__((noinline)) long long block_short(void)
{
	long long t = slept(50 * 1000);
	__asm__ volatile("" ::: "memory");
	return t;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	char line[64];
	long long long_ns = 0, short_ns = 0, short_over_ns = 0;
	int long_calls = 0, short_calls = 0;

	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int r = 0; r < rounds; r++) {
		long_ns += block_long();
		long_calls++;
		for (int i = 0; i < 20; i++) {
			long long t = block_short();
			short_ns += t;
			if (t >= MIN_BLOCK_NS)
				short_over_ns += t;
			short_calls++;
		}
	}
	printf("long_ns=%lld short_ns=%lld short_over_ns=%lld long_calls=%d short_calls=%d\n",
	       long_ns, short_ns, short_over_ns, long_calls, short_calls);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
