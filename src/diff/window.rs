//! Building a [`Window`] from a source's merged answer, and the labels and title a report
//! carries: shared by `scraper diff` and the explorer's diff endpoint, so both produce the same
//! report for the same windows.

use std::time::SystemTime;

use super::Window;
use crate::gocompat::time::rfc3339_millis;
use crate::pprof::proto::Profile;

impl Window {
    /// One side of a comparison over `[from, to)`, from `profiles` profiles of `series` series
    /// merged into `profile`. The seconds each instance covers are the profiles' summed
    /// durations when they carry one (CPU profiles do), else the window's length.
    pub fn measured(
        profile: Profile,
        profiles: usize,
        series: usize,
        (from, to): (SystemTime, SystemTime),
        label: &str,
    ) -> Window {
        let instances = series.max(1);
        let seconds = seconds(profile.duration_nanos, instances, (from, to));
        Window {
            label: format!(
                "{label}: {} .. {}",
                rfc3339_millis(from),
                rfc3339_millis(to)
            ),
            seconds,
            instances,
            profiles,
            profile,
        }
    }
}

/// The seconds a window's rates are per: the time its profiles cover per instance
/// (`duration_nanos` summed over the merged profiles), or the window's length when they do not
/// say. Profiles that cover less than the window (4 s CPU profiles every 5 s) would otherwise
/// read low.
pub fn seconds(duration_nanos: i64, instances: usize, (from, to): (SystemTime, SystemTime)) -> f64 {
    let covered = duration_nanos as f64 / 1e9 / instances.max(1) as f64;
    if covered > 0.0 {
        covered
    } else {
        to.duration_since(from).unwrap_or_default().as_secs_f64()
    }
}

/// The two windows' labels: "before"/"after", or around a mark, which one (a report may be
/// read long after, next to others).
pub fn side_labels(mark: Option<&str>) -> (String, String) {
    match mark {
        Some(name) => (format!("before {name:?}"), format!("after {name:?}")),
        None => ("before".to_string(), "after".to_string()),
    }
}

/// A report's title: the profile type's name, the selector and the mark if any.
pub fn title(type_name: &str, selector: &str, mark: Option<&str>) -> String {
    match mark {
        Some(name) => format!("{type_name} {selector} around {name:?}"),
        None => format!("{type_name} {selector}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn seconds_come_from_durations_when_profiles_carry_them() {
        let from = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
        let range = (from, from + Duration::from_secs(60));
        let cases = [
            // (duration_nanos, series, seconds, instances)
            (0, 0, 60.0, 1),
            (0, 3, 60.0, 3),
            (30_000_000_000, 1, 30.0, 1),
            (30_000_000_000, 2, 15.0, 2),
        ];
        for (duration_nanos, series, seconds, instances) in cases {
            let profile = Profile {
                duration_nanos,
                ..Profile::default()
            };
            let w = Window::measured(profile, 4, series, range, "before");
            assert_eq!(
                (w.seconds, w.instances, w.profiles),
                (seconds, instances, 4)
            );
            assert_eq!(
                w.label,
                "before: 2025-06-15T15:06:40.000Z .. 2025-06-15T15:07:40.000Z"
            );
        }
        assert_eq!(
            title("process_cpu", "{}", Some("up")),
            "process_cpu {} around \"up\""
        );
        assert_eq!(side_labels(None), ("before".into(), "after".into()));
    }
}
