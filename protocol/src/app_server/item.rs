//! Thread items on the wire: what a turn is made of, flat objects tagged by `type`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::turn::UserInput;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    #[serde(rename_all = "camelCase")]
    UserMessage {
        id: String,
        client_id: Option<String>,
        content: Vec<UserInput>,
    },
    AgentMessage {
        id: String,
        text: String,
        phase: Option<String>,
    },
    Reasoning {
        id: String,
        #[serde(default)]
        summary: Vec<String>,
        #[serde(default)]
        content: Vec<String>,
    },
    #[serde(rename_all = "camelCase")]
    CommandExecution {
        id: String,
        command: String,
        cwd: String,
        process_id: Option<String>,
        status: ExecutionStatus,
        command_actions: Vec<serde_json::Value>,
        aggregated_output: Option<String>,
        exit_code: Option<i32>,
        duration_ms: Option<i64>,
    },
    FileChange {
        id: String,
        changes: Vec<FileUpdateChange>,
        status: ExecutionStatus,
    },
    Plan {
        id: String,
        text: String,
    },
    ContextCompaction {
        id: String,
    },
    /// A review turn began; `review` names what is reviewed.
    EnteredReviewMode {
        id: String,
        review: String,
    },
    /// A review turn ended; `review` is the reviewer's report (empty if it was cut short).
    ExitedReviewMode {
        id: String,
        review: String,
    },
}

impl ThreadItem {
    pub fn id(&self) -> &str {
        match self {
            ThreadItem::UserMessage { id, .. }
            | ThreadItem::AgentMessage { id, .. }
            | ThreadItem::Reasoning { id, .. }
            | ThreadItem::CommandExecution { id, .. }
            | ThreadItem::FileChange { id, .. }
            | ThreadItem::Plan { id, .. }
            | ThreadItem::ContextCompaction { id }
            | ThreadItem::EnteredReviewMode { id, .. }
            | ThreadItem::ExitedReviewMode { id, .. } => id,
        }
    }
}

/// Codex's `CommandExecutionStatus` / `PatchApplyStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExecutionStatus {
    InProgress,
    Completed,
    Failed,
    Declined,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileUpdateChange {
    pub path: String,
    /// `{"type": "add" | "delete" | "update", ...}` as Codex sends it.
    pub kind: serde_json::Value,
    pub diff: String,
}
