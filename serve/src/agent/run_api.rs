//! Runs: created in the background, streamed or waited for; read, listed, joined, joined
//! as a stream (resumed after `Last-Event-ID`, at any age) and cancelled. A run is a turn:
//! its object and its events are folded from the rollout, and followed live while it
//! runs here. A client that goes away never stops a run, unless it asked for that
//! (`on_disconnect: cancel`, `cancel_on_disconnect=true`).

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use rein_core::store::time::rfc3339_ms;
use rein_core::EventStream;
use rein_protocol::{SubmissionId, ThreadId, TurnId};
use serde_json::{json, Value};

use super::body::{input_parts, OnDisconnect, RunCreate};
use super::fold::{run_status, ApEvent, Modes, RunStream};
use super::queue::{self, Waiting};
use super::threads::{body_of, read};
use super::{locate, query_all, ASSISTANT_ID};
use crate::error::ApiError;
use crate::handlers::json_response;
use crate::ids::ResponseId;
use crate::runs::ends_turn;
use crate::server::{App, Body};
use crate::stream::{self, Sink};

/// What `POST /threads/{id}/runs[/stream|/wait]` answers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The run object, at once.
    Background,
    /// The run's events.
    Stream,
    /// The thread's values once the run has ended.
    Wait,
}

pub async fn create(
    app: &Arc<App>,
    thread: ThreadId,
    req: Request<Incoming>,
    mode: Mode,
) -> Result<Response<Body>, ApiError> {
    let run: RunCreate = body_of(app, req).await?;
    if run.on_completion.is_some() {
        return Err(ApiError::bad(
            "`on_completion` is for stateless runs (POST /runs): this thread is kept",
            Some("on_completion"),
        ));
    }
    read(app, thread).await?;
    Ok(start(app, thread, run, mode).await?.0)
}

/// Start `run` on `thread` and answer as `mode` says; also the run's id.
pub(super) async fn start(
    app: &Arc<App>,
    thread: ThreadId,
    run: RunCreate,
    mode: Mode,
) -> Result<(Response<Body>, TurnId), ApiError> {
    run.check()?;
    let modes = run.modes()?;
    if run.assistant_id != ASSISTANT_ID {
        return Err(ApiError::NotFound(format!(
            "no assistant {:?} (this server has one: {ASSISTANT_ID:?})",
            run.assistant_id
        )));
    }
    let parts = input_parts(&run.input)?;
    // The turn takes the submission's id: the run's id is known before it starts.
    let turn = TurnId::from(SubmissionId::new());
    let strategy = run.multitask_strategy.unwrap_or_default();
    super::remember(app, thread, turn, super::Remembered { strategy, modes }).await?;
    let live = match queue::start(app, thread, turn, parts, strategy).await {
        Ok(live) => live,
        Err(e) => {
            // No run of that id exists, so neither does its record.
            if let Err(e) = app.runs.records().remove_run(thread, turn).await {
                tracing::warn!("removing the record of run {turn}: {e}");
            }
            return Err(e);
        }
    };
    let mut response = match mode {
        Mode::Background => json_response(&run_object(app, thread, turn).await?),
        Mode::Stream => {
            let cancel = run.on_disconnect == Some(OnDisconnect::Cancel);
            stream_run(app, thread, turn, modes, None, live, cancel)
        }
        Mode::Wait => {
            drop(live);
            await_final(app, thread, turn).await;
            outcome(app, thread, turn, true).await?
        }
    };
    locate(&mut response, thread, turn, mode == Mode::Stream);
    Ok((response, turn))
}

/// `GET /threads/{id}/runs/{run}`.
pub async fn get(app: &App, thread: ThreadId, turn: TurnId) -> Result<Response<Body>, ApiError> {
    Ok(json_response(&run_object(app, thread, turn).await?))
}

