//! Assistants and threads. The assistant is the server's configured agent; a thread is a
//! rein thread (listed by `rein sessions list`, continued by `rein exec resume`), its
//! `values` the messages of its runs.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rein_core::store::time::rfc3339_ms;
use rein_core::store::{ListQuery, RolloutError};
use rein_protocol::ThreadId;
use serde_json::{json, Value};

use super::body::{self, AssistantSearch, ThreadCreate, ThreadSearch};
use super::fold::{interrupts_of, run_status, RunFold, ThreadFold};
use super::{empty, ASSISTANT_ID};
use crate::error::ApiError;
use crate::handlers::{json_response, read_body};
use crate::request::parse_json;
use crate::server::{App, Body};

/// The most threads one search answers.
const MAX_PAGE: usize = 1000;

/// Read a JSON body (an empty one is `{}`, as the SDK sends for no arguments).
pub(super) async fn body_of<T: serde::de::DeserializeOwned>(
    app: &App,
    req: Request<Incoming>,
) -> Result<T, ApiError> {
    let bytes = read_body(req, app.options.max_body_bytes, app.options.read_timeout).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return parse_json(b"{}");
    }
    parse_json(&bytes)
}

fn assistant(app: &App) -> Value {
    let created = rfc3339_ms(0);
    json!({
        "assistant_id": ASSISTANT_ID, "graph_id": ASSISTANT_ID, "name": ASSISTANT_ID,
        "description": "rein's agent, as this server is configured (model, tools, sandbox, approvals)",
        "config": {}, "context": {}, "metadata": { "model": app.runs.kernel().model },
        "version": 1, "created_at": created, "updated_at": created,
    })
}

pub async fn search_assistants(
    app: &App,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let search: AssistantSearch = body_of(app, req).await?;
    let matches = search.graph_id.as_deref().is_none_or(|g| g == ASSISTANT_ID)
        && search.name.as_deref().is_none_or(|n| n == ASSISTANT_ID)
        && body::is_empty(search.metadata.as_ref())
        && search.offset.unwrap_or(0) == 0
        && search.limit != Some(0);
    let found: Vec<Value> = if matches {
        vec![assistant(app)]
    } else {
        Vec::new()
    };
    Ok(json_response(&Value::Array(found)))
}

pub fn get_assistant(app: &App, id: &str) -> Result<Response<Body>, ApiError> {
    if id != ASSISTANT_ID {
        return Err(ApiError::NotFound(format!(
            "no assistant {id:?} (this server has one: {ASSISTANT_ID:?})"
        )));
    }
    Ok(json_response(&assistant(app)))
}

pub async fn create(app: &App, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let create: ThreadCreate = body_of(app, req).await?;
    create.check()?;
    let thread = app.runs.create_thread().await?;
    Ok(json_response(&thread_object(app, thread).await?))
}

pub async fn get(app: &App, thread: ThreadId) -> Result<Response<Body>, ApiError> {
    Ok(json_response(&thread_object(app, thread).await?))
}

/// The thread's stored events, folded, with its creation time.
pub(super) async fn read(app: &App, thread: ThreadId) -> Result<(ThreadFold, Stored), ApiError> {
    let store = app.runs.kernel().store();
    // A deleted (archived) thread is gone to the protocol, as it is from the listings.
    if let Ok(Some(entry)) = store.entry(thread).await {
        if entry.archived {
            return Err(ApiError::NotFound(format!("thread {thread} was deleted")));
        }
    }
    let loaded = store.read(thread).await.map_err(|e| match e {
        RolloutError::ThreadNotFound(_) => ApiError::NotFound(format!("no thread {thread}")),
        other => ApiError::Internal(other.to_string()),
    })?;
    let updated_ms = loaded.events.last().map(|e| e.timestamp_ms);
    let stored = Stored {
        created_at: loaded.meta.created_at.clone(),
        updated_ms,
        events: loaded.events,
    };
    Ok((ThreadFold::new(thread, &stored.events), stored))
}

