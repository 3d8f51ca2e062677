//! Kernel addresses, from `/proc/kallsyms` through blazesym (no vmlinux: none is installed on
//! the target machines, and kallsyms also covers modules and BPF programs).

use std::fs::File;
use std::io::Read;

use blazesym::MaybeDefault;
use blazesym::symbolize::source::{Kernel as KernelSource, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as Blaze};

const KALLSYMS: &str = "/proc/kallsyms";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Unchecked,
    Usable,
    /// Addresses hidden (no CAP_SYSLOG, or `kptr_restrict`), or the file is unreadable.
    Unusable,
}

#[derive(Debug)]
pub(crate) struct Kernel {
    state: State,
}

impl Kernel {
    pub fn new() -> Self {
        Kernel {
            state: State::Unchecked,
        }
    }

    /// Whether kallsyms was found usable (false until the first lookup).
    pub fn loaded(&self) -> bool {
        self.state == State::Usable
    }

    /// The kernel function at `addr`; `None` when unknown or when kallsyms is unusable (which
    /// is logged once).
    pub fn lookup(&mut self, blaze: &Blaze, addr: u64) -> Option<String> {
        if self.state == State::Unchecked {
            self.state = match kallsyms_has_addresses(KALLSYMS) {
                Ok(true) => State::Usable,
                Ok(false) => {
                    tracing::warn!(
                        path = KALLSYMS,
                        "kernel symbols are hidden (all addresses read as zero; needs CAP_SYSLOG and kptr_restrict < 2); kernel frames will be [unknown]"
                    );
                    State::Unusable
                }
                Err(error) => {
                    tracing::warn!(path = KALLSYMS, %error, "cannot read kernel symbols; kernel frames will be [unknown]");
                    State::Unusable
                }
            };
        }
        if self.state != State::Usable {
            return None;
        }
        let src = Source::Kernel(KernelSource {
            kallsyms: MaybeDefault::Default,
            vmlinux: MaybeDefault::None,
            // kallsyms holds run-time addresses; an offset only matters for a vmlinux image.
            kaslr_offset: Some(0),
            debug_syms: false,
            ..KernelSource::default()
        });
        match blaze.symbolize_single(&src, Input::AbsAddr(addr)) {
            Ok(Symbolized::Sym(sym)) => Some(sym.name.into_owned()),
            Ok(Symbolized::Unknown(_)) => None,
            Err(error) => {
                tracing::warn!(%error, "kernel symbolization failed; kernel frames will be [unknown]");
                self.state = State::Unusable;
                None
            }
        }
    }
}

/// Whether the first entries of a kallsyms file show real addresses: without CAP_SYSLOG the
/// kernel prints every address as zero, and a symbol table of zeros resolves nothing.
pub(crate) fn kallsyms_has_addresses(path: &str) -> std::io::Result<bool> {
    let mut head = Vec::with_capacity(4096);
    File::open(path)?.take(4096).read_to_end(&mut head)?;
    Ok(head
        .split(|&b| b == b'\n')
        .filter_map(|line| line.split(|&b| b == b' ').next())
        .filter(|a| !a.is_empty())
        .take(16)
        .any(|a| a.iter().any(|&c| c != b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn detects_hidden_addresses() {
        let cases: &[(&str, bool)] = &[
            ("ffffffff81000000 T _stext\nffffffff81000010 T foo\n", true),
            ("0000000000000000 T _stext\n0000000000000000 T foo\n", false),
            ("", false),
        ];
        for (text, want) in cases {
            let mut f = tempfile::NamedTempFile::new().expect("temp");
            f.write_all(text.as_bytes()).expect("write");
            let path = f.path().to_str().expect("utf-8 temp path");
            assert_eq!(
                kallsyms_has_addresses(path).expect("reads"),
                *want,
                "{text:?}"
            );
        }
        assert!(kallsyms_has_addresses("/nonexistent/kallsyms").is_err());
    }
}
