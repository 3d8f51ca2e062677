//! Bad usage that clap cannot see (a selector, a time or a duration that does not parse, an
//! `--end` before the mark): exit code 2, as clap's own usage errors, so that a pipeline can
//! tell a typo from a check that could not run (1) or a verdict (3) (docs/DIFF-PIPELINE.md).

use std::process::ExitCode;

/// The exit code of bad usage, clap's.
pub(crate) const USAGE: u8 = 2;

/// An error in the command line; `main` exits with [`USAGE`] when one is anywhere in the chain.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

/// A usage error with this message.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The exit code for a failed command: [`USAGE`] for bad usage, 1 for anything else.
pub(crate) fn exit_code(e: &anyhow::Error) -> ExitCode {
    if e.chain().any(|c| c.is::<UsageError>()) {
        ExitCode::from(USAGE)
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn usage_errors_exit_2_and_others_1() {
        let wrapped = Err::<(), _>(usage("bad --width")).context("in window");
        for (e, want) in [
            (usage("bad selector"), ExitCode::from(USAGE)),
            (wrapped.unwrap_err(), ExitCode::from(USAGE)),
            (anyhow::anyhow!("no store"), ExitCode::FAILURE),
        ] {
            assert_eq!(exit_code(&e), want, "{e:#}");
        }
    }
}
