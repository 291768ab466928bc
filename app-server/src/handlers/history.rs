//! Methods over persisted threads, through the kernel's sessions and rollout store:
//! `thread/resume`, `thread/fork`, `thread/list`, `thread/read`, `thread/turns/list`,
//! `thread/archive`, `thread/unarchive`.

use std::path::PathBuf;

use rein_core::recorder::RecorderError;
use rein_core::rollout::index::{ListQuery, ThreadEntry};
use rein_core::rollout::resume::fold_owned;
use rein_core::rollout::RolloutError;
use rein_core::thread::state::ThreadState;
use rein_core::NewThread;
use rein_protocol::app_server::{
    EmptyResponse, ServerNotification, Thread, ThreadForkParams, ThreadIdNotification,
    ThreadIdParams, ThreadListParams, ThreadListResponse, ThreadReadParams, ThreadResponse,
    ThreadResumeParams, ThreadStartResponse, ThreadStartedNotification, ThreadStatus,
    ThreadStatusChangedNotification, ThreadTurnsListParams, ThreadTurnsListResponse, Turn,
};
use rein_protocol::{Item, ThreadId, TurnId};
use serde_json::Value;

use super::meta::page;
use super::thread::{answer, kernel_error, register};
use super::to_value;
use super::turn::ask_pump;
use crate::dispatch::{params, ServerState};
use crate::error::RpcError;
use crate::loaded::{LoadedThread, ThreadMeta};
use crate::outbound::now_secs;
use crate::pump::PumpCmd;
use crate::turns::turns_from_state;

fn thread_id(text: &str) -> Result<ThreadId, RpcError> {
    crate::dispatch::wire_id(text, "threadId", "thread")
}

fn rollout_error(e: RolloutError) -> RpcError {
    match e {
        RolloutError::ThreadNotFound(_)
        | RolloutError::AlreadyArchived(_)
        | RolloutError::NotArchived(_)
        | RolloutError::Recorder(RecorderError::Locked { .. }) => {
            RpcError::invalid_request(e.to_string())
        }
        RolloutError::BadCursor(_) => {
            RpcError::invalid_params(e.to_string(), Some("cursor".into()))
        }
        other => RpcError::internal(other),
    }
}

/// What the index knows of a thread, if it has it.
fn entry(state: &ServerState, id: ThreadId) -> Option<ThreadEntry> {
    state.kernel.store().index().ok()?.get(id).ok()?
}

fn first_user_text(state: &ThreadState) -> String {
    state
        .history
        .iter()
        .find_map(|i| match i.as_ref() {
            Item::UserMessage { .. } => i.message_text(),
            _ => None,
        })
        .unwrap_or_default()
}

/// The `Thread` of a thread that is not loaded, from its index entry.
fn stored_thread(state: &ServerState, e: &ThreadEntry) -> Thread {
    let mut settings = state.kernel.default_settings(e.cwd.clone());
    settings.model.clone_from(&e.model);
    ThreadMeta {
        id: e.thread_id,
        provider: state.kernel.provider.clone(),
        settings,
        created_at: (e.created_ms / 1000) as i64,
        updated_at: (e.updated_ms / 1000) as i64,
        name: e.name.clone(),
        preview: e.title.clone().unwrap_or_default(),
        ephemeral: false,
        status: ThreadStatus::NotLoaded,
        path: Some(e.path.display().to_string()),
        forked_from: e.forked_from.map(|f| f.to_string()),
    }
    .to_wire()
}

