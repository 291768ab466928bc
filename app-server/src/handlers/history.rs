//! Methods over persisted threads, through the kernel's sessions and rollout store:
//! `thread/resume`, `thread/fork`, `thread/list`, `thread/read`, `thread/turns/list`,
//! `thread/archive`, `thread/unarchive`.

use std::path::PathBuf;

use rein_app_server_protocol::skills::SkillActivationInfo;
use rein_app_server_protocol::{
    EmptyResponse, ServerNotification, SortDirection, Thread, ThreadForkParams,
    ThreadIdNotification, ThreadIdParams, ThreadListParams, ThreadListResponse, ThreadReadParams,
    ThreadResponse, ThreadResumeParams, ThreadStartResponse, ThreadStartedNotification,
    ThreadStatus, ThreadStatusChangedNotification, ThreadTurnsListParams, ThreadTurnsListResponse,
    Turn, TurnItemsView, WarningNotification,
};
use rein_core::recorder::RecorderError;
use rein_core::store::{Diagnostic, ListQuery, RolloutError, ThreadEntry, ThreadKinds};
use rein_core::thread::state::fold_owned;
use rein_core::thread::state::ThreadState;
use rein_core::NewThread;
use rein_protocol::{AgentOrigin, Item, ThreadId, TurnId};
use serde_json::Value;

use super::meta::page;
use super::thread::{answer, kernel_error, register, store_error};
use super::turn::ask_pump;
use crate::dispatch::ServerState;
use crate::error::RpcError;
use crate::loaded::{LoadedThread, ThreadMeta};
use crate::outbound::now_secs;
use crate::pump::PumpCmd;
use crate::turns::turns_from_state;

pub(crate) fn thread_id(text: &str) -> Result<ThreadId, RpcError> {
    crate::dispatch::wire_id(text, "threadId", "thread")
}

/// What the index knows of a thread, if it has it.
async fn entry(state: &ServerState, id: ThreadId) -> Option<ThreadEntry> {
    state.kernel.store().entry(id).await.ok()?
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

/// The `Thread` of a thread that is not loaded, from its index entry and, for a sub-agent,
/// the origin (depth, nickname, role) its rollout records.
async fn stored_thread(state: &ServerState, e: &ThreadEntry) -> Thread {
    let mut agent = None;
    if let Some(parent) = e.parent_thread_id {
        agent = match state.kernel.store().agent_origin(e.thread_id).await {
            Ok(Some(origin)) => Some(origin),
            other => {
                tracing::debug!(thread = %e.thread_id, ?other, "no agent origin in the rollout");
                // The index knows the parent only.
                Some(AgentOrigin {
                    parent_thread_id: parent,
                    depth: 1,
                    nickname: None,
                    role: None,
                })
            }
        };
    }
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
        agent,
        closing: false,
    }
    .to_wire()
}

/// Which threads `sourceKinds` asks for: interactive ones unless it names sub-agents.
fn kinds_of(source_kinds: Option<&[String]>) -> ThreadKinds {
    let Some(kinds) = source_kinds.filter(|k| !k.is_empty()) else {
        return ThreadKinds::Roots;
    };
    let sub = kinds
        .iter()
        .any(|k| matches!(k.as_str(), "subAgent" | "subAgentThreadSpawn"));
    let roots = kinds.iter().any(|k| !k.starts_with("subAgent"));
    match (roots, sub) {
        (true, true) => ThreadKinds::All,
        (false, true) => ThreadKinds::SubAgents,
        _ => ThreadKinds::Roots,
    }
}

