// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pyroscope.ebpf's CPU sampler. Attached to the software cpu-clock perf event on every CPU
 * (the machines we run on have no hardware PMU); at each tick it copies the interrupted
 * thread's user and kernel stacks into a ring buffer record. User space (src/ebpf/bpf.rs)
 * drains the ring, deduplicates stacks and counts them.
 *
 * Why a ring buffer rather than a stack-id map plus a counts hash: bpf_get_stackid() hashes
 * stacks into fixed buckets and fails with EEXIST on collisions (1-9% of samples measured on
 * this machine kind), and the map preallocates ~17 MB of kernel memory. Copying the frames
 * costs ~2 KB per sample, which at ~100 Hz per CPU is negligible traffic.
 *
 * The licence must be GPL-compatible: bpf_get_stack and bpf_get_current_task are GPL-only.
 */
#include "scraper_bpf.h"

#define MAX_FRAMES 127

/* Mirrors `Record` in src/ebpf/bpf.rs; keep the two in step. */
struct record {
	u32 pid; /* thread group id */
	u32 tid;
	u32 user_len; /* frames in `user` */
	u32 kernel_len; /* frames in `kernel` */
	char comm[16];
	u64 user[MAX_FRAMES];
	u64 kernel[MAX_FRAMES];
};

/* Counters user space reports as metrics; indexes mirror `Stat` in src/ebpf/bpf.rs. */
enum stat {
	STAT_SAMPLES = 0, /* records written */
	STAT_FILTERED = 1, /* ticks in processes that are not targets */
	STAT_RING_FULL = 2, /* records lost: the ring was full */
	STAT_IDLE = 3, /* ticks in the idle task */
	STAT_COUNT = 4,
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/* Resized by the loader to fit the CPU count and the drain period. */
	__uint(max_entries, 1 << 20);
} records SEC(".maps");

/* Processes to sample when filter_targets is set: tgid -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_COUNT);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps");

/* Set by the loader before the program is verified. */
const volatile u8 filter_targets = 1;
const volatile u8 kernel_frames = 1;

static __always_inline void count(u32 stat)
{
	u64 *v = bpf_map_lookup_elem(&stats, &stat);
	if (v)
		*v += 1;
}

SEC("perf_event")
int sample_cpu(void *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32;
	long n;

	if (tgid == 0) {
		count(STAT_IDLE);
		return 0;
	}
	if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid)) {
		count(STAT_FILTERED);
		return 0;
	}

	struct record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(STAT_RING_FULL);
		return 0;
	}
	r->pid = tgid;
	r->tid = (u32)id;
	bpf_get_current_comm(r->comm, sizeof(r->comm));

	/* Kernel threads have no user stack; asking for one would return a stale one. */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned int flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), &task->flags);

	r->user_len = 0;
	if (!(flags & PF_KTHREAD)) {
		n = bpf_get_stack(ctx, r->user, sizeof(r->user), BPF_F_USER_STACK);
		if (n > 0)
			r->user_len = n / sizeof(u64);
	}
	r->kernel_len = 0;
	if (kernel_frames) {
		n = bpf_get_stack(ctx, r->kernel, sizeof(r->kernel), 0);
		if (n > 0)
			r->kernel_len = n / sizeof(u64);
	}
	/* No wakeup per record: user space polls the ring on a timer. */
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	count(STAT_SAMPLES);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
