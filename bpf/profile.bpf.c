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
/* PAGE_SIZE, STACK_MAX (the most bytes of user stack a record carries: stack_bytes is at most
 * this) and the page-by-page copy, shared with offcpu.bpf.c. */
#include "user_stack.h"

#define MAX_FRAMES 127
/*
 * Most CPython frames one record carries, and thread states searched for the sampled thread.
 * The interpreter's list is newest first, so the main thread is last: the bound must exceed
 * the thread count of the processes we profile (thread pools of a few hundred are common;
 * each step is three reads, well within the verifier's budget). Walks that end without a
 * match count as STAT_PY_NO_THREAD, and user space reports a process where that is the rule.
 */
#define PY_MAX_FRAMES 64
#define PY_MAX_THREADS 512
/* Frames of the innermost activation followed to check it was entered whole (entered_whole). */
#define PY_CHECK_FRAMES 8
/* Activations (cframes) followed to check a caller's cframe is live (live_cframes). */
#define PY_CHECK_CFRAMES 16

/*
 * One CPython interpreter frame: its code object and the instruction it last ran, whose top
 * byte user space replaces by the frame's entry marker (3.11's is_entry, 3.12's owner): user
 * addresses fit in 47 bits.
 */
struct py_frame {
	u64 code;
	u64 instr;
};

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
	u32 py_len; /* frames in `py`, innermost first */
	u32 py_flags; /* PY_* */
	struct py_frame py[PY_MAX_FRAMES];
	/*
	 * The copy goes page by page (a read that crosses into an unmapped page fails whole), so
	 * a read of up to one page may start anywhere below STACK_MAX: the slack keeps every
	 * write provably inside the value for the verifier. Only the header and stack_len bytes
	 * are sent.
	 */
	u8 stack[STACK_BUF];
};

#define RECORD_REGS 1 /* ip/sp/bp are valid */

#define PY_WALKED 1 /* the process is in py_procs: a Python walk was tried */
#define PY_NO_THREAD 2 /* no thread state of the interpreter has this thread's id */
#define PY_TRUNCATED 4 /* more than PY_MAX_FRAMES frames */
#define PY_FAULT 8 /* a read of the interpreter's memory failed */
#define PY_ENTERING 16 /* the innermost activation was being entered: its frames are unknown */

/*
 * The entry byte of a frame that stands for an activation being entered (PY_ENTERING): it has
 * no code, and ends that activation's (empty) group of frames. Mirrors `ENTERING` in
 * src/components/pyroscope/ebpf/python/mod.rs; no interpreter's entry byte is this value.
 */
#define PY_ENTERING_MARK 0xfe

/*
 * Where a CPython process keeps what the walk needs: the address of _PyRuntime and the
 * offsets of the fields on the way from it to the frames, for the process's interpreter
 * version (found by user space, src/components/pyroscope/ebpf/python/). Mirrors `PyProc` in
 * src/components/pyroscope/ebpf/python/offsets.rs.
 */
struct py_proc {
	u64 runtime;
	u16 interp_main; /* _PyRuntimeState.interpreters.main */
	u16 tstate_head; /* PyInterpreterState.threads.head */
	u16 tstate_next; /* PyThreadState.next */
	u16 tstate_tid; /* PyThreadState.native_thread_id */
	u16 tstate_frame; /* PyThreadState.cframe (3.11, 3.12) or current_frame (3.13+) */
	u16 cframe_frame; /* _PyCFrame.current_frame; PY_NONE when tstate_frame is the frame */
	u16 frame_previous; /* _PyInterpreterFrame.previous */
	u16 frame_code; /* f_code (f_executable on 3.13+) */
	u16 frame_instr; /* prev_instr (instr_ptr on 3.13+) */
	u16 frame_entry; /* is_entry (3.11) or owner (3.12+): one byte */
	u16 tstate_pthread; /* PyThreadState.thread_id: pthread_self(), the thread's TCB */
	u16 cframe_previous; /* _PyCFrame.previous (3.11, 3.12); PY_NONE on 3.13+ */
	/*
	 * How the entry byte ends an activation: 0 when it is is_entry, set on the activation's
	 * outermost frame (3.11); else the `owner` value of the C-stack shim frame each activation
	 * pushes below its first frame (FRAME_OWNED_BY_CSTACK, 3.12+).
	 */
	u16 entry_shim;
	u16 tstate_root_cframe; /* PyThreadState.root_cframe (3.11, 3.12): where cframes chain to */
	u16 pad[2];
};

#define PY_NONE 0xffff

