//! Hook runs as Codex's app-server reports them: `hook/started` and `hook/completed`, each
//! carrying the run's summary.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `hook/started` and `hook/completed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunNotification {
    pub thread_id: String,
    pub turn_id: Option<String>,
    pub run: HookRunSummary,
}

/// One run of a hook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunSummary {
    pub id: String,
    /// Codex's camelCase event name (`preToolUse`, `postToolUse`, `userPromptSubmit`, `stop`).
    pub event_name: String,
    /// `command`: the only kind rein runs.
    pub handler_type: String,
    /// `sync`: the call waits for it.
    pub execution_mode: String,
    /// `turn`: every hook rein runs belongs to a turn.
    pub scope: String,
    /// `user` or `project`.
    pub source: String,
    pub source_path: String,
    pub display_order: i64,
    /// `running`, then `completed`, `blocked` or `failed`.
    pub status: String,
    pub status_message: Option<String>,
    /// Seconds since the Unix epoch.
    pub started_at: i64,
    pub completed_at: Option<i64>,
    pub duration_ms: Option<i64>,
    pub entries: Vec<HookOutputEntry>,
}

/// What a hook said: `feedback` (a block's reason), `error` (why it failed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookOutputEntry {
    pub kind: String,
    pub text: String,
}
