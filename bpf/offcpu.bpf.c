// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pyroscope.ebpf's off-CPU sampler, loaded only when off_cpu_threshold > 0. One program, on
 * the sched_switch raw tracepoint, which runs in the context of the thread leaving the CPU
 * and names the thread taking it:
 *
 * - switch-out: a thread of a target process is chosen with probability off_cpu_threshold, as
 *   in Alloy's OpenTelemetry profiler. Its stacks are taken there and then, in its own context
 *   (kernel stack: the path it blocks in; user registers saved at its kernel entry and a copy
 *   of its user stack, unwound in user space exactly like the CPU sampler's records), and
 *   written to the ring as a STACK record with the switch-out time, which is also kept per
 *   thread.
 * - switch-in: when the chosen thread is the one taking a CPU, the time it was off CPU is
 *   known; it writes a small END record, with the time for a block of at least min_block_ns
 *   (our own argument, off_cpu_min_block) and as a DROP for a shorter one, so that user space
 *   frees the waiting STACK record at once either way (short blocks are the common case and
 *   would otherwise fill its bounded waiting set and push the long blocks out).
 * - an exiting thread (PF_EXITING) is never chosen: its last switch-out (in do_task_dead) has
 *   no switch-in, and its entry would wait until the thread id is reused and then report the
 *   whole time in between as one bogus block.
 *
 * Why the stacks are taken at switch-out rather than at switch-in (as the OpenTelemetry
 * profiler does, with a kprobe on finish_task_switch): a thread's user stack can only be read
 * in its own context, and at switch-in the only hooks that run there are kprobes and BPF
 * trampolines, which hardened kernels do not offer (this project's CI kernel has
 * CONFIG_KPROBES off and refuses fentry programs). Tracepoints are always there. The price is
 * one stack copy per chosen switch-out, short or long: off_cpu_threshold bounds it.
 *
 * Unlike the OpenTelemetry profiler the switch-out times live in one LRU hash keyed by thread
 * (not per CPU: a thread often resumes on another CPU than it left), deleted when used, so a
 * later switch-out that was not chosen never pairs with a stale time.
 */
#include "scraper_bpf.h"
#include "user_stack.h"

/* Helpers and map types scraper_bpf.h does not declare (declared here so that
 * profile.bpf.c's stamp, which hashes scraper_bpf.h, does not change). */
#define BPF_MAP_TYPE_LRU_HASH 9
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
				   u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static u32 (*bpf_get_prandom_u32)(void) = (void *)7;

/* The thread taking the CPU (CO-RE relocated; the ___offcpu flavor keeps this apart from
 * scraper_bpf.h's task_struct). */
struct task_struct___offcpu {
	int pid;
} __attribute__((preserve_access_index));

#define MAX_FRAMES 127
/* bpf_get_stack's flags carry a count of leading frames to skip (BPF_F_SKIP_FIELD_MASK). */
#define SKIP_OWN_FRAMES 2

#define KIND_STACK 1
#define KIND_END 2
#define KIND_DROP 3 /* a struct end for a chosen block shorter than min_block_ns */
#define PF_EXITING 0x00000004

/* Mirrors the record layouts in src/components/pyroscope/ebpf/offcpu/bpf.rs. */
struct record {
	u32 kind; /* KIND_STACK */
	u32 pid; /* thread group id */
	u32 tid;
	u32 user_len; /* frames in `user` */
	u32 kernel_len; /* frames in `kernel` */
	u32 stack_len; /* bytes of `stack` */
	u32 flags; /* RECORD_* */
	u32 pad;
	char comm[16];
	u64 ip; /* user registers saved at the last kernel entry */
	u64 sp;
	u64 bp;
	u64 switched_out; /* ktime of the switch-out */
	u64 user[MAX_FRAMES]; /* the frame-pointer walk, leaf first */
	u64 kernel[MAX_FRAMES];
	u8 stack[STACK_BUF]; /* only the header and stack_len bytes are sent */
};

struct end {
	u32 kind; /* KIND_END or KIND_DROP */
	u32 tid;
	u64 switched_out; /* pairs it with its STACK record */
	u64 off_ns; /* nanoseconds off CPU (0 in a DROP) */
};

#define RECORD_REGS 1

/* Indexes mirror `Stats` in src/components/pyroscope/ebpf/offcpu/bpf.rs. */
enum stat {
	STAT_BLOCKS = 0, /* END records written: blocks reported */
	STAT_SWITCHES = 1, /* switch-outs of followed threads (before the probability) */
	STAT_CHOSEN = 2, /* switch-outs chosen: STACK records written */
	STAT_SHORT = 3, /* chosen blocks shorter than min_block_ns (DROP records) */
	STAT_RING_FULL = 4, /* records lost: the ring was full */
	STAT_STACK_FAULT = 5, /* user stack copies that stopped early on an unreadable page */
	STAT_TIMES_FULL = 6, /* switch-out times not stored (map update failed) */
	STAT_EXITING = 7, /* switch-outs of exiting threads, never chosen */
	STAT_COUNT = 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* sized by the loader */
} records SEC(".maps");

/* One scratch record per possible CPU (max_entries set by the loader). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct record);
} scratch SEC(".maps");

/* Processes to follow when filter_targets is set: tgid -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u8);
} targets SEC(".maps");

/* Thread id -> ktime at its chosen switch-out. An entry lives from a chosen switch-out to the
 * thread's next switch-in, so it holds at most one entry per thread off CPU after a chosen
 * switch-out: 32768 is the kernel's default pid_max, more than the threads of any target set
 * this is meant for. LRU rather than a plain hash as a safety net (a thread killed off CPU
 * without running again would leak an entry): when full, the least recently used entries go
 * silently and their blocks are never reported (their STACK records wait in user space until
 * the thread is gone, see pair.rs). Exiting threads are never chosen (see above). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, u32);
	__type(value, u64);
} switched_out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_COUNT);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps");

/* Set by the loader before the program is verified. */
const volatile u8 filter_targets = 1;
const volatile u8 kernel_frames = 1;
const volatile u32 stack_bytes = 0;
/* A switch-out is chosen when a random u32 is <= this: off_cpu_threshold * u32::MAX, as
 * Alloy computes it (1.0 chooses every one). */
const volatile u32 threshold = 0;
const volatile u64 min_block_ns = 0;

static __always_inline void count(u32 stat)
{
	u64 *v = bpf_map_lookup_elem(&stats, &stat);
	if (v)
		*v += 1;
}

/* The current thread leaves the CPU: maybe time it and take its stacks. */
static __always_inline void switch_out(void *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32;
	u32 tid = (u32)id;

	if (tgid == 0 || tid == 0)
		return;
	if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid))
		return;
	count(STAT_SWITCHES);

	/* Read before the draw: an exiting thread must never be chosen. */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned int flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), &task->flags);
	if (flags & PF_EXITING) {
		count(STAT_EXITING);
		return;
	}
	if (bpf_get_prandom_u32() > threshold)
		return;

	u32 cpu = bpf_get_smp_processor_id();
	struct record *r = bpf_map_lookup_elem(&scratch, &cpu);
	if (!r)
		return;
	u64 now = bpf_ktime_get_ns();
	r->kind = KIND_STACK;
	r->pid = tgid;
	r->tid = tid;
	r->flags = 0;
	r->pad = 0;
	r->stack_len = 0;
	r->ip = 0;
	r->sp = 0;
	r->bp = 0;
	r->switched_out = now;
	bpf_get_current_comm(r->comm, sizeof(r->comm));

	long n;
	r->user_len = 0;
	if (!(flags & PF_KTHREAD)) {
		n = bpf_get_stack(ctx, r->user, sizeof(r->user), BPF_F_USER_STACK);
		if (n > 0)
			r->user_len = n / sizeof(u64);
		if (stack_bytes) {
			/* The registers saved when the thread entered the kernel: the blocking
			 * syscall's (or the fault's, or the interrupt's when it is preempted). */
			struct pt_regs *regs = bpf_task_pt_regs(bpf_get_current_task_btf());
			if (regs && !bpf_probe_read_kernel(&r->ip, sizeof(r->ip), &regs->ip) &&
			    !bpf_probe_read_kernel(&r->sp, sizeof(r->sp), &regs->sp) &&
			    !bpf_probe_read_kernel(&r->bp, sizeof(r->bp), &regs->bp)) {
				int faulted = 0;
				r->flags |= RECORD_REGS;
				r->stack_len = copy_user_stack(r->stack, r->sp, stack_bytes, &faulted);
				if (faulted && r->stack_len < stack_bytes)
					count(STAT_STACK_FAULT);
			}
		}
	}
	r->kernel_len = 0;
	if (kernel_frames) {
		/* The walk starts in this program and the tracepoint's runner
		 * (bpf_prog_..., bpf_trace_run4): skip those two so the leaf is __schedule. */
		n = bpf_get_stack(ctx, r->kernel, sizeof(r->kernel), SKIP_OWN_FRAMES);
		if (n > 0)
			r->kernel_len = n / sizeof(u64);
	}
	u32 len = r->stack_len;
	if (len > STACK_MAX)
		len = STACK_MAX;
	if (bpf_ringbuf_output(&records, r, __builtin_offsetof(struct record, stack) + len,
			       BPF_RB_NO_WAKEUP)) {
		count(STAT_RING_FULL);
		return;
	}
	if (bpf_map_update_elem(&switched_out, &tid, &now, 0)) {
		count(STAT_TIMES_FULL);
		return;
	}
	count(STAT_CHOSEN);
}

