//! The `queue_config` and `limits` blocks (ours) that every sending component accepts.

use serde::Deserialize;

use super::limits;
use crate::syntax::types::Duration;

/// `queue_config { ... }` (ours).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawQueueConfig")]
pub struct QueueConfig {
    pub max_bytes: u64,
    pub senders: u64,
    pub max_age: Duration,
    pub flush_deadline: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            max_bytes: 64 << 20,
            senders: 4,
            max_age: Duration::from_secs(3600),
            flush_deadline: Duration::from_secs(5),
        }
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct RawQueueConfig {
    max_bytes: u64,
    senders: u64,
    max_age: Duration,
    flush_deadline: Duration,
}

impl Default for RawQueueConfig {
    fn default() -> Self {
        let d = QueueConfig::default();
        RawQueueConfig {
            max_bytes: d.max_bytes,
            senders: d.senders,
            max_age: d.max_age,
            flush_deadline: d.flush_deadline,
        }
    }
}

impl TryFrom<RawQueueConfig> for QueueConfig {
    type Error = String;
    fn try_from(r: RawQueueConfig) -> Result<Self, String> {
        if !(1..=256).contains(&r.senders) {
            return Err(format!(
                "queue_config senders must be between 1 and 256, got {}",
                r.senders
            ));
        }
        Ok(QueueConfig {
            max_bytes: r.max_bytes,
            senders: r.senders,
            max_age: r.max_age,
            flush_deadline: r.flush_deadline,
        })
    }
}

/// `limits { ... }` (ours): the backend's per-profile limits to fit profiles into.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct LimitsConfig {
    pub max_profile_size_bytes: u64,
    pub max_profile_samples: u64,
    pub max_burst_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let d = limits::Limits::default();
        LimitsConfig {
            max_profile_size_bytes: d.max_profile_bytes as u64,
            max_profile_samples: d.max_samples as u64,
            max_burst_bytes: d.max_burst_bytes as u64,
        }
    }
}
