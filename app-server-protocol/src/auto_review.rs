//! `item/autoApprovalReview/started` and `/completed`: the advisor's review of a tool
//! call, as Codex's auto-review notifications carry it (one notification per reviewed
//! call, `targetItemId` naming the call's item).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoApprovalReviewStartedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub review_id: String,
    pub target_item_id: Option<String>,
    pub started_at_ms: i64,
    pub review: AutoApprovalReview,
    pub action: AutoApprovalReviewAction,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoApprovalReviewCompletedNotification {
    pub thread_id: String,
    pub turn_id: String,
    pub review_id: String,
    pub target_item_id: Option<String>,
    pub started_at_ms: i64,
    pub completed_at_ms: i64,
    pub decision_source: AutoReviewDecisionSource,
    pub review: AutoApprovalReview,
    pub action: AutoApprovalReviewAction,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoApprovalReview {
    pub status: AutoApprovalReviewStatus,
    pub risk_level: Option<AutoReviewRiskLevel>,
    pub rationale: Option<String>,
    pub user_authorization: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AutoApprovalReviewStatus {
    InProgress,
    Approved,
    Denied,
    TimedOut,
    Aborted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AutoReviewRiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AutoReviewDecisionSource {
    Agent,
}

/// What the reviewed call does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AutoApprovalReviewAction {
    #[serde(rename_all = "camelCase")]
    Command {
        command: String,
        cwd: String,
        /// `shell` or `unifiedExec`.
        source: String,
    },
    #[serde(rename_all = "camelCase")]
    WriteStdin {
        approval_id: String,
        cwd: String,
        process_id: String,
        stdin: String,
    },
    #[serde(rename_all = "camelCase")]
    ApplyPatch { cwd: String, files: Vec<String> },
    #[serde(rename_all = "camelCase")]
    McpToolCall {
        server: String,
        tool_name: String,
        connector_id: Option<String>,
        connector_name: Option<String>,
        tool_title: Option<String>,
    },
}