/// Register a resumed or forked thread; its meta comes from its folded state.
async fn load(
    state: &ServerState,
    new: NewThread,
    indexed: Option<ThreadEntry>,
    forked_from: Option<String>,
) -> Result<(ThreadStartResponse, Thread, Vec<Turn>), RpcError> {
    let folded = new.handle.state().await.map_err(RpcError::internal)?;
    let id = new.handle.id();
    let settings = folded
        .settings
        .clone()
        .ok_or_else(|| RpcError::internal("the thread's history has no settings"))?;
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
        path: new
            .path
            .as_ref()
            .or(indexed.as_ref().map(|e| &e.path))
            .map(|p| p.display().to_string()),
        forked_from,
        agent: folded.agent.clone(),
        closing: false,
    };
    let turns = turns_from_state(&folded);
    let (mut response, thread) = register(state, new, meta);
    response.instruction_sources = super::thread::instruction_sources(folded.context.as_ref());
    Ok((response, thread, turns))
}

/// The warning a client gets when resuming skipped lines that held something (blank
/// lines and the like are not worth a word): which lines, and why.
fn skipped_lines_warning(
    thread: ThreadId,
    diagnostics: &[Diagnostic],
) -> Option<ServerNotification> {
    let lost: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.kind.lost_content())
        .map(ToString::to_string)
        .collect();
    if lost.is_empty() {
        return None;
    }
    const SHOWN: usize = 20;
    let mut message = format!(
        "thread {thread}: {} line(s) of its rollout could not be used and were skipped: {}",
        lost.len(),
        lost.iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    );
    if lost.len() > SHOWN {
        message.push_str(&format!("; and {} more", lost.len() - SHOWN));
    }
    Some(ServerNotification::Warning(WarningNotification {
        thread_id: Some(thread.to_string()),
        message,
    }))
}

pub async fn resume(
    state: &ServerState,
    p: ThreadResumeParams,
) -> Result<ThreadStartResponse, RpcError> {
    let thread = thread_id(&p.thread_id)?;
    if let Some(loaded) = state.threads.get(thread) {
        return subscribe(state, &loaded, p.exclude_turns).await;
    }
    let resumed = state
        .kernel
        .resume_thread(thread)
        .await
        .map_err(kernel_error)?;
    if let Some(warning) = skipped_lines_warning(thread, &resumed.diagnostics) {
        state.notify_after_answer(warning);
    }
    let (mut response, _, turns) = load(state, resumed.thread, resumed.entry, None).await?;
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
    Ok(response)
}

