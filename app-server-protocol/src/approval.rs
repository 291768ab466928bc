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
