//! Request handlers, grouped by what they work on.

pub mod history;
pub mod meta;
pub mod thread;
pub mod turn;

use rein_protocol::ThreadId;

use crate::dispatch::ServerState;
use crate::error::RpcError;
use crate::loaded::LoadedThread;

/// The loaded thread a request names, or the error Codex gives for an unknown one.
pub fn loaded(state: &ServerState, thread_id: &str) -> Result<LoadedThread, RpcError> {
    let id: ThreadId = thread_id.parse().map_err(|_| {
        RpcError::invalid_params(
            format!("threadId: not a thread id: {thread_id:?}"),
            Some("threadId".into()),
        )
    })?;
    state
        .threads
        .get(id)
        .ok_or_else(|| RpcError::invalid_request(format!("thread not found: {thread_id}")))
}

pub fn to_value<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, RpcError> {
    serde_json::to_value(value).map_err(RpcError::internal)
}
