//! rein's `rein/memory/*` methods (Codex has none for records it keeps: its memories are
//! files), Codex's experimental `thread/memoryMode/set` (served by codex-rs, absent from its
//! published schema but for `ThreadMemoryMode`), and the approval request of a memory
//! proposal. See docs/memory.md.
//!
//! - `thread/memoryMode/set {threadId, mode: "enabled" | "disabled"}` → `{}`
//! - `rein/memory/list {scope?, states?, search?, cwd?, limit?}` → `{data: [Memory]}`
//! - `rein/memory/read {id}` → `{memory}`
//! - `rein/memory/update {id, content?, keywords?}` → `{memory}`
//! - `rein/memory/forget {id}` → `{memory}` (a tombstone: never shown again)
//! - server → client `rein/memory/requestApproval` ([`MemoryRequestApprovalParams`]),
//!   answered like a file change's approval (`{decision: "accept" | "decline"}`); a client
//!   that does not know the method answers an error, which refuses the memory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Codex's `ThreadMemoryMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThreadMemoryMode {
    Enabled,
    Disabled,
}

/// `thread/memoryMode/set`'s params, as codex-rs has them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMemoryModeSetParams {
    pub thread_id: String,
    pub mode: ThreadMemoryMode,
}

/// The method of a memory proposal's approval.
pub const MEMORY_APPROVAL_METHOD: &str = "rein/memory/requestApproval";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MemoryScopeWire {
    User,
    Repo,
    Thread,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MemoryStateWire {
    Proposed,
    Accepted,
    Rejected,
    Forgotten,
    Retired,
}

/// One memory record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryWire {
    pub id: String,
    pub scope: MemoryScopeWire,
    /// The repository of a `repo` memory: its root directory and `origin` remote.
    pub repo_root: Option<String>,
    pub repo_remote: Option<String>,
    /// The thread and turn it came from.
    pub thread_id: Option<String>,
    pub turn_id: Option<String>,
    pub content: String,
    pub keywords: Vec<String>,
    pub why: String,
    pub state: MemoryStateWire,
    pub created_at_ms: i64,
    pub last_used_at_ms: Option<i64>,
    pub use_count: u64,
    /// What was redacted from it before it was stored (the secret's name or kind).
    pub redacted: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryListParams {
    #[serde(default)]
    pub scope: Option<MemoryScopeWire>,
    /// Only these states; default: every state.
    #[serde(default)]
    pub states: Option<Vec<MemoryStateWire>>,
    /// Full-text search of content and keywords.
    #[serde(default)]
    pub search: Option<String>,
    /// Only the repository memories of the repository this directory is in.
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryListResponse {
    pub data: Vec<MemoryWire>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryIdParams {
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryUpdateParams {
    pub id: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub keywords: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryResponse {
    pub memory: MemoryWire,
}

/// `rein/memory/requestApproval`: may the agent keep this memory?
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRequestApprovalParams {
    pub thread_id: String,
    pub turn_id: String,
    /// The `remember` call's item.
    pub item_id: String,
    pub started_at_ms: i64,
    pub memory_id: String,
    pub scope: MemoryScopeWire,
    /// As it would be stored, secrets redacted.
    pub content: String,
    pub reason: Option<String>,
    pub redacted: Vec<String>,
}
