//! The first line of every stored thread: who the thread is and where it came from.

use std::path::PathBuf;

use rein_protocol::{SessionId, ThreadId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::time::{now_ms, parse_rfc3339_ms, rfc3339_ms};

/// The format this build writes. Readers accept files up to this version.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a rollout: who the thread is and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionMeta {
    pub format_version: u32,
    pub thread_id: ThreadId,
    /// The root thread's id, shared by a tree of sub-agents.
    pub session_id: SessionId,
    /// The thread this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ThreadId>,
    /// The thread that spawned this one (sub-agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_thread_id: Option<ThreadId>,
    pub cwd: PathBuf,
    pub model: String,
    pub provider: String,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl SessionMeta {
    /// Meta for a thread created now, at the current format version.
    pub fn new(
        thread_id: ThreadId,
        session_id: SessionId,
        cwd: PathBuf,
        model: impl Into<String>,
        provider: impl Into<String>,
    ) -> Self {
        SessionMeta {
            format_version: FORMAT_VERSION,
            thread_id,
            session_id,
            forked_from: None,
            parent_thread_id: None,
            cwd,
            model: model.into(),
            provider: provider.into(),
            created_at: rfc3339_ms(now_ms()),
        }
    }

    /// `created_at` in milliseconds since the epoch (0 if it does not parse).
    pub fn created_ms(&self) -> u64 {
        parse_rfc3339_ms(&self.created_at).unwrap_or(0)
    }
}