/// Register a resumed or forked thread; its meta comes from its folded state.
async fn load(
    state: &ServerState,
    new: NewThread,
    forked_from: Option<String>,
) -> Result<(ThreadStartResponse, Thread, Vec<Turn>), RpcError> {
    let folded = new.handle.state().await.map_err(RpcError::internal)?;
    let id = new.handle.id();
    let settings = folded
        .settings
        .clone()
        .ok_or_else(|| RpcError::internal("the thread's history has no settings"))?;
    let indexed = entry(state, id);
    let now = now_secs();
    let meta = ThreadMeta {
        id,
        provider: state.kernel.provider.clone(),
        settings,
        created_at: indexed
            .as_ref()
            .map_or(now, |e| (e.created_ms / 1000) as i64),
        updated_at: now,
        name: folded.name.clone(),
        preview: first_user_text(&folded),
        ephemeral: false,
        status: ThreadStatus::Idle,
        path: indexed.as_ref().map(|e| e.path.display().to_string()),
        forked_from,
    };
    let turns = turns_from_state(&folded);
    let (response, thread) = register(state, new, meta);
    Ok((response, thread, turns))
}

pub async fn resume(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadResumeParams = params(raw)?;
    let thread = thread_id(&p.thread_id)?;
    if let Some(loaded) = state.threads.get(thread) {
        return subscribe(state, &loaded, p.exclude_turns).await;
    }
    let resumed = state.kernel.resume_thread(thread).map_err(kernel_error)?;
    for d in &resumed.diagnostics {
        tracing::warn!("resuming {thread}: skipped a rollout line: {d:?}");
    }
    let (mut response, _, turns) = load(state, resumed.thread, None).await?;
    if !p.exclude_turns {
        response.thread.turns = turns;
    }
    // Codex tells the status before it answers.
    state
        .out
        .notify(ServerNotification::ThreadStatusChanged(
            ThreadStatusChangedNotification {
                thread_id: thread.to_string(),
                status: ThreadStatus::Idle,
            },
        ))
        .await;
    to_value(&response)
}

/// `thread/resume` of a loaded thread subscribes this connection to it (again, harmlessly,
/// if it already is), which also cancels a pending idle unload. The pump subscribes it and
/// answers, between two of the thread's events (see [`PumpCmd::Join`]).
async fn subscribe(
    state: &ServerState,
    loaded: &LoadedThread,
    exclude_turns: bool,
) -> Result<Value, RpcError> {
    let response = {
        let meta = loaded.meta();
        Box::new(answer(state, &meta.settings, meta.to_wire()))
    };
    ask_pump(state, loaded, |reply| PumpCmd::Join {
        reply,
        response,
        exclude_turns,
    })
    .await
}

pub async fn fork(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadForkParams = params(raw)?;
    let parent = thread_id(&p.thread_id)?;
    let at_turn = match &p.last_turn_id {
        None => None,
        Some(turn) => Some(turn_index(state, parent, turn).await?),
    };
    let new = state
        .kernel
        .fork_thread(parent, at_turn)
        .map_err(kernel_error)?;
    let (mut response, thread, turns) = load(state, new, Some(parent.to_string())).await?;
    if !p.exclude_turns {
        response.thread.turns = turns;
    }
    state.notify_after_answer(ServerNotification::ThreadStarted(Box::new(
        ThreadStartedNotification { thread },
    )));
    to_value(&response)
}

/// The 0-based index of `turn` among the thread's turns.
async fn turn_index(state: &ServerState, thread: ThreadId, turn: &str) -> Result<usize, RpcError> {
    let wanted: TurnId = crate::dispatch::wire_id(turn, "lastTurnId", "turn")?;
    let folded = folded_state(state, thread).await?;
    folded
        .turns
        .iter()
        .position(|t| t.id == wanted)
        .ok_or_else(|| {
            RpcError::invalid_request(format!("turn {wanted} is not in thread {thread}"))
        })
}

/// The thread's state: live if loaded here, else folded from its rollout.
async fn folded_state(state: &ServerState, thread: ThreadId) -> Result<ThreadState, RpcError> {
    if let Some(loaded) = state.threads.get(thread) {
        return loaded
            .handle
            .state()
            .await
            .map_err(|e| RpcError::invalid_request(e.to_string()));
    }
    let loaded = state.kernel.store().load(thread).map_err(rollout_error)?;
    Ok(fold_owned(loaded.events))
}

