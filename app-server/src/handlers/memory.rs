//! `rein/memory/list`, `rein/memory/read`, `rein/memory/update`, `rein/memory/forget`: the user's view of the
//! memory store, through the kernel's [`MemoryStore`](rein_core::memory::MemoryStore) port (`Kernel::memory`). A store
//! that fails (a damaged file) answers an internal error naming the file; the connection
//! and every thread go on.

use std::path::PathBuf;

use rein_app_server_protocol::{
    MemoryIdParams, MemoryListParams, MemoryListResponse, MemoryResponse, MemoryScopeWire,
    MemoryStateWire, MemoryUpdateParams, MemoryWire,
};
use rein_core::memory::{MemoryError, MemoryFilter, MemoryUpdate};
use rein_protocol::{MemoryId, MemoryRecord, MemoryScope, MemoryState, MAX_MEMORY_BYTES};

use crate::dispatch::{wire_id, ServerState};
use crate::error::RpcError;

pub async fn list(
    state: &ServerState,
    p: MemoryListParams,
) -> Result<MemoryListResponse, RpcError> {
    let repo = match p.cwd {
        Some(cwd) => {
            let path = PathBuf::from(&cwd);
            if !path.is_absolute() {
                return Err(RpcError::invalid_params(
                    format!("cwd: must be an absolute path: {cwd}"),
                    Some("cwd".into()),
                ));
            }
            Some(state.kernel.memory.repo_of(&path).await)
        }
        None => None,
    };
    let filter = MemoryFilter {
        scope: p.scope.map(scope_of),
        repo,
        states: p
            .states
            .unwrap_or_default()
            .into_iter()
            .map(state_of)
            .collect(),
        text: p.search,
        limit: p.limit,
    };
    let found = state
        .kernel
        .memory
        .list(filter)
        .await
        .map_err(store_error)?;
    Ok(MemoryListResponse {
        data: found.iter().map(wire).collect(),
    })
}

pub async fn read(state: &ServerState, p: MemoryIdParams) -> Result<MemoryResponse, RpcError> {
    let id: MemoryId = wire_id(&p.id, "id", "memory")?;
    match state.kernel.memory.get(id).await.map_err(store_error)? {
        Some(record) => Ok(MemoryResponse {
            memory: wire(&record),
        }),
        None => Err(store_error(MemoryError::NotFound(id))),
    }
}

pub async fn update(
    state: &ServerState,
    p: MemoryUpdateParams,
) -> Result<MemoryResponse, RpcError> {
    let id: MemoryId = wire_id(&p.id, "id", "memory")?;
    // What the user writes is redacted and bounded like what the model proposes.
    let content = p
        .content
        .map(|c| rein_core::memory::redact::redact(c.trim()).0);
    if let Some(content) = &content {
        if content.is_empty() || content.len() > MAX_MEMORY_BYTES {
            return Err(RpcError::invalid_params(
                format!("content: must be 1 to {MAX_MEMORY_BYTES} bytes"),
                Some("content".into()),
            ));
        }
    }
    let update = MemoryUpdate {
        content,
        keywords: p.keywords,
        state: None,
    };
    apply_update(state, id, update).await
}

pub async fn forget(state: &ServerState, p: MemoryIdParams) -> Result<MemoryResponse, RpcError> {
    let id: MemoryId = wire_id(&p.id, "id", "memory")?;
    let update = MemoryUpdate {
        state: Some(MemoryState::Forgotten),
        ..MemoryUpdate::default()
    };
    apply_update(state, id, update).await
}

/// Change memory `id` and answer it as it now is.
async fn apply_update(
    state: &ServerState,
    id: MemoryId,
    update: MemoryUpdate,
) -> Result<MemoryResponse, RpcError> {
    let record = state
        .kernel
        .memory
        .update(id, update)
        .await
        .map_err(store_error)?;
    Ok(MemoryResponse {
        memory: wire(&record),
    })
}

fn store_error(e: MemoryError) -> RpcError {
    match e {
        MemoryError::NotFound(_) => RpcError::invalid_request(e.to_string()),
        _ => RpcError::internal(e),
    }
}

pub fn scope_wire(scope: MemoryScope) -> MemoryScopeWire {
    match scope {
        MemoryScope::User => MemoryScopeWire::User,
        MemoryScope::Repo => MemoryScopeWire::Repo,
        MemoryScope::Thread => MemoryScopeWire::Thread,
    }
}

fn scope_of(scope: MemoryScopeWire) -> MemoryScope {
    match scope {
        MemoryScopeWire::User => MemoryScope::User,
        MemoryScopeWire::Repo => MemoryScope::Repo,
        MemoryScopeWire::Thread => MemoryScope::Thread,
    }
}

fn state_of(state: MemoryStateWire) -> MemoryState {
    match state {
        MemoryStateWire::Proposed => MemoryState::Proposed,
        MemoryStateWire::Accepted => MemoryState::Accepted,
        MemoryStateWire::Rejected => MemoryState::Rejected,
        MemoryStateWire::Forgotten => MemoryState::Forgotten,
        MemoryStateWire::Retired => MemoryState::Retired,
    }
}

fn state_wire(state: MemoryState) -> MemoryStateWire {
    match state {
        MemoryState::Proposed => MemoryStateWire::Proposed,
        MemoryState::Accepted => MemoryStateWire::Accepted,
        MemoryState::Rejected => MemoryStateWire::Rejected,
        MemoryState::Forgotten => MemoryStateWire::Forgotten,
        MemoryState::Retired => MemoryStateWire::Retired,
    }
}

fn ms(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A record as the wire shows it.
pub fn wire(record: &MemoryRecord) -> MemoryWire {
    MemoryWire {
        id: record.id.to_string(),
        scope: scope_wire(record.scope),
        repo_root: record.repo.as_ref().map(|r| r.root.display().to_string()),
        repo_remote: record.repo.as_ref().and_then(|r| r.remote.clone()),
        thread_id: record.thread_id.map(|t| t.to_string()),
        turn_id: record.turn_id.map(|t| t.to_string()),
        content: record.content.clone(),
        keywords: record.keywords.clone(),
        why: record.why.clone(),
        state: state_wire(record.state),
        created_at_ms: ms(record.created_ms),
        last_used_at_ms: record.last_used_ms.map(ms),
        use_count: record.use_count,
        redacted: record.redactions.iter().map(|r| r.label.clone()).collect(),
    }
}