/// `thread/resume` of a loaded thread subscribes this connection to it (again, harmlessly,
/// if it already is), which also cancels a pending idle unload. The pump subscribes it and
/// answers, between two of the thread's events (see [`PumpCmd::Join`]).
async fn subscribe(
    state: &ServerState,
    loaded: &LoadedThread,
    exclude_turns: bool,
) -> Result<ThreadStartResponse, RpcError> {
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

pub async fn fork(
    state: &ServerState,
    p: ThreadForkParams,
) -> Result<ThreadStartResponse, RpcError> {
    let parent = thread_id(&p.thread_id)?;
    let at_turn = match &p.last_turn_id {
        None => None,
        Some(turn) => Some(turn_index(state, parent, turn).await?),
    };
    let new = state
        .kernel
        .fork_thread(parent, at_turn)
        .await
        .map_err(kernel_error)?;
    let (mut response, thread, turns) = load(state, new, None, Some(parent.to_string())).await?;
    if !p.exclude_turns {
        response.thread.turns = turns;
    }
    state.notify_after_answer(ServerNotification::ThreadStarted(Box::new(
        ThreadStartedNotification { thread },
    )));
    Ok(response)
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
pub(crate) async fn folded_state(
    state: &ServerState,
    thread: ThreadId,
) -> Result<ThreadState, RpcError> {
    if let Some(loaded) = state.threads.get(thread) {
        return loaded
            .handle
            .state()
            .await
            .map_err(|e| RpcError::invalid_request(e.to_string()));
    }
    let loaded = state
        .kernel
        .store()
        .read(thread)
        .await
        .map_err(store_error)?;
    Ok(fold_owned(loaded.events))
}

pub async fn list(
    state: &ServerState,
    p: ThreadListParams,
) -> Result<ThreadListResponse, RpcError> {
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
        kinds: kinds_of(p.source_kinds.as_deref()),
        ..ListQuery::default()
    };
    let page = state
        .kernel
        .store()
        .list(query)
        .await
        .map_err(store_error)?;
    let mut data = Vec::with_capacity(page.threads.len());
    for e in &page.threads {
        let loaded = state.threads.get(e.thread_id);
        data.push(match loaded {
            Some(loaded) => loaded.meta().to_wire(),
            None => stored_thread(state, e).await,
        });
    }
    Ok(ThreadListResponse {
        data,
        next_cursor: page.next_cursor,
    })
}

pub async fn read(state: &ServerState, p: ThreadReadParams) -> Result<ThreadResponse, RpcError> {
    let id = thread_id(&p.thread_id)?;
    let thread = match state.threads.get(id) {
        Some(loaded) => loaded.meta().to_wire(),
        None => {
            let e = entry(state, id)
                .await
                .ok_or_else(|| RpcError::invalid_request(format!("no rollout for thread {id}")))?;
            stored_thread(state, &e).await
        }
    };
    let mut response = ThreadResponse::new(thread);
    if p.include_turns {
        let folded = folded_state(state, id).await?;
        response.thread.turns = turns_from_state(&folded);
        response.rein_skills_used = folded
            .skills_used
            .iter()
            .map(|s| SkillActivationInfo {
                name: s.name.clone(),
                path: s.path.display().to_string(),
                sha256: s.sha256.clone(),
                implicit: s.implicit,
            })
            .collect();
    }
    Ok(response)
}

pub async fn turns_list(
    state: &ServerState,
    p: ThreadTurnsListParams,
) -> Result<ThreadTurnsListResponse, RpcError> {
    let id = thread_id(&p.thread_id)?;
    let mut turns = turns_from_state(&folded_state(state, id).await?);
    // Newest first unless asked otherwise, as Codex lists them.
    if p.sort_direction != Some(SortDirection::Asc) {
        turns.reverse();
    }
    if p.items_view == Some(TurnItemsView::NotLoaded) {
        for turn in &mut turns {
            turn.items.clear();
            turn.items_view = TurnItemsView::NotLoaded;
        }
    }
    let (data, next_cursor) = page(turns, p.cursor.as_deref(), p.limit)?;
    Ok(ThreadTurnsListResponse { data, next_cursor })
}

pub async fn archive(state: &ServerState, p: ThreadIdParams) -> Result<EmptyResponse, RpcError> {
    let thread = thread_id(&p.thread_id)?;
    // An archived thread is not loaded: let it finish writing first.
    let was_loaded = match state.threads.remove(thread) {
        Some(loaded) => {
            // The thread may extract memories before it ends (docs/memory.md); this
            // connection waits for the archive and cannot answer a question meanwhile,
            // so its questions are answered no.
            loaded.meta().closing = true;
            let _ = loaded.handle.shutdown().await;
            true
        }
        None => false,
    };
    archive_when_released(state, thread, was_loaded).await?;
    state.notify_after_answer(ServerNotification::ThreadArchived(ThreadIdNotification {
        thread_id: thread.to_string(),
    }));
    Ok(EmptyResponse {})
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
        match state.kernel.store().archive(thread).await {
            Ok(()) => return Ok(()),
            Err(RolloutError::Recorder(RecorderError::Locked { .. }))
                if was_loaded && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            Err(e) => {
                tracing::debug!(%thread, was_loaded, "archive failed: {e:?}");
                return Err(store_error(e));
            }
        }
    }
}

pub async fn unarchive(state: &ServerState, p: ThreadIdParams) -> Result<ThreadResponse, RpcError> {
    let thread = thread_id(&p.thread_id)?;
    let e = state
        .kernel
        .store()
        .unarchive(thread)
        .await
        .map_err(store_error)?;
    state.notify_after_answer(ServerNotification::ThreadUnarchived(ThreadIdNotification {
        thread_id: thread.to_string(),
    }));
    Ok(ThreadResponse::new(stored_thread(state, &e).await))
}
