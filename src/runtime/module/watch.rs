//! Watching imported modules: every file and URL a config imported is read again at its own
//! `poll_frequency`, and a change is reported so that the config is applied again. Alloy's
//! `fsnotify` detector also polls at `poll_frequency` as a fallback; here both detectors poll,
//! which sees every change, only later.
//!
//! Each watch has its own next-due time and each read runs as a job of its own, so a URL
//! polled every minute is not fetched every second because a file beside it is, and a slow
//! URL (up to its `poll_timeout`) does not hold back the files' checks.

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::imports::{Watch, Watched, fingerprint, read_watched};

/// Waits until one of `watches` changed, and returns what changed; its fingerprint is
/// updated, so the same change is reported once. A file that cannot be read counts as changed
/// (the reload reports why, or falls back to its last good content). None when cancelled or
/// when there is nothing to watch.
pub(crate) async fn wait_for_change(
    watches: &mut [Watch],
    cancel: &CancellationToken,
) -> Option<String> {
    if watches.is_empty() {
        return None;
    }
    let start = Instant::now();
    // None while the watch's read is in flight: one read per watch at a time.
    let mut due: Vec<Option<Instant>> = watches.iter().map(|w| Some(start + w.every)).collect();
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, u64)>();
    loop {
        let now = Instant::now();
        for (i, watch) in watches.iter().enumerate() {
            if due[i].is_some_and(|d| d <= now) {
                due[i] = None;
                let what = watch.what.clone();
                let tx = tx.clone();
                // A reply after this function returned has nobody to go to; that is fine.
                drop(crate::runtime::task::spawn_blocking(
                    "module.import_watch",
                    move || {
                        let _ = tx.send((i, read_fingerprint(&what)));
                    },
                ));
            }
        }
        let next = due.iter().flatten().min().copied();
        tokio::select! {
            _ = cancel.cancelled() => return None,
            _ = sleep_until(next) => {}
            Some((i, now)) = rx.recv() => {
                let watch = &mut watches[i];
                due[i] = Some(Instant::now() + watch.every);
                if watch.fingerprint != now {
                    watch.fingerprint = now;
                    return Some(describe(&watch.what));
                }
            }
        }
    }
}

/// Sleeps until `at`, or forever when every watch is being read.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The fingerprint of what `what` holds now; errors are fingerprinted too, so that a file that
/// stays missing is reported once.
pub(crate) fn read_fingerprint(what: &Watched) -> u64 {
    match read_watched(what) {
        Ok(files) => fingerprint(&files),
        Err(e) => error_fingerprint(&e),
    }
}

/// What a watch of an unreadable module compares with.
pub(crate) fn error_fingerprint(error: &str) -> u64 {
    fingerprint(&[(String::new(), error.to_string())])
}

fn describe(what: &Watched) -> String {
    match what {
        Watched::File(path) => path.display().to_string(),
        Watched::Http(request) => request.url.clone(),
    }
}
