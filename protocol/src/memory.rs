//! Memories: what the agent was told to keep across threads, as records with provenance
//! (which thread and turn it came from), a scope (the user, one repository, one thread), a
//! state (proposed, accepted, rejected, forgotten, retired) and use statistics. The memory
//! store (`rein_core::memory::MemoryStore`) keeps them; the events here are what a thread's
//! rollout says about them (see docs/memory.md).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{MemoryId, ThreadId, TurnId};

/// The most bytes of content one memory keeps.
pub const MAX_MEMORY_BYTES: usize = 2048;

/// Whether a thread uses memory (Codex's `ThreadMemoryMode`, set by
/// `thread/memoryMode/set`): a `disabled` thread is given no memories and offered no
/// `remember` tool. Recorded as `MemoryModeSet`, so it is part of the thread's fold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadMemoryMode {
    /// As the configuration says (`[memory] enabled`); the default.
    #[default]
    Enabled,
    /// No recall and no `remember` for this thread, whatever the configuration says.
    Disabled,
}

impl ThreadMemoryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
        }
    }
}

/// Whom a memory applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    /// Every thread of this user, in any directory.
    User,
    /// Threads working in one repository (its root and remote).
    Repo,
    /// The thread it was made in only.
    Thread,
}

impl MemoryScope {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::User => "user",
            MemoryScope::Repo => "repo",
            MemoryScope::Thread => "thread",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "user" => Some(MemoryScope::User),
            "repo" => Some(MemoryScope::Repo),
            "thread" => Some(MemoryScope::Thread),
            _ => None,
        }
    }
}

/// Where a memory is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryState {
    /// Waiting for the user's consent.
    Proposed,
    /// In use: given to the model when it matches.
    Accepted,
    /// The user (or the `[memory] consent` setting) said no.
    Rejected,
    /// The user forgot it: never shown again, kept as a tombstone until purged.
    Forgotten,
    /// Nobody used it for `[memory] max_unused_days`: never shown again, purged like a
    /// forgotten one.
    Retired,
}

impl MemoryState {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryState::Proposed => "proposed",
            MemoryState::Accepted => "accepted",
            MemoryState::Rejected => "rejected",
            MemoryState::Forgotten => "forgotten",
            MemoryState::Retired => "retired",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "proposed" => Some(MemoryState::Proposed),
            "accepted" => Some(MemoryState::Accepted),
            "rejected" => Some(MemoryState::Rejected),
            "forgotten" => Some(MemoryState::Forgotten),
            "retired" => Some(MemoryState::Retired),
            _ => None,
        }
    }
}

/// A repository as a memory's key: its root directory and its `origin` remote (when it
/// has one), so two clones of one project at different paths stay apart, and a directory
/// that is not a repository is its own key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct RepoKey {
    pub root: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

/// What was cut out of a memory's content before it was stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Redaction {
    /// Why: `secret_assignment` (a value given to a secret-looking name) or
    /// `token` (a string shaped like a key or token).
    pub kind: String,
    /// The name the secret was given to, or the token's recognised prefix.
    pub label: String,
}

/// One memory record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryRecord {
    pub id: MemoryId,
    pub scope: MemoryScope,
    /// The repository of a `repo` memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<RepoKey>,
    /// The thread a memory came from (and, for `thread` scope, the one it applies to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<ThreadId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// At most [`MAX_MEMORY_BYTES`], secrets redacted.
    pub content: String,
    /// Words it is found by besides its content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Why it was worth keeping, as the proposer said.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    pub state: MemoryState,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_ms: Option<u64>,
    pub use_count: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<Redaction>,
}

/// How the answer to a proposal was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryDecider {
    /// The user answered the approval request.
    User,
    /// `[memory] consent` decided without asking (`auto` accepts, `never` rejects), or the
    /// scope needs no consent (`thread`).
    Config,
    /// Nobody could be asked (a headless run); the proposal is refused.
    Unanswered,
}

/// Whether a `repo` or `user` memory the model proposes needs the user's consent
/// (`[memory] consent`). A `thread` memory never does: it ends with its thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryConsent {
    /// Ask the user through the approval flow; no answer is a refusal.
    #[default]
    Ask,
    /// Keep it without asking.
    Auto,
    /// Refuse every such proposal (the model is told).
    Never,
}
