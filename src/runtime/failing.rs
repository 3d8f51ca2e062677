//! A run of failures of one repeated operation (a poll, a refresh, a listing): it decides
//! whether a failure is news for a warning (the run starts, or its reason changes) or a repeat
//! for a debug line, and tells the info line that ends the run when it began. Shared by the
//! components that poll something outside (`discovery.http`, `discovery.docker`,
//! `remote.kubernetes.*`), so that all of them are loud in the same way.

use std::time::Instant;

/// The failing state of one repeated operation: none, or the last reason and when the run began.
#[derive(Debug, Default)]
pub struct Failing {
    run: Option<(String, Instant)>,
}

impl Failing {
    /// Records a failure; true when it is news: the first of a run, or another reason than the
    /// last one's. The run keeps the time it began across changes of reason.
    pub fn failed(&mut self, error: &str) -> bool {
        match &mut self.run {
            Some((last, _)) if last == error => false,
            Some((last, _)) => {
                error.clone_into(last);
                true
            }
            None => {
                self.run = Some((error.to_owned(), Instant::now()));
                true
            }
        }
    }

    /// Ends a run: when it began, or `None` when nothing was failing.
    pub fn recovered(&mut self) -> Option<Instant> {
        self.run.take().map(|(_, since)| since)
    }

    /// The last failure's reason while a run lasts.
    pub fn error(&self) -> Option<&str> {
        self.run.as_ref().map(|(e, _)| e.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn news_is_the_start_of_a_run_or_a_new_reason() {
        // (step, is news, error after the step); None = a success.
        let steps: &[(Option<&str>, bool, Option<&str>)] = &[
            (Some("refused"), true, Some("refused")),
            (Some("refused"), false, Some("refused")),
            (Some("timeout"), true, Some("timeout")),
            (Some("timeout"), false, Some("timeout")),
            (None, true, None),
            (Some("timeout"), true, Some("timeout")),
        ];
        let mut f = Failing::default();
        for (i, &(step, news, after)) in steps.iter().enumerate() {
            let got = match step {
                Some(e) => f.failed(e),
                None => f.recovered().is_some(),
            };
            assert_eq!(got, news, "step {i}");
            assert_eq!(f.error(), after, "step {i}");
        }
        assert!(f.recovered().is_some());
        assert!(f.recovered().is_none(), "nothing was failing");
    }

    #[test]
    fn a_new_reason_keeps_when_the_run_began() {
        let mut f = Failing::default();
        f.failed("a");
        let began = f.run.as_ref().map(|(_, s)| *s);
        f.failed("b");
        assert_eq!(f.recovered(), began);
    }
}