pub(super) struct Stored {
    pub created_at: String,
    pub updated_ms: Option<u64>,
    pub events: Vec<rein_protocol::Event>,
}

/// Whether a turn of `thread` runs in this process now.
async fn busy(app: &App, thread: ThreadId) -> bool {
    let Some(loaded) = app.runs.loaded(thread).await else {
        return false;
    };
    loaded
        .handle
        .state()
        .await
        .is_ok_and(|s| s.active_turn.is_some())
}

/// The open approval requests of the thread's running run, by run id.
async fn asking(app: &App, thread: ThreadId, fold: &ThreadFold) -> (Value, Vec<Value>) {
    let Some(last) = fold.last() else {
        return (json!({}), Vec::new());
    };
    let id = crate::ids::ResponseId {
        thread,
        turn: last.turn,
    };
    let open = interrupts_of(&last.projector);
    if open.is_empty() || !app.runs.is_running(id).await {
        return (json!({}), Vec::new());
    }
    (json!({ last.turn.to_string(): open }), open)
}

async fn thread_object(app: &App, thread: ThreadId) -> Result<Value, ApiError> {
    let (fold, stored) = read(app, thread).await?;
    let (interrupts, open) = asking(app, thread, &fold).await;
    // A run waiting for an approval is, in the protocol's words, interrupted.
    let status = if !open.is_empty() {
        "interrupted"
    } else if busy(app, thread).await {
        "busy"
    } else if fold
        .last()
        .is_some_and(|r| run_status(r.projector.status(), false) == "error")
    {
        "error"
    } else {
        "idle"
    };
    let updated = stored
        .updated_ms
        .map_or_else(|| stored.created_at.clone(), rfc3339_ms);
    Ok(json!({
        "thread_id": thread.to_string(), "created_at": stored.created_at, "updated_at": updated,
        "metadata": {}, "status": status, "values": fold.values(), "interrupts": interrupts,
    }))
}

/// `GET /threads/{id}/state`: the thread's values, and whether a run is going on.
pub async fn state(app: &App, thread: ThreadId) -> Result<Response<Body>, ApiError> {
    let (fold, stored) = read(app, thread).await?;
    let (_, interrupts) = asking(app, thread, &fold).await;
    let next: Vec<&str> = if busy(app, thread).await {
        vec!["agent"]
    } else {
        Vec::new()
    };
    let checkpoint = fold.last().map(|r| r.turn.to_string());
    let at = stored
        .updated_ms
        .map_or_else(|| stored.created_at.clone(), rfc3339_ms);
    Ok(json_response(&json!({
        "values": fold.values(), "next": next, "tasks": [], "interrupts": interrupts,
        "checkpoint": {
            "thread_id": thread.to_string(), "checkpoint_ns": "", "checkpoint_id": checkpoint,
            "checkpoint_map": null,
        },
        "metadata": {}, "created_at": at, "parent_checkpoint": null,
    })))
}

/// `POST /threads/{id}/history` (`limit`, `before`): the thread's state after each of its
/// runs, newest first; a run is a checkpoint (its id the run's).
pub async fn history(
    app: &App,
    thread: ThreadId,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let asked: HistoryQuery = body_of(app, req).await?;
    if !body::is_empty(asked.metadata.as_ref()) {
        return Ok(json_response(&json!([])));
    }
    let (fold, _) = read(app, thread).await?;
    let live: Vec<&RunFold> = fold.runs.iter().filter(|r| !r.rolled_back).collect();
    let before = asked
        .before
        .as_ref()
        .and_then(|b| b.get("checkpoint_id").or(Some(b)))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut states = Vec::new();
    let mut messages = Vec::new();
    let mut parent: Option<Value> = None;
    for run in live {
        messages.extend(run.messages());
        let checkpoint = json!({
            "thread_id": thread.to_string(), "checkpoint_ns": "",
            "checkpoint_id": run.turn.to_string(), "checkpoint_map": null,
        });
        states.push(json!({
            "values": { "messages": messages }, "next": [], "tasks": [], "interrupts": [],
            "checkpoint": checkpoint, "metadata": {}, "created_at": rfc3339_ms(run.updated_ms),
            "parent_checkpoint": parent,
        }));
        parent = Some(checkpoint);
    }
    states.reverse();
    if let Some(before) = before {
        let at = states
            .iter()
            .position(|s| s["checkpoint"]["checkpoint_id"] == before.as_str());
        states.drain(..at.map_or(states.len(), |i| i + 1));
    }
    states.truncate(asked.limit.unwrap_or(10));
    Ok(json_response(&Value::Array(states)))
}

