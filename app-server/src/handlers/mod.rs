//! Request handlers, grouped by what they work on.

pub mod client_meta;
pub mod goal;
pub mod history;
pub mod ide;
pub mod mcp;
pub mod memory;
pub mod meta;
pub mod skills;
pub mod thread;
pub mod thread_config;
pub mod trajectory;
pub mod turn;

use rein_protocol::ThreadId;

use crate::dispatch::{wire_id, ServerState};
use crate::error::RpcError;
use crate::loaded::LoadedThread;

/// The loaded thread a request names, or the error Codex gives for an unknown one.
pub fn loaded(state: &ServerState, thread_id: &str) -> Result<LoadedThread, RpcError> {
    let id: ThreadId = wire_id(thread_id, "threadId", "thread")?;
    state
        .threads
        .get(id)
        .ok_or_else(|| RpcError::invalid_request(format!("thread not found: {id}")))
}