/* Thread `tid` takes the CPU: if its switch-out was chosen, report the block (a DROP when it
 * was short). */
static __always_inline void switch_in(u32 tid)
{
	if (tid == 0)
		return;
	u64 *since = bpf_map_lookup_elem(&switched_out, &tid);
	if (!since)
		return;
	u64 start = *since;
	bpf_map_delete_elem(&switched_out, &tid);
	u64 now = bpf_ktime_get_ns();
	u64 off = now > start ? now - start : 0;
	struct end e = { .kind = KIND_END, .tid = tid, .switched_out = start, .off_ns = off };
	int short_block = off < min_block_ns;
	if (short_block) {
		e.kind = KIND_DROP;
		e.off_ns = 0;
	}
	if (bpf_ringbuf_output(&records, &e, sizeof(e), BPF_RB_NO_WAKEUP)) {
		count(STAT_RING_FULL);
		return;
	}
	count(short_block ? STAT_SHORT : STAT_BLOCKS);
}

/* TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next, ...): the
 * arguments as u64 slots. */
SEC("raw_tracepoint/sched_switch")
int offcpu_sched_switch(u64 *ctx)
{
	struct task_struct___offcpu *next = (struct task_struct___offcpu *)ctx[2];
	int next_tid = 0;

	switch_out(ctx);
	bpf_probe_read_kernel(&next_tid, sizeof(next_tid), &next->pid);
	switch_in((u32)next_tid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
