//! The last content read from each imported file and URL, so that a module that cannot be read
//! again (a server down, a file being replaced) does not make every later load fail: the load
//! goes on with what was read last, as Alloy's remote sources keep their last content, and
//! says so once when the problem starts ([`ImportStale`]) and once when it ends
//! ([`ImportRecovered`]). `scraper_module_imports_stale` counts the modules served from their
//! last good content now.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus_client::metrics::gauge::Gauge;

use crate::runtime::event::{InternalEvent, emit};

type Files = Vec<(String, String)>;

#[derive(Debug, Default)]
struct Entry {
    files: Files,
    /// The error of the latest read, while it fails.
    failing: Option<String>,
}

/// Shared by the loads of one controller (`scraper check` uses a fresh one: it has nothing to
/// fall back to).
#[derive(Debug, Default)]
pub(crate) struct LastGood {
    entries: Mutex<HashMap<String, Entry>>,
    stale: Gauge,
}

impl LastGood {
    /// `stale` is set to the number of modules served from their last good content.
    pub fn new(stale: Gauge) -> Self {
        LastGood {
            entries: Mutex::new(HashMap::new()),
            stale,
        }
    }

    /// Remembers a successful read of `key` (`what` names it in the log).
    pub fn record_ok(&self, key: &str, what: &str, files: &Files) {
        let mut entries = crate::sync::lock(&self.entries);
        let entry = entries.entry(key.to_string()).or_default();
        entry.files.clone_from(files);
        if let Some(error) = entry.failing.take() {
            emit(ImportRecovered {
                module: what,
                previous_error: &error,
            });
        }
        self.update_gauge(&entries);
    }

    /// The last good content of `key` after a failed read, if there is one.
    pub fn fallback(&self, key: &str, what: &str, error: &str) -> Option<Files> {
        let mut entries = crate::sync::lock(&self.entries);
        let entry = entries.get_mut(key)?;
        if entry.failing.is_none() {
            emit(ImportStale {
                module: what,
                error,
            });
        }
        entry.failing = Some(error.to_string());
        let files = entry.files.clone();
        self.update_gauge(&entries);
        Some(files)
    }

    fn update_gauge(&self, entries: &HashMap<String, Entry>) {
        let n = entries.values().filter(|e| e.failing.is_some()).count();
        self.stale.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    #[cfg(test)]
    fn stale(&self) -> i64 {
        self.stale.get()
    }
}

/// An imported module could not be read again; its last good content is used.
pub(crate) struct ImportStale<'a> {
    pub module: &'a str,
    pub error: &'a str,
}

impl InternalEvent for ImportStale<'_> {
    fn emit(self) {
        tracing::warn!(
            module = %self.module,
            error = %self.error,
            "imported module cannot be read; using the content last read until it can"
        );
    }
}

/// The end of [`ImportStale`]: the module was read again.
pub(crate) struct ImportRecovered<'a> {
    pub module: &'a str,
    pub previous_error: &'a str,
}

impl InternalEvent for ImportRecovered<'_> {
    fn emit(self) {
        tracing::info!(
            module = %self.module,
            previous_error = %self.previous_error,
            "imported module can be read again"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(text: &str) -> Files {
        vec![("m.alloy".to_string(), text.to_string())]
    }

    #[test]
    fn falls_back_to_the_last_good_content_and_recovers() {
        let lg = LastGood::new(Gauge::default());
        assert_eq!(lg.fallback("k", "m", "down"), None, "nothing read yet");
        lg.record_ok("k", "m", &files("v1"));
        assert_eq!(lg.stale(), 0);
        assert_eq!(lg.fallback("k", "m", "down"), Some(files("v1")));
        assert_eq!(lg.stale(), 1);
        assert_eq!(lg.fallback("k", "m", "still down"), Some(files("v1")));
        assert_eq!(lg.stale(), 1, "one module, however many failed reads");
        lg.record_ok("k", "m", &files("v2"));
        assert_eq!(lg.stale(), 0);
        assert_eq!(lg.fallback("k", "m", "down"), Some(files("v2")));
    }
}