/*
 * The thread's saved FS base (arch/x86/include/asm/processor.h). The `___py` flavour keeps
 * these apart from scraper_bpf.h's task_struct; CO-RE matches them by the name before `___`.
 * glibc points FS at the thread's TCB, which is also what pthread_self() returns and so what
 * CPython stores in PyThreadState.thread_id; FS is set once per thread (clone's TLS or
 * arch_prctl), so the saved value is current for a running thread.
 */
struct thread_struct___py {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct___py {
	struct thread_struct___py thread;
} __attribute__((preserve_access_index));

/* Counters user space reports as metrics; indexes mirror `Stat` in src/components/pyroscope/ebpf/bpf.rs. */
enum stat {
	STAT_SAMPLES = 0, /* records written */
	STAT_FILTERED = 1, /* ticks in processes that are not targets */
	STAT_RING_FULL = 2, /* records lost: the ring was full */
	STAT_IDLE = 3, /* ticks in the idle task */
	STAT_STACK_FAULT = 4, /* user stack copies that stopped early on an unreadable page */
	STAT_PY_WALKS = 5, /* CPython frame walks */
	STAT_PY_NO_THREAD = 6, /* walks that found no thread state for the sampled thread */
	STAT_PY_TRUNCATED = 7, /* walks cut at PY_MAX_FRAMES */
	STAT_PY_FAULT = 8, /* walks that met an unreadable address */
	STAT_PY_ENTERING = 9, /* walks that met an activation being entered */
	STAT_COUNT = 10,
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

/* CPython processes to walk: tgid -> where their interpreter is (user space fills it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct py_proc);
} py_procs SEC(".maps");

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

/* Copies the user stack from sp upwards into r->stack (user_stack.h). */
static __always_inline void copy_stack(struct record *r, u64 sp)
{
	int faulted;

	r->stack_len = copy_user_stack(r->stack, sp, stack_bytes, &faulted);
	/* The end of the stack mapping, or a page not resident: keep what we have. */
	if (faulted)
		count(STAT_STACK_FAULT);
}

static __always_inline u64 read_ptr(u64 addr, u32 *flags)
{
	u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr)) {
		*flags |= PY_FAULT;
		return 0;
	}
	return v;
}

/*
 * Whether the innermost interpreter loop activation, whose current frame is `frame`, was
 * entered whole: its chain of frames ends (is_entry, or the C-stack shim) with a link to
 * `outer`, the frame its caller's cframe holds (cframe.previous->current_frame, unchanged while
 * the caller waits in C), and no frame before that end links out of the activation.
 *
 * 3.11 and 3.12 make a new activation current (tstate->cframe = &cframe) a few instructions
 * before they set its cframe's fields (current_frame and previous, stored together) and link
 * the frame to its caller's: a sample there reads what the last activation at that C stack
 * address left, another call's frames or an unreadable address. A frame that links to `outer`
 * without ending its activation is such a frame (3.11 initialises is_entry to false before
 * the activation sets it). Being entered, an activation has one frame (and 3.12's shim), so a
 * chain that has not ended within PY_CHECK_FRAMES is an activation that has run long: it is
 * trusted. 3.13 sets the frame before making it current.
 */
static __always_inline int entered_whole(const struct py_proc *p, u64 frame, u64 outer)
{
	for (int i = 0; i < PY_CHECK_FRAMES; i++) {
		u8 entry = 0;
		u64 next = 0;
		if (!frame || bpf_probe_read_user(&entry, 1, (void *)(frame + p->frame_entry)) ||
		    bpf_probe_read_user(&next, sizeof(next), (void *)(frame + p->frame_previous)))
			return 0;
		if (p->entry_shim ? entry == p->entry_shim : entry != 0)
			return next == outer;
		if (!next || next == outer || next == frame)
			return 0;
		frame = next;
	}
	return 1;
}

/*
 * Whether `prev`, the previous field of the cframe `cframe` of thread state `ts`, starts a live
 * chain of the thread's cframes: each caller's higher on the stack than its callee's, ending at
 * the thread state's root_cframe within PY_CHECK_CFRAMES. Asked only of an activation being
 * entered, whose previous field may be a value left by an earlier activation at its address.
 */
static __always_inline int live_cframes(const struct py_proc *p, u64 ts, u64 cframe, u64 prev)
{
	u64 root = ts + p->tstate_root_cframe;
	u64 below = cframe;
	for (int i = 0; i < PY_CHECK_CFRAMES; i++) {
		if (prev == root)
			return 1;
		if (prev <= below)
			return 0;
		below = prev;
		if (bpf_probe_read_user(&prev, sizeof(prev), (void *)(prev + p->cframe_previous)))
			return 0;
	}
	return 0;
}

