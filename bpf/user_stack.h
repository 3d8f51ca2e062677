/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The user-stack copy a record carries for unwinding in user space, shared by the BPF
 * programs that write such records (profile.bpf.c, offcpu.bpf.c). Include after scraper_bpf.h.
 *
 * bpf_probe_read_user cannot fault pages in and a read that crosses into an unmapped page
 * fails whole, so the copy goes page by page and stops at the first unreadable page: the end
 * of the stack mapping, or a page not resident.
 */
#ifndef USER_STACK_H
#define USER_STACK_H

#define PAGE_SIZE 4096
/* Most bytes of user stack one record can carry. */
#define STACK_MAX (32 * 1024)
/* The copy's buffer: a read of up to one page may start anywhere below STACK_MAX, so the
 * slack keeps every write provably inside it for the verifier. */
#define STACK_BUF (STACK_MAX + PAGE_SIZE)

/*
 * Copies up to `want` (<= STACK_MAX) bytes of the current task's user stack from `sp` upwards
 * into `buf` (STACK_BUF bytes). Returns the bytes copied; *faulted is set when the copy
 * stopped early on an unreadable page.
 */
static __always_inline u32 copy_user_stack(u8 *buf, u64 sp, u32 want, int *faulted)
{
	u64 addr = sp;
	u32 off = 0;

	*faulted = 0;
	for (int i = 0; i <= STACK_MAX / PAGE_SIZE; i++) {
		if (off >= want || off >= STACK_MAX)
			break;
		u32 chunk = PAGE_SIZE - (addr & (PAGE_SIZE - 1));
		if (bpf_probe_read_user(&buf[off], chunk, (void *)addr)) {
			*faulted = 1;
			break;
		}
		off += chunk;
		addr += chunk;
	}
	if (off > want)
		off = want;
	return off;
}

#endif