/// `GET /threads/{id}/runs` (`limit`, `offset`, `status`): newest first.
pub async fn list(app: &App, thread: ThreadId, query: &str) -> Result<Response<Body>, ApiError> {
    let number = |key: &str, default: usize| -> Result<usize, ApiError> {
        match query_all(query, key).first() {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| {
                ApiError::bad(format!("{key} must be a number, not {v:?}"), Some(key))
            }),
        }
    };
    let (limit, offset) = (number("limit", 10)?, number("offset", 0)?);
    let status = query_all(query, "status").first().copied();
    let (fold, _) = read(app, thread).await?;
    let mut runs = Vec::new();
    for (turn, created_ms, waiting) in queue::queued_runs(app, thread).await {
        runs.push((
            created_ms,
            queued_object(app, thread, turn, created_ms, &waiting).await,
        ));
    }
    for run in fold.runs.iter().filter(|r| !r.rolled_back) {
        let object = stored_object(app, thread, run).await;
        runs.push((run.created_ms, object));
    }
    runs.sort_by_key(|r| std::cmp::Reverse(r.0));
    let page: Vec<Value> = runs
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| status.is_none_or(|s| r["status"] == s))
        .skip(offset)
        .take(limit)
        .collect();
    Ok(json_response(&Value::Array(page)))
}

/// `POST /threads/{id}/runs/{run}/cancel` (`action=interrupt|rollback`; `wait` is
/// accepted: the answer always comes once the run has stopped). Answers the run.
pub async fn cancel(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    query: &str,
) -> Result<Response<Body>, ApiError> {
    let action = query_all(query, "action")
        .first()
        .copied()
        .unwrap_or("interrupt");
    if !matches!(action, "interrupt" | "rollback") {
        return Err(ApiError::bad(
            format!("action must be interrupt or rollback, not {action:?}"),
            Some("action"),
        ));
    }
    if !queue::cancel_queued(app, turn).await? {
        let object = run_object(app, thread, turn).await?;
        let id = ResponseId { thread, turn };
        if app.runs.cancel(id).await? && action == "rollback" {
            queue::rollback(app, thread).await?;
            return Ok(json_response(&object_with(object, "interrupted")));
        }
    }
    Ok(json_response(&run_object(app, thread, turn).await?))
}

fn object_with(mut object: Value, status: &str) -> Value {
    object["status"] = json!(status);
    object
}

/// `GET /threads/{id}/runs/{run}/join`: the thread's values once the run has ended.
pub async fn join(app: &App, thread: ThreadId, turn: TurnId) -> Result<Response<Body>, ApiError> {
    run_object(app, thread, turn).await?;
    await_final(app, thread, turn).await;
    outcome(app, thread, turn, false).await
}

/// `GET /threads/{id}/runs/{run}/stream`: the run's events from the rollout (after
/// `Last-Event-ID`), then live while it runs here.
pub async fn join_stream(
    app: &Arc<App>,
    thread: ThreadId,
    turn: TurnId,
    query: &str,
    last_event_id: Option<String>,
) -> Result<Response<Body>, ApiError> {
    run_object(app, thread, turn).await?;
    let names: Vec<&str> = query_all(query, "stream_mode")
        .into_iter()
        .filter(|m| !m.is_empty())
        .collect();
    let modes = if names.is_empty() {
        let known = super::remembered(app, thread, turn).await.modes;
        known.or_values()
    } else {
        Modes::parse(names).map_err(|e| ApiError::bad(e, Some("stream_mode")))?
    };
    let after = match last_event_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(id) => Some(id.parse::<u64>().map_err(|_| {
            ApiError::bad(
                format!("Last-Event-ID {id:?} is not an event id of this server"),
                Some("Last-Event-ID"),
            )
        })?),
    };
    let cancel = query_all(query, "cancel_on_disconnect")
        .first()
        .is_some_and(|v| matches!(*v, "true" | "1"));
    let mut response = stream_run(app, thread, turn, modes, after, None, cancel);
    locate(&mut response, thread, turn, true);
    Ok(response)
}

