//! Sub-agents: threads spawned by a model's tool call. A child's rollout says where it
//! came from ([`AgentOrigin`], its second event); its parent's rollout records the edge
//! (`AgentSpawned`, `AgentClosed`), so the tree is `fold(events)` like everything else and
//! a resumed root knows which children to bring back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::ThreadId;

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
