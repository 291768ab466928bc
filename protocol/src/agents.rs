//! Sub-agents: threads spawned by a model's tool call. A child's rollout says where it
//! came from ([`AgentOrigin`], its second event); its parent's rollout records the edge
//! (`AgentSpawned`, `AgentClosed`), so the tree is `fold(events)` like everything else and
//! a resumed root knows which children to bring back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::ThreadId;

/// How a root thread works (`[agents] strategy`, or `agents.strategy` in `thread/start`'s
/// `config`). Chosen when the root is created and recorded in its `thread_configured`, so
/// it is fixed for the thread's life: a resume or a later configuration never changes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The root works alone (and may spawn sub-agents itself).
    #[default]
    Single,
    /// The root plans a task graph (`plan_tasks`) that the kernel runs on sub-agents.
    Planner,
}

impl Strategy {
    /// The name as configured: `single` or `planner`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Single => "single",
            Strategy::Planner => "planner",
        }
    }
}

/// Where a sub-agent comes from: recorded once, right after its `thread_configured`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentOrigin {
    pub parent_thread_id: ThreadId,
    /// The root is depth 0; its children 1.
    pub depth: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    /// The role (`agent_type`) it was spawned with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// A child as its parent's state knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChildAgent {
    pub thread_id: ThreadId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The task it was last given.
    pub last_task: String,
    /// `false` once closed: a resumed parent does not bring it back.
    pub open: bool,
}

/// Which sub-agent operation a tool call is (the facts of the sub-agent tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentOp {
    Spawn,
    Send,
    Wait,
    Close,
    Resume,
    List,
}

/// An agent's status as a front end shows it (the kind of the model-facing status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentReportStatus {
    PendingInit,
    Running,
    Interrupted,
    Completed,
    Errored,
    Shutdown,
    NotFound,
}

/// One agent's status as a sub-agent tool call left it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentReport {
    pub thread_id: ThreadId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    pub status: AgentReportStatus,
    /// A completed agent's final answer, an errored one's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
