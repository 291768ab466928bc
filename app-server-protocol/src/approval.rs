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
    pub command_actions: Option<Vec<crate::CommandActionWire>>,
    /// The rule "don't ask again for commands that start with these words" the client may
    /// answer with (`acceptWithExecpolicyAmendment`).
    pub proposed_execpolicy_amendment: Option<Vec<String>>,
    /// The decisions the client should offer.
    pub available_decisions: Option<Vec<CommandDecision>>,
}

/// A decision an approval offers: a plain one (`"accept"`, `"cancel"`, …) or an approval
/// that adds a command-prefix rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CommandDecision {
    Plain(String),
    WithRule {
        #[serde(rename = "acceptWithExecpolicyAmendment")]
        accept_with_execpolicy_amendment: ExecpolicyAmendment,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecpolicyAmendment {
    pub execpolicy_amendment: Vec<String>,
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

/// The `result` of an approval request. An exec policy amendment becomes a command-prefix
/// rule of the thread ([`ReviewDecision::rule_of`]); a network policy amendment is read
/// as a refusal (rein has no network policy).
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
    /// The rule of an `{"acceptWithExecpolicyAmendment": {"execpolicy_amendment": [..]}}`
    /// decision, if `value` is one.
    pub fn rule_of(value: &serde_json::Value) -> Option<Vec<String>> {
        let words = value
            .get("acceptWithExecpolicyAmendment")?
            .get("execpolicy_amendment")?
            .as_array()?;
        words
            .iter()
            .map(|w| w.as_str().map(str::to_owned))
            .collect()
    }

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