/// The thread's values (for `wait`, a failed run's error as `__error__`, as LangGraph's
/// server answers).
async fn outcome(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    errors: bool,
) -> Result<Response<Body>, ApiError> {
    let (fold, _) = read(app, thread).await?;
    if errors {
        if let Some(error) = fold.run(turn).and_then(|r| {
            let response = r.projector.response();
            (!response["error"].is_null()).then(|| response["error"].clone())
        }) {
            return Ok(json_response(&json!({
                "__error__": { "error": error["code"], "message": error["message"] },
            })));
        }
    }
    Ok(json_response(&fold.values()))
}

/// Resolves once the run has ended (or nothing here runs it).
pub(super) async fn await_final(app: &App, thread: ThreadId, turn: TurnId) {
    if let Some((_, _, mut state)) = queue::waiting(app, turn).await {
        let started = state
            .wait_for(|s| *s != Waiting::Queued)
            .await
            .is_ok_and(|s| *s == Waiting::Started);
        if !started {
            return;
        }
    }
    let Some(loaded) = app.runs.loaded(thread).await else {
        return;
    };
    let mut live = loaded.handle.subscribe();
    if !app.runs.is_running(ResponseId { thread, turn }).await {
        return;
    }
    live.wait_for(|e| e.turn_id == Some(turn) && ends_turn(e))
        .await;
}

/// The run's object: queued here, or folded from the rollout.
async fn run_object(app: &App, thread: ThreadId, turn: TurnId) -> Result<Value, ApiError> {
    if let Some((of, created_ms, state)) = queue::waiting(app, turn).await {
        let waiting = state.borrow().clone();
        if of == thread && waiting != Waiting::Started {
            return Ok(queued_object(app, thread, turn, created_ms, &waiting).await);
        }
    }
    let (fold, _) = read(app, thread).await?;
    let run = fold
        .run(turn)
        .ok_or_else(|| ApiError::NotFound(format!("no run {turn} on thread {thread}")))?;
    Ok(stored_object(app, thread, run).await)
}

async fn stored_object(app: &App, thread: ThreadId, run: &super::fold::RunFold) -> Value {
    let running = app
        .runs
        .is_running(ResponseId {
            thread,
            turn: run.turn,
        })
        .await;
    let status = run_status(run.projector.status(), running);
    object(
        app,
        thread,
        run.turn,
        run.created_ms,
        run.updated_ms,
        status,
    )
    .await
}

async fn queued_object(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    created_ms: u64,
    waiting: &Waiting,
) -> Value {
    let status = match waiting {
        Waiting::Queued | Waiting::Started => "pending",
        Waiting::Cancelled => "interrupted",
        Waiting::Failed(_) => "error",
    };
    object(app, thread, turn, created_ms, created_ms, status).await
}

async fn object(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    created_ms: u64,
    updated_ms: u64,
    status: &str,
) -> Value {
    let strategy = queue::strategy_of(app, thread, turn).await;
    json!({
        "run_id": turn.to_string(), "thread_id": thread.to_string(),
        "assistant_id": ASSISTANT_ID, "created_at": rfc3339_ms(created_ms),
        "updated_at": rfc3339_ms(updated_ms), "status": status, "metadata": {},
        "multitask_strategy": strategy.name(), "kwargs": {},
    })
}

/// The run's events as server-sent events, fed by a task: a queued run's once it starts;
/// the stored ones (unless `live` is the subscription it started with, which has them
/// all), then the live ones while it runs here.
fn stream_run(
    app: &Arc<App>,
    thread: ThreadId,
    turn: TurnId,
    modes: Modes,
    after: Option<u64>,
    live: Option<EventStream>,
    cancel_on_disconnect: bool,
) -> Response<Body> {
    let (response, sink) = stream::channel();
    let app = Arc::clone(app);
    tokio::spawn(async move {
        let gone = !feed(&app, thread, turn, modes, after, live, &sink).await;
        if gone && cancel_on_disconnect {
            if let Err(e) = app.runs.cancel(ResponseId { thread, turn }).await {
                tracing::debug!("cancelling {turn} on disconnect: {e}");
            }
        }
    });
    response
}

