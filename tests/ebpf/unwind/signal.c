// Signal frames for the unwinding test (tests/ebpf_unwind.rs): most of this program's CPU time
// is spent inside a SIGALRM handler, so most samples must be unwound through the kernel's
// signal frame (libc's __restore_rt trampoline) back into the code the signal interrupted:
//
//   alarm_work <- on_alarm <- [libc's __restore_rt] <- spin_main <- main
//
// The rest are plain `spin_main <- main`. Built `gcc -O2 -fomit-frame-pointer`. An interval
// timer fires every 2 ms of wall time and the handler burns ~1.5 ms, so about three quarters
// of the samples are in the handler.
//
// unwind_signal            run forever
// unwind_signal SECONDS    run for SECONDS of wall time, then exit
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) unsigned long alarm_work(unsigned long seed)
{
	unsigned long x = seed;
	for (unsigned long i = 0; i < 600000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noipa)) void on_alarm(int sig)
{
	unsigned long x = alarm_work(sink + (unsigned long)sig);
	sink = x ^ (x >> 7);
}

__attribute__((noipa)) unsigned long spin_main(unsigned long seed)
{
	unsigned long x = seed;
	for (unsigned long i = 0; i < 200000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 0;
	struct sigaction sa = { 0 };
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = { { 0, 2000 }, { 0, 2000 } };
	setitimer(ITIMER_REAL, &every, NULL);
	double start = now();
	for (unsigned long spins = 1;; spins++) {
		sink = spin_main(sink + spins);
		if (limit > 0 && (spins & 63) == 0 && now() - start >= limit)
			break;
	}
	return 0;
}
