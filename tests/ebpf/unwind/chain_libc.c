// The shape of chain.c, but the leaf level spends nearly all of its time inside libc:
// main -> libc_level1 -> libc_level2 -> libc_leaf -> {memset, memcpy, qsort, random}. Built
// `gcc -O2 -fomit-frame-pointer` like chain.c; Debian's libc has no frame pointers either, so
// a sample in libc is unwound through libc's own .eh_frame first, then through ours.
//
// qsort calls cmp_u32, our code, from inside libc: such a sample reads
// cmp_u32 <- (libc's sort) <- libc_leaf <- libc_level2 <- libc_level1 <- main.
//
// unwind_c_libc            run forever
// unwind_c_libc SECONDS    run for SECONDS of wall time, then exit
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Larger than the L2 cache, so the string functions do real work on every call.
#define BUF (4 << 20)
#define KEYS 512

static unsigned char src[BUF], dst[BUF];
static unsigned int keys[KEYS];
static volatile unsigned long sink;

// The comparator: user code called by libc. Kept trivial so that libc's sort dominates.
__attribute__((noipa)) int cmp_u32(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
	return (x > y) - (x < y);
}

// All noipa, and each caller uses its callee's result: no inlining, cloning or tail calls
// (see chain.c).
__attribute__((noipa)) unsigned long libc_leaf(unsigned long seed)
{
	memset(src, (int)(seed & 0xff), BUF);
	memcpy(dst, src, BUF);
	for (int i = 0; i < KEYS; i++)
		keys[i] = (unsigned int)random();
	qsort(keys, KEYS, sizeof keys[0], cmp_u32);
	return seed + dst[seed % BUF] + keys[seed % KEYS];
}

__attribute__((noipa)) unsigned long libc_level2(unsigned long seed)
{
	unsigned long x = libc_leaf(seed * 31 + 7);
	return x ^ (x >> 29);
}

__attribute__((noipa)) unsigned long libc_level1(unsigned long seed)
{
	unsigned long x = libc_level2(seed + 1);
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
	srandom(1);
	for (unsigned long spins = 1;; spins++) {
		sink = libc_level1(sink + spins);
		if (limit > 0 && now() - start >= limit)
			break;
	}
	return 0;
}