/*
 * Records the CPython frames of the current thread at this moment: finds its thread state in
 * the main interpreter's list, then follows the frame chain from its current frame. Reading
 * them later from user space would give another moment's stack.
 *
 * A thread state is matched by thread_id (pthread_self(), equal to the thread's FS base),
 * which is the same in every pid namespace; native_thread_id is the tid as the process's own
 * namespace sees it, so it matches `tid` (the host's) only outside containers: a fallback for
 * a libc that does not point FS at its thread descriptor.
 */
static __always_inline void walk_python(struct record *r, const struct py_proc *p, u32 tid,
					struct task_struct *task)
{
	u32 flags = PY_WALKED;
	struct task_struct___py *t = (struct task_struct___py *)task;
	u64 fsbase = 0;
	bpf_probe_read_kernel(&fsbase, sizeof(fsbase), &t->thread.fsbase);
	u64 interp = read_ptr(p->runtime + p->interp_main, &flags);
	u64 ts = interp ? read_ptr(interp + p->tstate_head, &flags) : 0;
	u64 found = 0;

	/*
	 * No branch but the exits in the body: the verifier follows every iteration, and a
	 * branch per read (as read_ptr has) would double the paths it explores each time. A
	 * failed read leaves its value 0, which ends the search or matches nothing.
	 */
	long fault = 0;
	if (!fsbase)
		fsbase = ~0ULL; /* never a thread_id */
	for (int i = 0; i < PY_MAX_THREADS && ts; i++) {
		u64 self = 0, id = 0, next = 0;
		fault |= bpf_probe_read_user(&self, sizeof(self), (void *)(ts + p->tstate_pthread));
		fault |= bpf_probe_read_user(&id, sizeof(id), (void *)(ts + p->tstate_tid));
		if (self == fsbase || id == tid) {
			found = ts;
			break;
		}
		fault |= bpf_probe_read_user(&next, sizeof(next), (void *)(ts + p->tstate_next));
		ts = next;
	}
	if (fault)
		flags |= PY_FAULT;
	r->py_len = 0;
	if (!found) {
		r->py_flags = flags | PY_NO_THREAD;
		return;
	}
	u64 cframe = read_ptr(found + p->tstate_frame, &flags);
	u64 frame = cframe;
	u32 n0 = 0;
	if (frame && p->cframe_frame != PY_NONE) {
		frame = read_ptr(cframe + p->cframe_frame, &flags);
		/* The root cframe (no Python running) has no previous. */
		if (p->cframe_previous != PY_NONE && cframe != found + p->tstate_root_cframe) {
			u64 prev = read_ptr(cframe + p->cframe_previous, &flags);
			u64 outer = prev ? read_ptr(prev + p->cframe_frame, &flags) : 0;
			if (!prev || !entered_whole(p, frame, outer)) {
				flags |= PY_ENTERING;
				r->py[0].code = 0;
				r->py[0].instr = (u64)PY_ENTERING_MARK << 56;
				n0 = 1;
				/* The callers' frames when the caller's cframe is live; else none. */
				frame = prev && live_cframes(p, found, cframe, prev) ? outer : 0;
			}
		}
	}
	u32 n = n0;
	/* No branch but the exits in the body, as in the thread search above. */
	for (int i = 0; i + n0 < PY_MAX_FRAMES; i++) {
		if (!frame)
			break;
		u64 code = read_ptr(frame + p->frame_code, &flags);
		u64 instr = read_ptr(frame + p->frame_instr, &flags);
		u8 entry = 0;
		if (bpf_probe_read_user(&entry, 1, (void *)(frame + p->frame_entry)))
			flags |= PY_FAULT;
		u32 at = (i + n0) & (PY_MAX_FRAMES - 1);
		r->py[at].code = code;
		r->py[at].instr = (instr & 0x00ffffffffffffffULL) | ((u64)entry << 56);
		n = at + 1;
		frame = read_ptr(frame + p->frame_previous, &flags);
	}
	if (frame)
		flags |= PY_TRUNCATED;
	r->py_len = n;
	r->py_flags = flags;
}

static __always_inline void count_python(u32 flags)
{
	count(STAT_PY_WALKS);
	if (flags & PY_NO_THREAD)
		count(STAT_PY_NO_THREAD);
	if (flags & PY_TRUNCATED)
		count(STAT_PY_TRUNCATED);
	if (flags & PY_FAULT)
		count(STAT_PY_FAULT);
	if (flags & PY_ENTERING)
		count(STAT_PY_ENTERING);
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
	r->py_len = 0;
	r->py_flags = 0;
	if (!(flags & PF_KTHREAD)) {
		const struct py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
		if (py) {
			walk_python(r, py, (u32)id, task);
			count_python(r->py_flags);
		}
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
