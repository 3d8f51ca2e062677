// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pyroscope.ebpf's CPU sampler. Attached to the software cpu-clock perf event on every CPU
 * (the machines we run on have no hardware PMU); at each tick it writes one record for the
 * interrupted thread into a ring buffer: its kernel stack, its user stack as the frame-pointer
 * walk sees it, and - unless the loader set stack_bytes to 0 - its user registers and a copy
 * of the top of its user stack. User space (src/components/pyroscope/ebpf/bpf.rs, src/components/pyroscope/ebpf/unwind/) unwinds that
 * copy with the binaries' call-frame information (.eh_frame, .gopclntab), which needs no frame
 * pointers; docs/EBPF.md says why this design was chosen over unwinding in BPF.
 *
 * Why a ring buffer rather than a stack-id map plus a counts hash: bpf_get_stackid() hashes
 * stacks into fixed buckets and fails with EEXIST on collisions (1-9% of samples measured on
 * this machine kind), and the map preallocates ~17 MB of kernel memory.
 *
 * The licence must be GPL-compatible: bpf_get_stack and bpf_get_current_task are GPL-only.
 */
#include "scraper_bpf.h"

#define MAX_FRAMES 127
#define PAGE_SIZE 4096
/* Most bytes of user stack one record can carry (stack_bytes is at most this). */
#define STACK_MAX (32 * 1024)

/* Mirrors the record layout in src/components/pyroscope/ebpf/bpf.rs; keep the two in step. */
struct record {
	u32 pid; /* thread group id */
	u32 tid;
	u32 user_len; /* frames in `user` */
	u32 kernel_len; /* frames in `kernel` */
	char comm[16];
	/* User registers when the tick came (in user mode) or at the last kernel entry. */
	u64 ip;
	u64 sp;
	u64 bp;
	u32 stack_len; /* bytes of `stack`, copied from sp upwards */
	u32 flags; /* RECORD_* */
	u64 user[MAX_FRAMES]; /* the frame-pointer walk, leaf first */
	u64 kernel[MAX_FRAMES];
	/*
	 * The copy goes page by page (a read that crosses into an unmapped page fails whole), so
	 * a read of up to one page may start anywhere below STACK_MAX: the slack keeps every
	 * write provably inside the value for the verifier. Only the header and stack_len bytes
	 * are sent.
	 */
	u8 stack[STACK_MAX + PAGE_SIZE];
};

#define RECORD_REGS 1 /* ip/sp/bp are valid */

/* Counters user space reports as metrics; indexes mirror `Stat` in src/components/pyroscope/ebpf/bpf.rs. */
enum stat {
	STAT_SAMPLES = 0, /* records written */
	STAT_FILTERED = 1, /* ticks in processes that are not targets */
	STAT_RING_FULL = 2, /* records lost: the ring was full */
	STAT_IDLE = 3, /* ticks in the idle task */
	STAT_STACK_FAULT = 4, /* user stack copies that stopped early on an unreadable page */
	STAT_COUNT = 5,
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/* Resized by the loader to fit the CPU count and the drain period. */
	__uint(max_entries, 1 << 20);
} records SEC(".maps");

/*
 * One record-sized scratch slot per CPU, where the record is assembled before its used part
 * goes into the ring. A plain array indexed by CPU rather than a per-CPU array: per-CPU
 * values are limited to 32 KiB. The loader sets max_entries to the number of possible CPUs;
 * a perf_event program never runs twice at once on one CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct record);
} scratch SEC(".maps");

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
/* Bytes of user stack to copy per sample; 0 for frame-pointer stacks only. */
const volatile u32 stack_bytes = 0;

static __always_inline void count(u32 stat)
{
	u64 *v = bpf_map_lookup_elem(&stats, &stat);
	if (v)
		*v += 1;
}

/* Copies the user stack from sp upwards into r->stack, one page at a time. */
static __always_inline void copy_stack(struct record *r, u64 sp)
{
	u64 addr = sp;
	u32 off = 0;

	for (int i = 0; i <= STACK_MAX / PAGE_SIZE; i++) {
		if (off >= stack_bytes || off >= STACK_MAX)
			break;
		u32 chunk = PAGE_SIZE - (addr & (PAGE_SIZE - 1));
		if (bpf_probe_read_user(&r->stack[off], chunk, (void *)addr)) {
			/* The end of the stack mapping, or a page not resident: keep what we have. */
			if (off < stack_bytes)
				count(STAT_STACK_FAULT);
			break;
		}
		off += chunk;
		addr += chunk;
	}
	if (off > stack_bytes)
		off = stack_bytes;
	r->stack_len = off;
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

	u32 cpu = bpf_get_smp_processor_id();
	struct record *r = bpf_map_lookup_elem(&scratch, &cpu);
	if (!r)
		return 0;
	r->pid = tgid;
	r->tid = (u32)id;
	r->flags = 0;
	r->stack_len = 0;
	r->ip = 0;
	r->sp = 0;
	r->bp = 0;
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
		if (stack_bytes) {
			/*
			 * The user registers saved at the last kernel entry: the tick's own when it
			 * interrupted user mode, the syscall's or fault's otherwise (what
			 * bpf_get_stack(BPF_F_USER_STACK) starts from too).
			 */
			struct pt_regs *regs = bpf_task_pt_regs(bpf_get_current_task_btf());
			if (regs && !bpf_probe_read_kernel(&r->ip, sizeof(r->ip), &regs->ip) &&
			    !bpf_probe_read_kernel(&r->sp, sizeof(r->sp), &regs->sp) &&
			    !bpf_probe_read_kernel(&r->bp, sizeof(r->bp), &regs->bp)) {
				r->flags |= RECORD_REGS;
				copy_stack(r, r->sp);
			}
		}
	}
	r->kernel_len = 0;
	if (kernel_frames) {
		n = bpf_get_stack(ctx, r->kernel, sizeof(r->kernel), 0);
		if (n > 0)
			r->kernel_len = n / sizeof(u64);
	}
	u32 len = r->stack_len;
	if (len > STACK_MAX)
		len = STACK_MAX;
	/* No wakeup per record: user space polls the ring on a timer. */
	if (bpf_ringbuf_output(&records, r, __builtin_offsetof(struct record, stack) + len,
			       BPF_RB_NO_WAKEUP)) {
		count(STAT_RING_FULL);
		return 0;
	}
	count(STAT_SAMPLES);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
