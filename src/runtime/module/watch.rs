//! Watching imported modules: every file and URL a config imported is read again at its
//! `poll_frequency` (the shortest of them), and a change is reported so that the config is
//! applied again. Alloy's `fsnotify` detector also polls at `poll_frequency` as a fallback;
//! here both detectors poll, which sees every change, only later.

use tokio_util::sync::CancellationToken;

use super::fetch;
use super::imports::{Watch, Watched, fingerprint, read_path};

/// Waits until one of `watches` changed, and returns what changed; its fingerprint is
/// updated, so the same change is reported once. A file that cannot be read counts as changed
/// (the reload reports why). None when cancelled or when there is nothing to watch.
pub(crate) async fn wait_for_change(
    watches: &mut [Watch],
    cancel: &CancellationToken,
) -> Option<String> {
    let every = watches.iter().map(|w| w.every).min()?;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return None,
            _ = tokio::time::sleep(every) => {}
        }
        let current: Vec<Watch> = watches.to_vec();
        let fingerprints = crate::runtime::task::spawn_blocking("module.import_watch", move || {
            current.iter().map(read_fingerprint).collect::<Vec<u64>>()
        })
        .await
        .ok()?;
        let mut changed = None;
        for (watch, now) in watches.iter_mut().zip(fingerprints) {
            if watch.fingerprint != now {
                watch.fingerprint = now;
                changed.get_or_insert_with(|| describe(&watch.what));
            }
        }
        if changed.is_some() {
            return changed;
        }
    }
}

fn read_fingerprint(watch: &Watch) -> u64 {
    let read = match &watch.what {
        Watched::File(path) => read_path(path).map_err(|e| e.to_string()),
        Watched::Http(request) => {
            fetch::get_blocking(request).map(|text| vec![(request.url.clone(), text)])
        }
    };
    match read {
        Ok(files) => fingerprint(&files),
        // Errors are fingerprinted too, so a file that stays missing is reported once.
        Err(e) => fingerprint(&[(String::new(), e)]),
    }
}

fn describe(what: &Watched) -> String {
    match what {
        Watched::File(path) => path.display().to_string(),
        Watched::Http(request) => request.url.clone(),
    }
}