/// For a queued run: waits until it starts, and the error event to send instead when it
/// never does (cancelled or failed first).
async fn never_started(app: &App, turn: TurnId) -> Option<ApEvent> {
    let (_, _, mut state) = queue::waiting(app, turn).await?;
    let _ = state.wait_for(|s| *s != Waiting::Queued).await;
    let waiting = state.borrow().clone();
    let message = match waiting {
        Waiting::Started => return None,
        Waiting::Failed(why) => why,
        _ => "the run was cancelled before it started".to_owned(),
    };
    Some(ApEvent {
        id: 0,
        event: "error",
        data: json!({ "error": "cancelled", "message": message }),
    })
}

/// Feed the run's events to `sink`; `false` once the client has gone.
async fn feed(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    modes: Modes,
    after: Option<u64>,
    live: Option<EventStream>,
    sink: &Sink,
) -> bool {
    if let Some(error) = never_started(app, turn).await {
        return send(sink, &[error]).await;
    }
    let fresh = live.is_some();
    // Subscribed before the rollout is read: every event is in one or the other.
    let live = match live {
        Some(live) => Some(live),
        None => app.runs.loaded(thread).await.map(|l| l.handle.subscribe()),
    };
    let Ok((fold, stored)) = read(app, thread).await else {
        return true;
    };
    let previous = fold
        .runs
        .iter()
        .take_while(|r| r.turn != turn)
        .last()
        .map(|r| ResponseId {
            thread,
            turn: r.turn,
        });
    let before = fold.messages_before(Some(turn));
    let mut run = RunStream::new(ResponseId { thread, turn }, previous, before, modes, after);
    if !fresh {
        let mut out = Vec::new();
        for event in stored.events.iter().filter(|e| e.turn_id == Some(turn)) {
            out.extend(run.step(event));
        }
        if !send(sink, &out).await {
            return false;
        }
    }
    if run.status().is_final() {
        return true;
    }
    if let Some(mut live) = live {
        let running = fresh || app.runs.is_running(ResponseId { thread, turn }).await;
        if !running && !catch_up(app, thread, turn, &mut run, sink).await {
            return false;
        }
        if run.status().is_final() {
            return true;
        }
        loop {
            // Not running here: only what arrived since the subscription (its end, if
            // it ended since) is still to come.
            let next = if running {
                tokio::select! {
                    next = live.recv() => next,
                    () = sink.closed() => return false,
                }
            } else {
                live.try_recv()
            };
            let Some(event) = next else { break };
            if !send(sink, &run.step(&event)).await {
                return false;
            }
            if run.status().is_final() {
                return true;
            }
        }
    }
    send(sink, &run.interrupted()).await
}

/// The run ended since the rollout was read, and its last events may not have reached
/// this subscription yet; they are in the rollout (a turn's end is published only once it
/// is durable), so they are read from there. `false` once the client has gone.
async fn catch_up(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    run: &mut RunStream,
    sink: &Sink,
) -> bool {
    let Ok((_, stored)) = read(app, thread).await else {
        return true;
    };
    let mut out = Vec::new();
    // Events already sent are skipped by the fold (it keeps the last seq it took).
    for event in stored.events.iter().filter(|e| e.turn_id == Some(turn)) {
        out.extend(run.step(event));
    }
    send(sink, &out).await
}

async fn send(sink: &Sink, events: &[ApEvent]) -> bool {
    for event in events {
        let text = format!(
            "id: {}\nevent: {}\ndata: {}\n\n",
            event.id, event.event, event.data
        );
        if !sink.send_text(text).await {
            return false;
        }
    }
    true
}
