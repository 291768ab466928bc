//! Server → client notifications, tagged by `method` with their `params`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::auto_review::{
    AutoApprovalReviewCompletedNotification, AutoApprovalReviewStartedNotification,
};
use super::item::ThreadItem;
use super::jsonrpc::RequestId;
use super::thread::{Thread, ThreadStatus};
use super::turn::{Turn, TurnError};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum ServerNotification {
    #[serde(rename = "thread/started")]
    ThreadStarted(Box<ThreadStartedNotification>),
    #[serde(rename = "thread/status/changed")]
    ThreadStatusChanged(ThreadStatusChangedNotification),
    #[serde(rename = "thread/closed")]
    ThreadClosed(ThreadIdNotification),
    #[serde(rename = "thread/archived")]
    ThreadArchived(ThreadIdNotification),
    #[serde(rename = "thread/unarchived")]
    ThreadUnarchived(ThreadIdNotification),
    #[serde(rename = "thread/name/updated")]
    ThreadNameUpdated(ThreadNameUpdatedNotification),
    #[serde(rename = "thread/tokenUsage/updated")]
    ThreadTokenUsageUpdated(ThreadTokenUsageUpdatedNotification),
    #[serde(rename = "turn/started")]
    TurnStarted(TurnNotification),
    #[serde(rename = "turn/completed")]
    TurnCompleted(TurnNotification),
    #[serde(rename = "turn/plan/updated")]
    TurnPlanUpdated(TurnPlanUpdatedNotification),
    #[serde(rename = "turn/diff/updated")]
    TurnDiffUpdated(TurnDiffUpdatedNotification),
    #[serde(rename = "item/started")]
    ItemStarted(ItemStartedNotification),
    #[serde(rename = "item/completed")]
    ItemCompleted(ItemCompletedNotification),
    #[serde(rename = "item/agentMessage/delta")]
    AgentMessageDelta(DeltaNotification),
    #[serde(rename = "item/reasoning/summaryTextDelta")]
    ReasoningSummaryTextDelta(ReasoningSummaryTextDeltaNotification),
    #[serde(rename = "item/reasoning/textDelta")]
    ReasoningTextDelta(ReasoningTextDeltaNotification),
    #[serde(rename = "item/commandExecution/outputDelta")]
    CommandExecutionOutputDelta(DeltaNotification),
    #[serde(rename = "item/fileChange/outputDelta")]
    FileChangeOutputDelta(DeltaNotification),
    #[serde(rename = "item/autoApprovalReview/started")]
    AutoApprovalReviewStarted(Box<AutoApprovalReviewStartedNotification>),
    #[serde(rename = "item/autoApprovalReview/completed")]
    AutoApprovalReviewCompleted(Box<AutoApprovalReviewCompletedNotification>),
    #[serde(rename = "item/mcpToolCall/progress")]
    McpToolCallProgress(crate::mcp::McpToolCallProgressNotification),
    #[serde(rename = "mcpServer/startupStatus/updated")]
    McpServerStatusUpdated(crate::mcp::McpServerStatusUpdatedNotification),
    #[serde(rename = "serverRequest/resolved")]
    ServerRequestResolved(ServerRequestResolvedNotification),
    #[serde(rename = "hook/started")]
    HookStarted(Box<crate::hooks::HookRunNotification>),
    #[serde(rename = "hook/completed")]
    HookCompleted(Box<crate::hooks::HookRunNotification>),
    #[serde(rename = "error")]
    Error(ErrorNotification),
    #[serde(rename = "warning")]
    Warning(WarningNotification),
    #[serde(rename = "thread/goal/updated")]
    ThreadGoalUpdated(Box<crate::goal::ThreadGoalUpdatedNotification>),
    #[serde(rename = "thread/goal/cleared")]
    ThreadGoalCleared(crate::goal::ThreadGoalClearedNotification),
    /// A skill folder the connection listed changed on disk: list again.
    #[serde(rename = "skills/changed")]
    SkillsChanged(crate::skills::SkillsChangedNotification),
    #[serde(rename = "rein/taskGraph/updated")]
    TaskGraphUpdated(Box<crate::task_graph::TaskGraphUpdatedNotification>),
}

