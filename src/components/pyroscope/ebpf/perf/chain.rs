//! Splitting a perf callchain into its kernel and user parts.

/// Entries at or above this value are context markers, never addresses (`PERF_CONTEXT_MAX`).
const CONTEXT_MAX: u64 = 0u64.wrapping_sub(4095);
/// `PERF_CONTEXT_KERNEL`: the frames that follow were in the kernel.
const CONTEXT_KERNEL: u64 = 0u64.wrapping_sub(128);
/// `PERF_CONTEXT_USER`: the frames that follow were in user space.
const CONTEXT_USER: u64 = 0u64.wrapping_sub(512);

/// A callchain's addresses by where they ran, each leaf first.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Frames {
    pub kernel: Vec<u64>,
    pub user: Vec<u64>,
}

/// Splits `chain` at its context markers and drops the markers.
///
/// Frames under any other context (hypervisor, guest) are dropped: they belong to no process of
/// this host. So are frames before the first marker, which the kernel never emits, because there
/// is no telling where they ran.
pub(super) fn split(chain: &[u64]) -> Frames {
    enum Part {
        Kernel,
        User,
        Elsewhere,
    }

    let mut frames = Frames::default();
    let mut part = Part::Elsewhere;
    for &entry in chain {
        if entry >= CONTEXT_MAX {
            part = match entry {
                CONTEXT_KERNEL => Part::Kernel,
                CONTEXT_USER => Part::User,
                _ => Part::Elsewhere,
            };
            continue;
        }
        match part {
            Part::Kernel => frames.kernel.push(entry),
            Part::User => frames.user.push(entry),
            Part::Elsewhere => {}
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUEST: u64 = 0u64.wrapping_sub(2048);
    const HV: u64 = 0u64.wrapping_sub(32);

    #[test]
    fn kernel_then_user() {
        let chain = [
            CONTEXT_KERNEL,
            0xffff_ffff_8100_0001,
            0xffff_ffff_8100_0002,
            CONTEXT_USER,
            0x40_1000,
            0x40_2000,
        ];
        assert_eq!(
            split(&chain),
            Frames {
                kernel: vec![0xffff_ffff_8100_0001, 0xffff_ffff_8100_0002],
                user: vec![0x40_1000, 0x40_2000],
            }
        );
    }

    #[test]
    fn user_only() {
        let frames = split(&[CONTEXT_USER, 0x40_1000, 0x40_2000, 0x40_3000]);
        assert!(frames.kernel.is_empty());
        assert_eq!(frames.user, vec![0x40_1000, 0x40_2000, 0x40_3000]);
    }

    #[test]
    fn kernel_thread_has_no_user_part() {
        let frames = split(&[CONTEXT_KERNEL, 0xffff_ffff_8100_0001]);
        assert_eq!(frames.kernel, vec![0xffff_ffff_8100_0001]);
        assert!(frames.user.is_empty());
    }

    #[test]
    fn other_contexts_and_unmarked_frames_are_dropped() {
        let chain = [
            0x1234,
            HV,
            0x5678,
            CONTEXT_USER,
            0x40_1000,
            GUEST,
            0x9abc,
            CONTEXT_KERNEL,
            0xffff_ffff_8100_0001,
        ];
        assert_eq!(
            split(&chain),
            Frames {
                kernel: vec![0xffff_ffff_8100_0001],
                user: vec![0x40_1000],
            }
        );
    }

    #[test]
    fn empty_chain() {
        assert_eq!(split(&[]), Frames::default());
        assert_eq!(split(&[CONTEXT_USER, CONTEXT_KERNEL]), Frames::default());
    }

    #[test]
    fn markers_have_the_kernel_values() {
        assert_eq!(CONTEXT_KERNEL, -128_i64 as u64);
        assert_eq!(CONTEXT_USER, -512_i64 as u64);
        assert_eq!(CONTEXT_MAX, -4095_i64 as u64);
    }
}
