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
        command_actions: Vec<CommandActionWire>,
        aggregated_output: Option<String>,
        exit_code: Option<i32>,
        duration_ms: Option<i64>,
        /// Who ran it: absent for the model's commands (Codex's default, `agent`),
        /// `userShell` for the user's own (`thread/shellCommand`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<CommandExecutionSource>,
    },
    FileChange {
        id: String,
        changes: Vec<FileUpdateChange>,
        status: ExecutionStatus,
    },
    /// A call of an MCP server's tool.
    #[serde(rename_all = "camelCase")]
    McpToolCall {
        id: String,
        server: String,
        tool: String,
        arguments: serde_json::Value,
        status: ToolCallStatus,
        result: Option<McpToolCallResult>,
        error: Option<McpToolCallError>,
        duration_ms: Option<i64>,
    },
    /// A call of a tool that is neither a command, a file change nor an MCP tool.
    #[serde(rename_all = "camelCase")]
    DynamicToolCall {
        id: String,
        tool: String,
        arguments: serde_json::Value,
        status: ToolCallStatus,
        content_items: Option<Vec<ContentItem>>,
        success: Option<bool>,
        duration_ms: Option<i64>,
    },
    /// A call of a sub-agent tool (Codex's collab tools).
    #[serde(rename_all = "camelCase")]
    CollabAgentToolCall {
        id: String,
        tool: CollabAgentTool,
        status: CollabAgentToolCallStatus,
        sender_thread_id: String,
        /// The agents addressed; for a spawn, the new agent.
        receiver_thread_ids: Vec<String>,
        prompt: Option<String>,
        model: Option<String>,
        reasoning_effort: Option<String>,
        /// By thread id: the status the call left each agent in.
        agents_states: std::collections::BTreeMap<String, CollabAgentState>,
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
            | ThreadItem::McpToolCall { id, .. }
            | ThreadItem::DynamicToolCall { id, .. }
            | ThreadItem::CollabAgentToolCall { id, .. }
            | ThreadItem::Plan { id, .. }
            | ThreadItem::ContextCompaction { id }
            | ThreadItem::EnteredReviewMode { id, .. }
            | ThreadItem::ExitedReviewMode { id, .. } => id,
        }
    }
}

/// Codex's `CommandExecutionStatus` / `PatchApplyStatus`.
/// Who ran a command, as Codex tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionSource {
    Agent,
    UserShell,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExecutionStatus {
    InProgress,
    Completed,
    Failed,
    Declined,
}

/// Codex's `McpToolCallStatus` / `DynamicToolCallStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolCallStatus {
    InProgress,
    Completed,
    Failed,
}

/// Codex's `CollabAgentTool`: the sub-agent tools rein has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CollabAgentTool {
    SpawnAgent,
    SendInput,
    ResumeAgent,
    Wait,
    CloseAgent,
    ListAgents,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CollabAgentToolCallStatus {
    InProgress,
    Completed,
    Failed,
    Interrupted,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollabAgentState {
    pub status: CollabAgentStatus,
    pub message: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CollabAgentStatus {
    PendingInit,
    Running,
    Interrupted,
    Completed,
    Errored,
    Shutdown,
    NotFound,
}

/// Codex's `CommandAction`: what a command does, read from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CommandActionWire {
    /// `path` is absolute.
    Read {
        command: String,
        name: String,
        path: String,
    },
    ListFiles {
        command: String,
        path: Option<String>,
    },
    Search {
        command: String,
        query: Option<String>,
        path: Option<String>,
    },
    Unknown {
        command: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallResult {
    pub content: Vec<serde_json::Value>,
    pub structured_content: Option<serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallError {
    pub message: String,
}

/// Codex's `DynamicToolCallOutputContentItem` (text only: rein's tools return text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentItem {
    InputText { text: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileUpdateChange {
    pub path: String,
    /// `{"type": "add" | "delete" | "update", ...}` as Codex sends it.
    pub kind: serde_json::Value,
    pub diff: String,
}
