//! What the web API and UI show about a component, in the JSON shape of Alloy's
//! `/api/v0/web/components` so that tools written against Alloy can read it.

use serde::Serialize;

use super::health::{Health, HealthState};
use crate::gocompat::time::rfc3339_nanos;

#[derive(Clone, Debug, Serialize)]
pub struct ComponentInfo {
    /// The component name, `discovery.relabel`.
    pub name: String,
    /// Alloy always says `"block"` here for builtin components.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `discovery.relabel.otel`
    #[serde(rename = "localID")]
    pub local_id: String,
    /// Empty: there are no modules.
    #[serde(rename = "moduleID")]
    pub module_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label: String,
    #[serde(rename = "referencesTo")]
    pub references_to: Vec<String>,
    #[serde(rename = "referencedBy")]
    pub referenced_by: Vec<String>,
    pub health: HealthInfo,
    /// Alloy leaves this empty in its API; so do we (the block text could hold literal secrets).
    pub original: String,
    /// The arguments the component is running with (secrets redacted); absent in the list view
    /// and before the first successful evaluation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exports: Option<serde_json::Value>,
    #[serde(rename = "debugInfo", skip_serializing_if = "Option::is_none")]
    pub debug_info: Option<serde_json::Value>,
    #[serde(rename = "liveDebuggingEnabled")]
    pub live_debugging_enabled: bool,
    /// How many times the block was evaluated; for tests and the UI, not part of Alloy's JSON.
    #[serde(skip)]
    pub evaluations: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HealthInfo {
    pub state: HealthState,
    pub message: String,
    #[serde(rename = "updatedTime")]
    pub updated_time: String,
}

/// The outcome of the latest config load (startup, `/-/reload`, SIGHUP): what
/// `alloy_config_last_load_successful` says, with when and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadOutcome {
    pub at: std::time::SystemTime,
    /// None when the load succeeded; else the error as `/-/reload` answers it.
    pub error: Option<String>,
}

impl From<&Health> for HealthInfo {
    fn from(h: &Health) -> Self {
        HealthInfo {
            state: h.state,
            message: h.message.clone(),
            updated_time: rfc3339_nanos(h.updated),
        }
    }
}

impl Serialize for HealthState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
