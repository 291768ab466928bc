//! `thread/*` methods on loaded threads: start, list the loaded ones, name, unsubscribe
//! (and leaving a thread when the connection ends).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::turn::ask_pump;
use rein_app_server_protocol::{
    EmptyResponse, ServerNotification, Thread, ThreadIdParams, ThreadLoadedListParams,
    ThreadLoadedListResponse, ThreadSetNameParams, ThreadStartParams, ThreadStartResponse,
    ThreadStartedNotification, ThreadStatus, ThreadUnsubscribeResponse, ThreadUnsubscribeStatus,
};
use rein_bootstrap::sessions::Persistence;
use rein_core::recorder::RecorderError;
use rein_core::store::RolloutError;
use rein_core::{KernelError, NewThread};
use rein_protocol::ThreadSettings;
use tokio::sync::mpsc;

use crate::children::PUMP_QUEUE;
use tokio::sync::mpsc::error::TrySendError;

use super::loaded;
use super::meta::page;
use crate::convert::{
    approval_policy_from_wire, approval_policy_to_wire, sandbox_from_mode, sandbox_to_wire,
};
use crate::dispatch::{
    bounded, wire_id, ServerState, MAX_MODEL_BYTES, MAX_NAME_BYTES, MAX_PATH_BYTES,
};
use crate::error::RpcError;
use crate::event_map::EventMapper;
use crate::handlers::thread_config::thread_overrides;
use crate::loaded::{LoadedThread, ThreadMeta};
use crate::outbound::now_secs;
use crate::pump::{Pump, PumpCmd, PumpRequest};
use crate::subscribers::{Left, Subscribers};

pub async fn start(
    state: &ServerState,
    p: ThreadStartParams,
) -> Result<ThreadStartResponse, RpcError> {
    if let Some(model) = &p.model {
        bounded("model", model, MAX_MODEL_BYTES)?;
    }
    if let Some(cwd) = &p.cwd {
        bounded("cwd", cwd, MAX_PATH_BYTES)?;
    }
    let (response, thread) = start_thread(state, p).await?;
    state.notify_after_answer(ServerNotification::ThreadStarted(Box::new(
        ThreadStartedNotification { thread },
    )));
    Ok(response)
}

async fn start_thread(
    state: &ServerState,
    p: ThreadStartParams,
) -> Result<(ThreadStartResponse, Thread), RpcError> {
    let kernel = &state.kernel;
    let cwd = match &p.cwd {
        Some(cwd) => PathBuf::from(cwd),
        None => std::env::current_dir().map_err(RpcError::internal)?,
    };
    if !cwd.is_absolute() {
        return Err(RpcError::invalid_params(
            format!("cwd: must be an absolute path: {}", cwd.display()),
            Some("cwd".into()),
        ));
    }
    let overrides = thread_overrides(p.config.as_ref())?;
    let mut settings = kernel.default_settings(cwd);
    if let Some(model) = p.model.clone().or(overrides.model) {
        settings.model = model;
    }
    let approval_policy = match &p.approval_policy {
        Some(policy) => Some(approval_policy_from_wire(policy)?),
        None => overrides.approval_policy,
    };
    if let Some(policy) = approval_policy {
        settings.approval_policy = policy;
    }
    if let Some(policy) = p.sandbox.map(sandbox_from_mode).or(overrides.sandbox) {
        settings.sandbox_policy = policy;
    }
    let instructions: Vec<&str> = [&p.base_instructions, &p.developer_instructions]
        .into_iter()
        .filter_map(|s| s.as_deref())
        .collect();
    if !instructions.is_empty() {
        settings.instructions = instructions.join("\n\n");
    }
    let ephemeral = p.ephemeral.unwrap_or(false);
    let persistence = if ephemeral {
        Persistence::Ephemeral
    } else {
        Persistence::Rollout
    };
    // A `required` MCP server that cannot start fails the thread's start, as in Codex.
    if let Some(mcp) = &kernel.mcp {
        mcp.wait_required(&settings.cwd)
            .await
            .map_err(RpcError::internal)?;
    }
    // The rollout is created on the store's threads; this connection only waits.
    let new = kernel
        .start_thread_as(settings.clone(), persistence, overrides.strategy)
        .await
        .map_err(kernel_error)?;
    let now = now_secs();
    let path = new.path.as_ref().map(|p| p.display().to_string());
    let meta = ThreadMeta {
        id: new.handle.id(),
        provider: kernel.provider.clone(),
        settings,
        created_at: now,
        updated_at: now,
        name: None,
        preview: String::new(),
        ephemeral,
        status: ThreadStatus::Idle,
        path,
        forked_from: None,
        agent: None,
        closing: false,
    };
    let context = new.handle.state().await.ok().and_then(|s| s.context);
    let (mut response, thread) = register(state, new, meta);
    response.instruction_sources = instruction_sources(context.as_ref());
    Ok((response, thread))
}

