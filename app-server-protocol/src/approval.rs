//! Server → client approval requests and the decisions clients answer with.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub started_at_ms: i64,
    pub reason: Option<String>,
    pub command: Option<String>,
    pub cwd: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub started_at_ms: i64,
    pub reason: Option<String>,
}

/// The `result` of an approval request. Decisions carrying a policy amendment are read as
/// their plain counterpart (rein has no exec policy to amend yet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalResponse {
    pub decision: serde_json::Value,
}

/// Codex's decision values, for commands and file changes alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewDecision {
    Accept,
    AcceptForSession,
    /// Refuse; the turn continues.
    Decline,
    /// Refuse and interrupt the turn.
    Cancel,
}

impl ReviewDecision {
    /// Read a decision value: a string (`"accept"`) or a one-key object
    /// (`{"acceptWithExecpolicyAmendment": {...}}`).
    pub fn from_value(value: &serde_json::Value) -> Option<Self> {
        let name = match value {
            serde_json::Value::String(s) => s.as_str(),
            serde_json::Value::Object(map) if map.len() == 1 => map.keys().next()?.as_str(),
            _ => return None,
        };
        match name {
            "accept" | "approved" | "acceptWithExecpolicyAmendment" => Some(Self::Accept),
            "acceptForSession" | "approved_for_session" => Some(Self::AcceptForSession),
            "decline" | "denied" | "applyNetworkPolicyAmendment" => Some(Self::Decline),
            "cancel" | "abort" => Some(Self::Cancel),
            _ => None,
        }
    }
}
