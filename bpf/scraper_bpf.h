/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Everything profile.bpf.c needs from the kernel and from BPF, declared by hand so that the
 * build needs only clang: no libbpf-dev headers and no 3 MB generated vmlinux.h.
 *
 * Kernel structs carry preserve_access_index, so every field access becomes a CO-RE
 * relocation that the loader (aya) rewrites from the running kernel's BTF. The layouts below
 * therefore only name the fields we read; their offsets here do not matter.
 */
#ifndef SCRAPER_BPF_H
#define SCRAPER_BPF_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))

/* BTF-defined maps: the type encodes the attributes, as libbpf and aya read them. */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

/* uapi values (include/uapi/linux/bpf.h). */
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_F_USER_STACK (1ULL << 8)
#define BPF_RB_NO_WAKEUP (1ULL << 0)

/* include/linux/sched.h */
#define PF_KTHREAD 0x00200000

struct task_struct;
struct pt_regs;

/* Helpers, by their stable uapi numbers. */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_get_current_comm)(void *buf, u32 size) = (void *)16;
static u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_get_stack)(void *ctx, void *buf, u32 size, u64 flags) = (void *)67;
static u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static long (*bpf_probe_read_user)(void *dst, u32 size, const void *src) = (void *)112;
static long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *src) = (void *)113;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, u64 size, u64 flags) = (void *)130;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;
static struct pt_regs *(*bpf_task_pt_regs)(struct task_struct *task) = (void *)175;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, u64 size, u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, u64 flags) = (void *)132;

/* The kernel fields we read (CO-RE relocated). */
struct task_struct {
	unsigned int flags;
} __attribute__((preserve_access_index));

/* The user registers saved on kernel entry (arch/x86/include/asm/ptrace.h). */
struct pt_regs {
	unsigned long bp;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

#endif