/// The body of `POST /threads/{id}/history`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    before: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
}

/// `POST /threads/search`: the server's home's threads, newest first.
pub async fn search(app: &App, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let search: ThreadSearch = body_of(app, req).await?;
    if search.sort_by.as_deref().is_some_and(|s| s != "updated_at")
        || search.sort_order.as_deref().is_some_and(|s| s != "desc")
    {
        return Err(ApiError::bad(
            "threads are listed newest first (sort_by updated_at, sort_order desc)",
            Some("sort_by"),
        ));
    }
    // Each thread found is read from its rollout: a page is bounded.
    let limit = search.limit.unwrap_or(10).min(MAX_PAGE);
    let offset = search.offset.unwrap_or(0);
    // Every thread's metadata is empty: a filter asking for any key matches none.
    if !body::is_empty(search.metadata.as_ref()) || limit == 0 {
        return Ok(json_response(&json!([])));
    }
    let ids: Vec<ThreadId> = match &search.ids {
        Some(ids) => ids.iter().filter_map(|i| i.parse().ok()).collect(),
        None => listed(app, offset + limit).await?,
    };
    let mut found = Vec::new();
    for thread in ids {
        let Ok(object) = thread_object(app, thread).await else {
            continue;
        };
        if search
            .status
            .as_deref()
            .is_some_and(|s| object["status"] != s)
        {
            continue;
        }
        found.push(object);
    }
    let page: Vec<Value> = found.into_iter().skip(offset).take(limit).collect();
    Ok(json_response(&Value::Array(page)))
}

/// Up to `count` root threads of the home, newest first.
async fn listed(app: &App, count: usize) -> Result<Vec<ThreadId>, ApiError> {
    let store = app.runs.kernel().store();
    let mut ids = Vec::new();
    let mut cursor = None;
    while ids.len() < count {
        let page = store
            .list(ListQuery {
                limit: (count - ids.len()).min(100),
                cursor: cursor.take(),
                ..ListQuery::default()
            })
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        ids.extend(page.threads.iter().map(|t| t.thread_id));
        match page.next_cursor {
            Some(next) if !page.threads.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(ids)
}

/// `DELETE /threads/{id}`: the thread is archived (out of every listing; `rein sessions`
/// can bring it back). Refused while a run goes on.
pub async fn delete(app: &Arc<App>, thread: ThreadId) -> Result<Response<Body>, ApiError> {
    read(app, thread).await?;
    if !app.runs.unload_idle(thread).await {
        return Err(ApiError::Conflict(format!(
            "thread {thread} is running a run; cancel it first"
        )));
    }
    app.runs
        .kernel()
        .store()
        .archive(thread)
        .await
        .map_err(|e| ApiError::Conflict(format!("thread {thread} cannot be deleted: {e}")))?;
    // The thread is gone; what serve recorded about it would only outlive it.
    if let Err(e) = app.runs.records().forget_thread(thread).await {
        tracing::warn!("dropping the records of deleted thread {thread}: {e}");
    }
    Ok(empty(StatusCode::NO_CONTENT))
}