pub fn list(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadListParams = params(raw)?;
    let cwd = match &p.cwd {
        Some(Value::String(s)) => Some(PathBuf::from(s)),
        Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(PathBuf::from),
        _ => None,
    };
    let query = ListQuery {
        limit: p.limit.map_or(50, |l| l.clamp(1, 500) as usize),
        cursor: p.cursor.clone(),
        cwd,
        archived: p.archived.unwrap_or(false),
        search: p.search_term.clone(),
        ..ListQuery::default()
    };
    let page = state.kernel.store().list(&query).map_err(rollout_error)?;
    let data = page
        .threads
        .iter()
        .map(|e| match state.threads.get(e.thread_id) {
            Some(loaded) => loaded.meta().to_wire(),
            None => stored_thread(state, e),
        })
        .collect();
    to_value(&ThreadListResponse {
        data,
        next_cursor: page.next_cursor,
    })
}

pub async fn read(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadReadParams = params(raw)?;
    let id = thread_id(&p.thread_id)?;
    let mut thread = match state.threads.get(id) {
        Some(loaded) => loaded.meta().to_wire(),
        None => {
            let e = entry(state, id)
                .ok_or_else(|| RpcError::invalid_request(format!("no rollout for thread {id}")))?;
            stored_thread(state, &e)
        }
    };
    if p.include_turns {
        thread.turns = turns_from_state(&folded_state(state, id).await?);
    }
    to_value(&ThreadResponse { thread })
}

pub async fn turns_list(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadTurnsListParams = params(raw)?;
    let id = thread_id(&p.thread_id)?;
    let mut turns = turns_from_state(&folded_state(state, id).await?);
    // Newest first, as Codex lists them.
    turns.reverse();
    let (data, next_cursor) = page(turns, p.cursor.as_deref(), p.limit)?;
    to_value(&ThreadTurnsListResponse { data, next_cursor })
}

pub async fn archive(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadIdParams = params(raw)?;
    let thread = thread_id(&p.thread_id)?;
    // An archived thread is not loaded: let it finish writing first.
    let was_loaded = match state.threads.remove(thread) {
        Some(loaded) => {
            let _ = loaded.handle.shutdown().await;
            true
        }
        None => false,
    };
    archive_when_released(state, thread, was_loaded).await?;
    state.notify_after_answer(ServerNotification::ThreadArchived(ThreadIdNotification {
        thread_id: thread.to_string(),
    }));
    to_value(&EmptyResponse {})
}

/// How long a thread we just shut down may take to release its rollout's lock (its loop
/// drops the writer only after answering the shutdown).
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

async fn archive_when_released(
    state: &ServerState,
    thread: ThreadId,
    was_loaded: bool,
) -> Result<(), RpcError> {
    let deadline = tokio::time::Instant::now() + RELEASE_WAIT;
    loop {
        match state.kernel.store().archive(thread) {
            Ok(_) => return Ok(()),
            Err(RolloutError::Recorder(RecorderError::Locked { .. }))
                if was_loaded && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            Err(e) => {
                tracing::debug!(%thread, was_loaded, "archive failed: {e:?}");
                return Err(rollout_error(e));
            }
        }
    }
}

pub fn unarchive(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadIdParams = params(raw)?;
    let thread = thread_id(&p.thread_id)?;
    state
        .kernel
        .store()
        .unarchive(thread)
        .map_err(rollout_error)?;
    let e = entry(state, thread)
        .ok_or_else(|| RpcError::internal(format!("thread {thread} vanished from the index")))?;
    state.notify_after_answer(ServerNotification::ThreadUnarchived(ThreadIdNotification {
        thread_id: thread.to_string(),
    }));
    to_value(&ThreadResponse {
        thread: stored_thread(state, &e),
    })
}