/// Codex's `instructionSources`: the `AGENTS.md` files the thread's model was told, as
/// it read them when the thread was created.
pub fn instruction_sources(context: Option<&rein_protocol::ThreadContext>) -> Vec<String> {
    context
        .map(|c| {
            c.sources
                .iter()
                .map(|s| s.path.display().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Map a kernel error to the answer a client can act on.
pub fn kernel_error(e: KernelError) -> RpcError {
    match e {
        KernelError::UnknownModel(m) => {
            RpcError::invalid_params(format!("model: {m}"), Some("model".into()))
        }
        KernelError::InvalidSettings(m) => RpcError::invalid_params(m, None),
        KernelError::Rollout(r) => store_error(r),
        KernelError::Recorder(r @ RecorderError::Locked { .. }) => {
            RpcError::invalid_request(r.to_string())
        }
        KernelError::AlreadyLoaded(id) => {
            RpcError::invalid_request(format!("thread {id} is already loaded"))
        }
        other => RpcError::internal(other),
    }
}

/// Map a session store error to the answer a client can act on: what is wrong with a
/// thread's record (missing, damaged, locked by another writer, archived or not) is an
/// invalid request naming the thread, never an internal error with a path in it.
pub fn store_error(e: RolloutError) -> RpcError {
    match e {
        RolloutError::BadCursor(_) => {
            RpcError::invalid_params(e.to_string(), Some("cursor".into()))
        }
        RolloutError::ThreadNotFound(_)
        | RolloutError::AlreadyArchived(_)
        | RolloutError::NotArchived(_)
        | RolloutError::Damaged { .. }
        | RolloutError::Fork(_)
        | RolloutError::Recorder(RecorderError::Locked { .. }) => {
            RpcError::invalid_request(e.to_string())
        }
        other => {
            tracing::warn!("session store: {other}");
            RpcError::internal(format!("the session store failed: {other}"))
        }
    }
}

/// Load a thread, subscribed by this connection: keep it in the registry and start its pump.
/// Returns the answer `thread/start`, `thread/resume` and `thread/fork` share.
pub fn register(
    state: &ServerState,
    new: NewThread,
    meta: ThreadMeta,
) -> (ThreadStartResponse, Thread) {
    let kernel = &state.kernel;
    let settings = meta.settings.clone();
    let thread = meta.to_wire();
    let (tx, rx) = mpsc::channel(PUMP_QUEUE);
    let (release, gate) = crate::deferred::gate();
    let subscribers = Subscribers::default();
    subscribers.join(state.subscriber());
    let entry = LoadedThread {
        handle: new.handle,
        meta: Arc::new(Mutex::new(meta)),
        pump: tx,
        subscribers,
        spawned: Arc::default(),
    };
    state.threads.insert(entry.clone());
    let context_window = crate::children::context_window(kernel, &settings.model);
    let id = entry.handle.id();
    let pump = Pump {
        mapper: EventMapper::new(thread.id.clone(), context_window),
        thread: entry,
        events: new.events,
        cmds: rx,
        threads: Arc::clone(&state.threads),
        idle_unload: state.hub.idle_unload,
        sub_agent: false,
        gate: Some(gate),
    };
    state.release_after_answer(release);
    tokio::spawn(pump.run());
    crate::children::adopt(&state.hub, kernel, id);
    (answer(state, &settings, thread.clone()), thread)
}

/// The answer `thread/start`, `thread/resume` and `thread/fork` share.
pub fn answer(
    state: &ServerState,
    settings: &ThreadSettings,
    thread: Thread,
) -> ThreadStartResponse {
    ThreadStartResponse {
        thread,
        model: settings.model.clone(),
        model_provider: state.kernel.provider.clone(),
        service_tier: None,
        cwd: settings.cwd.display().to_string(),
        instruction_sources: Vec::new(),
        approval_policy: approval_policy_to_wire(settings.approval_policy),
        approvals_reviewer: "user".into(),
        sandbox: sandbox_to_wire(settings.sandbox_policy, settings.sandbox_options.as_ref()),
        reasoning_effort: settings.reasoning_effort.as_ref().map(ToString::to_string),
    }
}

pub fn loaded_list(
    state: &ServerState,
    p: ThreadLoadedListParams,
) -> Result<ThreadLoadedListResponse, RpcError> {
    let ids: Vec<String> = state
        .threads
        .ids()
        .iter()
        .map(ToString::to_string)
        .collect();
    let (data, next_cursor) = page(ids, p.cursor.as_deref(), p.limit)?;
    Ok(ThreadLoadedListResponse { data, next_cursor })
}

/// `thread/name/set`: the thread records the name (it survives a restart); every
/// subscriber hears `thread/name/updated` after this answer.
pub async fn set_name(
    state: &ServerState,
    p: ThreadSetNameParams,
) -> Result<EmptyResponse, RpcError> {
    let thread = loaded(state, &p.thread_id)?;
    bounded("name", &p.name, MAX_NAME_BYTES)?;
    let name = p.name.trim().to_owned();
    if name.is_empty() {
        return Err(RpcError::invalid_params(
            "name: must not be empty",
            Some("name".into()),
        ));
    }
    ask_pump(state, &thread, |reply| PumpCmd::SetName { reply, name }).await
}

/// `thread/memoryMode/set`: the thread records the mode (so a resume keeps it); from its
/// next turn a `disabled` thread is given no memories and offered no `remember`.
pub async fn set_memory_mode(
    state: &ServerState,
    p: rein_app_server_protocol::ThreadMemoryModeSetParams,
) -> Result<EmptyResponse, RpcError> {
    use rein_app_server_protocol::ThreadMemoryMode as Wire;
    let thread = loaded(state, &p.thread_id)?;
    let mode = match p.mode {
        Wire::Enabled => rein_protocol::ThreadMemoryMode::Enabled,
        Wire::Disabled => rein_protocol::ThreadMemoryMode::Disabled,
    };
    ask_pump(state, &thread, |reply| PumpCmd::SetMemoryMode {
        reply,
        mode,
    })
    .await
}

pub fn unsubscribe(
    state: &ServerState,
    p: ThreadIdParams,
) -> Result<ThreadUnsubscribeResponse, RpcError> {
    // A malformed id is an error; a well-formed one nobody loaded is "not loaded".
    let id = wire_id(&p.thread_id, "threadId", "thread")?;
    let status = match state.threads.get(id) {
        Some(thread) => match leave(state, &thread, true) {
            Left::NotSubscribed => ThreadUnsubscribeStatus::NotSubscribed,
            Left::Left | Left::Last => ThreadUnsubscribeStatus::Unsubscribed,
        },
        None => ThreadUnsubscribeStatus::NotLoaded,
    };
    Ok(ThreadUnsubscribeResponse { status })
}

/// Take this connection off `thread` (`connected`: it still hears `thread/closed`) and tell
/// the pump, which starts the idle-unload countdown if nobody is left. With no grace
/// period the thread leaves the registry at once, and unloads as soon as it is idle.
pub fn leave(state: &ServerState, thread: &LoadedThread, connected: bool) -> Left {
    let left = thread.subscribers.leave(state.connection, connected);
    if left == Left::NotSubscribed {
        return left;
    }
    let last = left == Left::Last;
    if last && state.hub.idle_unload.is_zero() {
        state
            .threads
            .remove_served_by(thread.handle.id(), &thread.pump);
    }
    let request = PumpRequest {
        from: state.subscriber(),
        cmd: PumpCmd::Left { last },
    };
    // Never wait on a busy pump here: the connection's loop would stall behind it.
    if let Err(TrySendError::Full(request)) = thread.pump.try_send(request) {
        let pump = thread.pump.clone();
        tokio::spawn(async move { pump.send(request).await });
    }
    left
}
