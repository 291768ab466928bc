//! Methods over persisted threads: resume, fork, list, read, turns, archive.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::thread::{Thread, ThreadStartResponse};
use super::turn::Turn;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    pub thread_id: String,
    /// Leave `thread.turns` empty in the answer.
    #[serde(default)]
    pub exclude_turns: bool,
}

/// `thread/resume` and `thread/fork` answer like `thread/start`, with the turns filled.
pub type ThreadResumeResponse = ThreadStartResponse;
pub type ThreadForkResponse = ThreadStartResponse;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkParams {
    pub thread_id: String,
    /// Fork after this turn (default: the last one).
    #[serde(default)]
    pub last_turn_id: Option<String>,
    #[serde(default)]
    pub ephemeral: Option<bool>,
    #[serde(default)]
    pub exclude_turns: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListParams {
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    /// List archived threads instead of live ones.
    #[serde(default)]
    pub archived: Option<bool>,
    /// One directory, or several (the first is used).
    #[serde(default)]
    pub cwd: Option<serde_json::Value>,
    #[serde(default)]
    pub search_term: Option<String>,
    /// Codex's `ThreadSourceKind`s to list; omitted or empty: interactive threads only
    /// (sub-agents hidden).
    #[serde(default)]
    pub source_kinds: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListResponse {
    pub data: Vec<Thread>,
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadParams {
    pub thread_id: String,
    #[serde(default)]
    pub include_turns: bool,
}

/// `thread/read` and `thread/unarchive`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResponse {
    pub thread: Thread,
    /// rein's addition (`thread/read` with `includeTurns`): the skills the model opened
    /// itself, each once, from the rollout. (A skill the user attached is the `skill` item
    /// of its user message.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rein_skills_used: Vec<crate::skills::SkillActivationInfo>,
}

impl ThreadResponse {
    pub fn new(thread: Thread) -> Self {
        Self {
            thread,
            rein_skills_used: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListParams {
    pub thread_id: String,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    /// Newest first unless `asc`.
    #[serde(default)]
    pub sort_direction: Option<crate::SortDirection>,
    /// `notLoaded`: the turns without their items (the TUI pages items separately).
    #[serde(default)]
    pub items_view: Option<crate::TurnItemsView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListResponse {
    pub data: Vec<Turn>,
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRollbackParams {
    pub thread_id: String,
    /// How many of the last turns to drop from the model-visible history.
    pub num_turns: u32,
}
