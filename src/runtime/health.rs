//! Component health, as Alloy reports it in the UI, `/-/healthy` and the running-components gauge.

use std::fmt;
use std::time::SystemTime;

/// Ordered from healthiest to least healthy: `least_healthy` relies on the derive order, which
/// matches Alloy's numeric `HealthType` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HealthState {
    Unknown,
    Healthy,
    Unhealthy,
    Exited,
}

impl HealthState {
    pub const ALL: [HealthState; 4] = [
        HealthState::Unknown,
        HealthState::Healthy,
        HealthState::Unhealthy,
        HealthState::Exited,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Unknown => "unknown",
            HealthState::Healthy => "healthy",
            HealthState::Unhealthy => "unhealthy",
            HealthState::Exited => "exited",
        }
    }
}

impl fmt::Display for HealthState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    pub state: HealthState,
    pub message: String,
    pub updated: SystemTime,
}

impl Health {
    pub fn new(state: HealthState, message: impl Into<String>) -> Self {
        Health {
            state,
            message: message.into(),
            updated: SystemTime::now(),
        }
    }

    pub fn healthy(message: impl Into<String>) -> Self {
        Health::new(HealthState::Healthy, message)
    }

    pub fn unhealthy(message: impl Into<String>) -> Self {
        Health::new(HealthState::Unhealthy, message)
    }
}

/// The least healthy of several reports; on a tie the most recent one wins, so the message shown
/// is the freshest explanation of the current state (Alloy's `component.LeastHealthy`).
pub fn least_healthy(reports: impl IntoIterator<Item = Health>) -> Option<Health> {
    reports.into_iter().reduce(|worst, h| {
        if h.state > worst.state || (h.state == worst.state && h.updated > worst.updated) {
            h
        } else {
            worst
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn at(state: HealthState, msg: &str, secs: u64) -> Health {
        Health {
            state,
            message: msg.into(),
            updated: UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    #[test]
    fn least_healthy_picks_worst_then_newest() {
        use HealthState::*;
        type Report = (HealthState, &'static str, u64);
        let cases: &[(&[Report], &str)] = &[
            (&[(Healthy, "a", 1)], "a"),
            (&[(Healthy, "a", 1), (Unhealthy, "b", 0)], "b"),
            (&[(Exited, "a", 0), (Unhealthy, "b", 5)], "a"),
            (&[(Healthy, "old", 1), (Healthy, "new", 2)], "new"),
            (&[(Unknown, "x", 9), (Healthy, "y", 1)], "y"),
        ];
        for (reports, want) in cases {
            let got = least_healthy(reports.iter().map(|&(s, m, t)| at(s, m, t)));
            assert_eq!(
                got.map(|h| h.message),
                Some(want.to_string()),
                "{reports:?}"
            );
        }
        assert_eq!(least_healthy(Vec::new()), None);
    }
}
