//! Who every stored thread is and where it came from.

use std::path::PathBuf;

use rein_protocol::{SessionId, ThreadId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::time::{now_ms, parse_rfc3339_ms, rfc3339_ms};

/// Who a stored thread is and where it came from. (How a backend records it, a file
/// format's version for one, is the backend's.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionMeta {
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
    /// Meta for a thread created now.
    pub fn new(
        thread_id: ThreadId,
        session_id: SessionId,
        cwd: PathBuf,
        model: impl Into<String>,
        provider: impl Into<String>,
    ) -> Self {
        SessionMeta {
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
