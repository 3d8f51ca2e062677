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

use crate::runtime::Controller;
use crate::runtime::source::read_config;
use crate::syntax::diag::Source;

/// The shortest interval the watch runs at. Reading a few small files is cheap, but `1ms` (or a
/// typo such as `1ns`) would make the watch a busy loop of reads. 100 ms rather than a second:
/// tests exercise the watch in well under a second, and nobody gains from a floor that forbids
/// a fast local edit loop. The chart accepts only whole seconds (values.schema.json): in a pod
/// the ConfigMap itself takes up to a minute to arrive.
pub(super) const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The interval the watch runs at: 0 (off) stays 0, anything shorter than [`MIN_INTERVAL`]
/// becomes it, with a warning.
pub(super) fn effective_interval(every: Duration) -> Duration {
    if every.is_zero() || every >= MIN_INTERVAL {
        return every;
    }
    tracing::warn!(
        requested = ?every,
        used = ?MIN_INTERVAL,
        "--config.watch-interval is below the minimum; using the minimum"
    );
    MIN_INTERVAL
}

/// What a reload would read: each file's name and the text, as the controller reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Content {
    files: Vec<String>,
    text: String,
}

impl Content {
    fn of(source: &Source) -> Content {
        Content {
            files: source.files().map(|(name, _)| name.to_owned()).collect(),
            text: source.text.clone(),
        }
    }
}

/// Polls one config path. `changed` is cancel-safe: a tick or read dropped half way (another
/// `select!` arm won) leaves the remembered read as it was, so nothing is missed.
///
/// A change is reported only once two reads in a row, one interval apart, found the same
/// content: a file written in place by an editor or `cp` (not atomically) can be read half
/// written or empty, and an empty config is valid, so loading that would tear every component
/// down. What is reported is compared with what the controller last applied, not with the
/// watch's own memory: a SIGHUP or `/-/reload` that already loaded the file is not followed by
/// a second reload, and a file that changes again after a reload is reloaded again.
pub(super) struct ConfigWatch {
    path: PathBuf,
    /// None when the interval is zero: the watch is off and `changed` never returns.
    interval: Option<Interval>,
    /// The previous read's content; None before the first read and after a failed one.
    last_read: Option<Content>,
    /// Whether the last read failed, so that a file that stays unreadable warns once.
    failing: bool,
}

