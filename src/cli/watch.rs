//! `scraper run --config.watch-interval`: re-read the config file (or directory) on a timer and
//! report when its content changed, so that a ConfigMap update reaches a running pod as a
//! reload instead of a restart.
//!
//! Polling, not inotify: kubelet updates a ConfigMap volume by writing a new timestamped
//! directory and renaming the `..data` symlink over the old one, so the watched file's inode
//! never changes and an inotify watch on it sees nothing. Reading a small file every few
//! seconds costs nothing and follows every way a file can be replaced (edit in place, rename,
//! symlink swap).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::{Interval, MissedTickBehavior};

use crate::runtime::source::read_config;

/// What a reload would read: each file's name and the text, as the controller reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Content {
    files: Vec<String>,
    text: String,
}

fn read(path: &Path) -> std::io::Result<Content> {
    let source = read_config(path)?;
    Ok(Content {
        files: source.files().map(|(name, _)| name.to_owned()).collect(),
        text: source.text,
    })
}

/// Polls one config path. `changed` is cancel-safe: a tick or read dropped half way (another
/// `select!` arm won) leaves the remembered content as it was, so nothing is missed.
pub(super) struct ConfigWatch {
    path: PathBuf,
    /// None when the interval is zero: the watch is off and `changed` never returns.
    interval: Option<Interval>,
    /// The content last loaded or seen, what a change is measured against; None until the
    /// first read succeeds.
    seen: Option<Content>,
    /// Whether the last read failed, so that a file that stays unreadable warns once.
    failing: bool,
}

impl ConfigWatch {
    /// Reads the content now (before the initial load, so that a change made while it loads
    /// is reloaded once rather than missed).
    pub(super) fn new(path: &Path, every: Duration) -> Self {
        let interval = (!every.is_zero()).then(|| {
            let mut i = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            // A slow reload delays the next read rather than causing a burst of them.
            i.set_missed_tick_behavior(MissedTickBehavior::Delay);
            i
        });
        if interval.is_some() {
            tracing::info!(path = %path.display(), interval = ?every, "watching the config for changes");
        }
        ConfigWatch {
            path: path.to_path_buf(),
            seen: interval.as_ref().and_then(|_| read(path).ok()),
            interval,
            failing: false,
        }
    }

    /// Waits until a read finds content different from the last one seen (which the caller
    /// then reloads). A read error is logged and waited out: the running config stays.
    pub(super) async fn changed(&mut self) {
        loop {
            match self.interval.as_mut() {
                Some(interval) => interval.tick().await,
                None => return std::future::pending().await,
            };
            let path = self.path.clone();
            let read = crate::runtime::task::spawn_blocking("config.watch", move || read(&path))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
            if self.observe(read) {
                return;
            }
        }
    }

    /// Takes one read's outcome; true when the content differs from the last one seen.
    fn observe(&mut self, read: std::io::Result<Content>) -> bool {
        match read {
            Ok(content) => {
                if self.failing {
                    self.failing = false;
                    tracing::info!(path = %self.path.display(), "config is readable again");
                }
                if self.seen.as_ref() == Some(&content) {
                    return false;
                }
                self.seen = Some(content);
                true
            }
            Err(error) if !self.failing => {
                self.failing = true;
                tracing::warn!(path = %self.path.display(), %error, "cannot read the watched config; the running config stays");
                false
            }
            Err(error) => {
                tracing::debug!(path = %self.path.display(), %error, "the watched config is still unreadable");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).expect("write");
    }

    /// One read of the watched path, as a tick does it.
    fn poll(w: &mut ConfigWatch) -> bool {
        let path = w.path.clone();
        w.observe(read(&path))
    }

    #[tokio::test]
    async fn reports_each_change_once_and_waits_out_read_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("config.alloy");
        let swap = |target: &str, text: &str| {
            // kubelet's way: a new directory, then `..data` renamed over the old link.
            let d = dir.path().join(target);
            std::fs::create_dir_all(&d).expect("mkdir");
            write(&d.join("config.alloy"), text);
            let tmp = dir.path().join("..data_tmp");
            std::os::unix::fs::symlink(target, &tmp).expect("symlink");
            std::fs::rename(&tmp, dir.path().join("..data")).expect("rename");
        };
        write(&file, "a");
        let mut w = ConfigWatch::new(&file, Duration::from_secs(1));
        // (what happens to the file before the read, whether a change is reported)
        let steps: [(&dyn Fn(), bool); 9] = [
            (&|| {}, false),
            (&|| write(&file, "b"), true),
            (&|| write(&file, "b"), false),
            (&|| std::fs::remove_file(&file).expect("remove"), false),
            (&|| write(&file, "b"), false),
            (&|| write(&file, "c"), true),
            (
                &|| {
                    std::fs::remove_file(&file).expect("remove");
                    swap("..v1", "c");
                    std::os::unix::fs::symlink("..data/config.alloy", &file).expect("link");
                },
                false,
            ),
            (&|| swap("..v2", "d"), true),
            (&|| swap("..v3", "d"), false),
        ];
        for (i, (act, want)) in steps.iter().enumerate() {
            act();
            assert_eq!(poll(&mut w), *want, "step {i}");
        }
    }

    #[tokio::test]
    async fn zero_interval_is_off() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("config.alloy");
        write(&file, "a");
        let mut w = ConfigWatch::new(&file, Duration::ZERO);
        assert!(w.interval.is_none());
        write(&file, "b");
        let r = tokio::time::timeout(Duration::from_millis(50), w.changed()).await;
        assert!(r.is_err(), "an interval of 0s never reports");
    }

    #[tokio::test]
    async fn a_directory_change_in_any_file_or_a_new_file_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(&dir.path().join("a.alloy"), "a");
        let mut w = ConfigWatch::new(dir.path(), Duration::from_secs(1));
        assert!(!poll(&mut w));
        write(&dir.path().join("b.alloy"), "");
        assert!(poll(&mut w), "a new (even empty) file");
        write(&dir.path().join("notes.txt"), "x");
        assert!(!poll(&mut w), "not an .alloy file");
        write(&dir.path().join("a.alloy"), "a2");
        assert!(poll(&mut w));
        std::fs::rename(dir.path().join("b.alloy"), dir.path().join("c.alloy")).expect("mv");
        assert!(poll(&mut w), "a renamed file");
    }
}
