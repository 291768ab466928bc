//! `rein/taskGraph/updated`: a thread's task graph (its plan's nodes, each run by a
//! sub-agent) after every change, and once after a client subscribes to a thread that has
//! one. rein's own notification (Codex has no task graphs); the shape is a view for a task
//! panel, not the kernel's record (`docs/task-graphs.md` has that).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const TASK_GRAPH_UPDATED_METHOD: &str = "rein/taskGraph/updated";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskGraphUpdatedNotification {
    pub thread_id: String,
    pub graph: TaskGraphView,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskGraphView {
    pub status: TaskGraphStatus,
    /// In plan order.
    pub nodes: Vec<TaskNodeView>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskGraphStatus {
    Running,
    Completed,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskNodeView {
    pub id: String,
    pub title: String,
    pub role: String,
    pub depends_on: Vec<String>,
    /// For a reviewer: the node it reviews.
    pub reviews: Option<String>,
    pub state: TaskNodeState,
    /// How many sub-agents ran it so far.
    pub attempts: u32,
    /// The sub-agent thread of its latest attempt.
    pub thread_id: Option<String>,
    pub review_rounds: u32,
    /// How its latest attempt ended, once it did.
    pub outcome: Option<TaskOutcomeView>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskNodeState {
    Pending,
    Ready,
    Running,
    Blocked,
    Completed,
    Failed,
    Skipped,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TaskOutcomeView {
    Completed {
        answer: Option<String>,
    },
    Reviewed {
        approved: bool,
        findings: Vec<String>,
    },
    Failed {
        kind: String,
        message: String,
    },
    Cancelled,
}