impl ServerNotification {
    /// The method name, as sent on the wire.
    pub fn method(&self) -> &'static str {
        match self {
            ServerNotification::ThreadStarted(_) => "thread/started",
            ServerNotification::ThreadStatusChanged(_) => "thread/status/changed",
            ServerNotification::ThreadClosed(_) => "thread/closed",
            ServerNotification::ThreadArchived(_) => "thread/archived",
            ServerNotification::ThreadUnarchived(_) => "thread/unarchived",
            ServerNotification::ThreadNameUpdated(_) => "thread/name/updated",
            ServerNotification::ThreadTokenUsageUpdated(_) => "thread/tokenUsage/updated",
            ServerNotification::TurnStarted(_) => "turn/started",
            ServerNotification::TurnCompleted(_) => "turn/completed",
            ServerNotification::TurnPlanUpdated(_) => "turn/plan/updated",
            ServerNotification::TurnDiffUpdated(_) => "turn/diff/updated",
            ServerNotification::ItemStarted(_) => "item/started",
            ServerNotification::ItemCompleted(_) => "item/completed",
            ServerNotification::AgentMessageDelta(_) => "item/agentMessage/delta",
            ServerNotification::ReasoningSummaryTextDelta(_) => "item/reasoning/summaryTextDelta",
            ServerNotification::ReasoningTextDelta(_) => "item/reasoning/textDelta",
            ServerNotification::CommandExecutionOutputDelta(_) => {
                "item/commandExecution/outputDelta"
            }
            ServerNotification::FileChangeOutputDelta(_) => "item/fileChange/outputDelta",
            ServerNotification::AutoApprovalReviewStarted(_) => "item/autoApprovalReview/started",
            ServerNotification::AutoApprovalReviewCompleted(_) => {
                "item/autoApprovalReview/completed"
            }
            ServerNotification::McpToolCallProgress(_) => "item/mcpToolCall/progress",
            ServerNotification::McpServerStatusUpdated(_) => "mcpServer/startupStatus/updated",
            ServerNotification::ServerRequestResolved(_) => "serverRequest/resolved",
            ServerNotification::HookStarted(_) => "hook/started",
            ServerNotification::HookCompleted(_) => "hook/completed",
            ServerNotification::Error(_) => "error",
            ServerNotification::Warning(_) => "warning",
            ServerNotification::ThreadGoalUpdated(_) => "thread/goal/updated",
            ServerNotification::ThreadGoalCleared(_) => "thread/goal/cleared",
            ServerNotification::SkillsChanged(_) => "skills/changed",
            ServerNotification::TaskGraphUpdated(_) => crate::task_graph::TASK_GRAPH_UPDATED_METHOD,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadStartedNotification {
    pub thread: Thread,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedNotification {
    pub thread_id: String,
    pub status: ThreadStatus,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadIdNotification {
    pub thread_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadNameUpdatedNotification {
    pub thread_id: String,
    pub thread_name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsageUpdatedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub token_usage: ThreadTokenUsage,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    pub total: TokenUsageBreakdown,
    pub last: TokenUsageBreakdown,
    pub model_context_window: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    pub total_tokens: i64,
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    pub reasoning_output_tokens: i64,
}

/// `turn/started` and `turn/completed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnNotification {
    pub thread_id: String,
    pub turn: Turn,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanUpdatedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub explanation: Option<String>,
    pub plan: Vec<TurnPlanStep>,
}

/// Every file change of the turn so far, as one unified diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnDiffUpdatedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub diff: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnPlanStep {
    pub step: String,
    /// `pending`, `inProgress` or `completed`.
    pub status: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemStartedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub item: ThreadItem,
    pub started_at_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemCompletedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub item: ThreadItem,
    pub completed_at_ms: i64,
}

/// The streaming deltas of an agent message, a command's output or a patch's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeltaNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub delta: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryTextDeltaNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub delta: String,
    pub summary_index: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningTextDeltaNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub delta: String,
    pub content_index: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolvedNotification {
    pub thread_id: String,
    pub request_id: RequestId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub error: TurnError,
    pub will_retry: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarningNotification {
    pub thread_id: Option<String>,
    pub message: String,
}