impl ConfigWatch {
    pub(super) fn new(path: &Path, every: Duration) -> Self {
        let every = effective_interval(every);
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
            interval,
            last_read: None,
            failing: false,
        }
    }

    /// Waits until the file holds a stable content other than the one `controller` last
    /// applied, and returns it: the caller applies exactly that text. A read error is logged
    /// and waited out: the running config stays.
    pub(super) async fn changed(&mut self, controller: &Controller) -> Source {
        loop {
            match self.interval.as_mut() {
                Some(interval) => interval.tick().await,
                None => return std::future::pending().await,
            };
            let path = self.path.clone();
            let read =
                crate::runtime::task::spawn_blocking("config.watch", move || read_config(&path))
                    .await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
            if let Some(source) = self.observe(read, controller.last_applied().as_ref()) {
                return source;
            }
        }
    }

    /// Takes one read's outcome and the config last applied; returns the content to reload
    /// when it is the same as the previous read's and differs from the applied one.
    fn observe(
        &mut self,
        read: std::io::Result<Source>,
        applied: Option<&Source>,
    ) -> Option<Source> {
        match read {
            Ok(source) => {
                if self.failing {
                    self.failing = false;
                    tracing::info!(path = %self.path.display(), "config is readable again");
                }
                let content = Content::of(&source);
                let stable = self.last_read.as_ref() == Some(&content);
                let loaded = applied.map(Content::of).as_ref() == Some(&content);
                self.last_read = Some(content);
                (stable && !loaded).then_some(source)
            }
            Err(error) => {
                self.last_read = None;
                if self.failing {
                    tracing::debug!(path = %self.path.display(), %error, "the watched config is still unreadable");
                } else {
                    self.failing = true;
                    tracing::warn!(path = %self.path.display(), %error, "cannot read the watched config; the running config stays");
                }
                None
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

    /// The watch and what `scraper run` does with it: `applied` is the config the controller
    /// last applied (the initial load's, a reload's, a SIGHUP's).
    struct Run {
        watch: ConfigWatch,
        applied: Source,
    }

    impl Run {
        fn start(path: &Path) -> Run {
            Run {
                applied: read_config(path).expect("initial load"),
                watch: ConfigWatch::new(path, Duration::from_secs(1)),
            }
        }

        /// One tick; the text reloaded, if any (which the controller then holds).
        fn tick(&mut self) -> Option<String> {
            let read = read_config(&self.watch.path);
            let reload = self.watch.observe(read, Some(&self.applied))?;
            self.applied = reload.clone();
            Some(reload.text)
        }

        /// SIGHUP or `/-/reload`: the controller reads and applies the file itself.
        fn signal(&mut self) {
            self.applied = read_config(&self.watch.path).expect("read");
        }
    }

    #[tokio::test]
    async fn reports_each_stable_change_once_and_waits_out_read_errors() {
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
        let mut run = Run::start(&file);
        // (what happens to the file before the tick, what the tick reloads)
        let steps: [(&dyn Fn(), Option<&str>); 13] = [
            (&|| {}, None),
            (&|| write(&file, "b"), None),
            (&|| {}, Some("b")),
            (&|| {}, None),
            (&|| std::fs::remove_file(&file).expect("remove"), None),
            (&|| write(&file, "b"), None),
            (&|| write(&file, "c"), None),
            (&|| {}, Some("c")),
            (
                &|| {
                    std::fs::remove_file(&file).expect("remove");
                    swap("..v1", "c");
                    std::os::unix::fs::symlink("..data/config.alloy", &file).expect("link");
                },
                None,
            ),
            (&|| swap("..v2", "d"), None),
            (&|| {}, Some("d")),
            (&|| swap("..v3", "d"), None),
            (&|| {}, None),
        ];
        for (i, (act, want)) in steps.iter().enumerate() {
            act();
            assert_eq!(run.tick().as_deref(), *want, "step {i}");
        }
    }

    #[tokio::test]
    async fn a_file_written_in_two_halves_across_a_tick_loads_only_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("config.alloy");
        let whole = "logging {\n  level = \"debug\"\n}\n";
        let (first, _) = whole.split_at(12);
        write(&file, "a");
        let mut run = Run::start(&file);
        // Truncated to empty (a valid config that would stop everything), then half, then
        // whole: each read differs from the one before, so nothing loads until it stays.
        write(&file, "");
        assert_eq!(run.tick(), None, "empty");
        write(&file, first);
        assert_eq!(run.tick(), None, "first half");
        write(&file, whole);
        assert_eq!(run.tick(), None, "whole, first seen");
        assert_eq!(run.tick().as_deref(), Some(whole));
        assert_eq!(run.tick(), None, "loaded once");
    }

    #[tokio::test]
    async fn a_signal_reload_is_not_repeated_and_a_later_change_is_reloaded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("config.alloy");
        write(&file, "a");
        let mut run = Run::start(&file);
        write(&file, "b");
        assert_eq!(run.tick(), None);
        run.signal();
        assert_eq!(run.tick(), None, "SIGHUP already loaded b");
        assert_eq!(run.tick(), None);
        // Changed again right after a reload: reloaded again, in its final form.
        write(&file, "c");
        assert_eq!(run.tick(), None);
        assert_eq!(run.tick().as_deref(), Some("c"));
        write(&file, "d");
        run.signal();
        write(&file, "e");
        assert_eq!(run.tick(), None, "e first seen");
        assert_eq!(
            run.tick().as_deref(),
            Some("e"),
            "d was signalled, e was not"
        );
    }

    #[tokio::test]
    async fn zero_interval_is_off() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("config.alloy");
        write(&file, "a");
        let mut w = ConfigWatch::new(&file, Duration::ZERO);
        assert!(w.interval.is_none());
        write(&file, "b");
        let controller = Controller::new(crate::runtime::ControllerOptions::new(
            crate::components::builtin(),
        ));
        let r = tokio::time::timeout(Duration::from_millis(50), w.changed(&controller)).await;
        assert!(r.is_err(), "an interval of 0s never reports");
    }

    #[test]
    fn short_intervals_are_raised_to_the_minimum() {
        let ms = Duration::from_millis;
        for (asked, used) in [
            (Duration::ZERO, Duration::ZERO),
            (Duration::from_nanos(1), MIN_INTERVAL),
            (ms(99), MIN_INTERVAL),
            (ms(100), ms(100)),
            (ms(200), ms(200)),
            (Duration::from_secs(10), Duration::from_secs(10)),
        ] {
            assert_eq!(effective_interval(asked), used, "{asked:?}");
        }
    }

    #[tokio::test]
    async fn a_directory_change_in_any_file_or_a_new_file_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(&dir.path().join("a.alloy"), "a");
        let mut run = Run::start(dir.path());
        let changed = |run: &mut Run| run.tick().is_none() && run.tick().is_some();
        assert_eq!(run.tick(), None);
        write(&dir.path().join("b.alloy"), "");
        assert!(changed(&mut run), "a new (even empty) file");
        write(&dir.path().join("notes.txt"), "x");
        assert_eq!(run.tick(), None, "not an .alloy file");
        write(&dir.path().join("a.alloy"), "a2");
        assert!(changed(&mut run));
        std::fs::rename(dir.path().join("b.alloy"), dir.path().join("c.alloy")).expect("mv");
        assert!(changed(&mut run), "a renamed file");
    }
}
