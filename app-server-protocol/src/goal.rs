//! `thread/goal/*`: a thread's goal on Codex's wire (v2 `ThreadGoal*`), unchanged so Codex
//! clients work. rein's goal has more (wall-time and turn budgets, criteria, checkpoints);
//! this wire carries what Codex's does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadGoalStatus {
    Active,
    Paused,
    Blocked,
    UsageLimited,
    BudgetLimited,
    Complete,
}

/// Distinguishes explicit user actions from automatic goal lifecycle mutations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadGoalMutationOrigin {
    User,
    Automatic,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoal {
    pub thread_id: String,
    pub objective: String,
    pub status: ThreadGoalStatus,
    pub token_budget: Option<i64>,
    pub tokens_used: i64,
    pub time_used_seconds: i64,
    /// Unix seconds.
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalGetParams {
    pub thread_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalGetResponse {
    pub goal: Option<ThreadGoal>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalSetParams {
    pub thread_id: String,
    #[serde(default)]
    pub objective: Option<String>,
    #[serde(default)]
    pub status: Option<ThreadGoalStatus>,
    #[serde(default)]
    pub token_budget: Option<i64>,
    /// Missing provenance does not supply user authorization.
    #[serde(default)]
    pub origin: Option<ThreadGoalMutationOrigin>,
    /// rein's addition: whether this goal continues by itself when its thread is loaded
    /// again while it was active (overriding `[goals] auto_resume`); absent keeps what the
    /// goal had. Codex clients do not send it.
    #[serde(default)]
    pub auto_resume: Option<bool>,
    /// rein's addition: the goal's acceptance criteria, replacing the ones it had; absent
    /// keeps them. The kernel runs their verifiers when the model reports the goal
    /// complete, and the goal is complete only if all pass. Codex clients do not send it.
    #[serde(default)]
    pub criteria: Option<Vec<ThreadGoalCriterion>>,
}

/// rein's addition: one acceptance criterion of a goal (`thread/goal/set`'s `criteria`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadGoalCriterion {
    /// What must hold; absent: what the verifier does (its command, tool or prompt).
    #[serde(default)]
    pub description: Option<String>,
    /// How the kernel checks it; absent: the criterion is a note for the model only.
    #[serde(default)]
    pub verify: Option<ThreadGoalVerifier>,
}

/// rein's addition: how a criterion is checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum ThreadGoalVerifier {
    /// A command run in the thread's sandbox and cwd; exit 0 passes.
    Shell { command: String },
    /// A tool of one of the thread's MCP servers; passes when the call succeeds and its
    /// result is not `isError`.
    Mcp {
        server: String,
        tool: String,
        #[serde(default)]
        arguments: Option<serde_json::Value>,
    },
    /// A question the goal's evaluator model answers with `{"pass": bool, "reason"}`.
    Evaluator { prompt: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalSetResponse {
    pub goal: ThreadGoal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalClearParams {
    pub thread_id: String,
    #[serde(default)]
    pub origin: Option<ThreadGoalMutationOrigin>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalClearResponse {
    pub cleared: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalUpdatedNotification {
    pub thread_id: String,
    pub turn_id: Option<String>,
    pub goal: ThreadGoal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalClearedNotification {
    pub thread_id: String,
}
