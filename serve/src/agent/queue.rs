//! A run on a thread that is running one: `multitask_strategy` mapped onto rein's routing.
//! `reject` is rein's `StartIfIdle` (409); `interrupt` interrupts the running turn (it
//! stays, `interrupted`) and starts; `rollback` also drops the interrupted turn from the
//! thread (`Op::Rollback`, which the rollout records, so the run is gone after a restart
//! too) before starting; `enqueue` waits, `pending`, in the thread's lane until the turns
//! before it have ended.
//!
//! A queued run lives in this process until it starts: its id is chosen at once (the turn
//! it becomes takes it), but a server that stops before it starts loses it (it was never
//! in a rollout), and says so to nobody: the client sees a run id that is not found.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rein_core::EventStream;
use rein_protocol::{InputPart, Op, OpResult, ThreadId, TurnId};
use tokio::sync::{watch, Mutex};

use super::body::Multitask;
use crate::error::ApiError;
use crate::ids::ResponseId;
use crate::runs::ends_turn;
use crate::server::App;

/// Where a queued run is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waiting {
    Queued,
    /// Its turn has started: from now on the rollout has it.
    Started,
    Cancelled,
    Failed(String),
}

/// A queued run, until its turn starts (then it is forgotten: the rollout has it).
pub struct Pending {
    pub thread: ThreadId,
    pub created_ms: u64,
    pub state: watch::Sender<Waiting>,
}

/// Start run `turn` on `thread` under `strategy`; the subscription of the started turn, or
/// `None` when it is queued.
pub async fn start(
    app: &Arc<App>,
    thread: ThreadId,
    turn: TurnId,
    parts: Vec<InputPart>,
    strategy: Multitask,
) -> Result<Option<EventStream>, ApiError> {
    // Runs queued before it go first.
    if strategy == Multitask::Enqueue && queued_on(app, thread).await > 0 {
        enqueue(app, thread, turn, parts).await;
        return Ok(None);
    }
    let refusal = match app.runs.start_on(thread, turn, parts.clone()).await {
        Ok(started) => return Ok(Some(started.events)),
        Err(ApiError::Conflict(message)) => message,
        Err(e) => return Err(e),
    };
    let Some(active) = active_turn(app, thread).await else {
        return Err(ApiError::Conflict(refusal));
    };
    match strategy {
        Multitask::Reject => Err(ApiError::Conflict(format!(
            "thread {thread} is running run {active} (multitask_strategy reject): wait for it, \
             cancel it, or ask for interrupt, rollback or enqueue"
        ))),
        Multitask::Interrupt | Multitask::Rollback => {
            app.runs
                .cancel(ResponseId {
                    thread,
                    turn: active,
                })
                .await?;
            if strategy == Multitask::Rollback {
                rollback(app, thread).await?;
            }
            let started = app.runs.start_on(thread, turn, parts).await?;
            Ok(Some(started.events))
        }
        Multitask::Enqueue => {
            enqueue(app, thread, turn, parts).await;
            Ok(None)
        }
    }
}

/// The strategy `turn` was started under, as far as this process knows.
pub async fn strategy_of(app: &App, turn: TurnId) -> Multitask {
    app.agent
        .remembered(turn)
        .await
        .map(|r| r.strategy)
        .unwrap_or_default()
}

/// Drop the thread's last turn from its history (the protocol deletes a rolled-back run).
pub async fn rollback(app: &App, thread: ThreadId) -> Result<(), ApiError> {
    let loaded = app.runs.thread(thread).await?;
    match loaded.handle.submit(Op::Rollback { turns: 1 }).await {
        Ok(OpResult::Accepted) => Ok(()),
        Ok(OpResult::Refused { message }) => Err(ApiError::Conflict(message)),
        Ok(other) => Err(ApiError::Internal(format!("unexpected answer {other:?}"))),
        Err(e) => Err(ApiError::Internal(e.to_string())),
    }
}

async fn active_turn(app: &App, thread: ThreadId) -> Option<TurnId> {
    let loaded = app.runs.loaded(thread).await?;
    let state = loaded.handle.state().await.ok()?;
    state.active_turn.map(|t| t.id)
}

async fn queued_on(app: &App, thread: ThreadId) -> usize {
    let pending = app.agent.pending.lock().await;
    pending
        .values()
        .filter(|p| p.thread == thread && *p.state.borrow() == Waiting::Queued)
        .count()
}

/// The state of a queued run, if `turn` is one this process queued.
pub async fn waiting(app: &App, turn: TurnId) -> Option<(ThreadId, u64, watch::Receiver<Waiting>)> {
    let pending = app.agent.pending.lock().await;
    pending
        .get(&turn)
        .map(|p| (p.thread, p.created_ms, p.state.subscribe()))
}

/// Cancel a queued run; `false` if it is not waiting (any more).
pub async fn cancel_queued(app: &App, turn: TurnId) -> bool {
    let pending = app.agent.pending.lock().await;
    let Some(p) = pending.get(&turn) else {
        return false;
    };
    p.state.send_if_modified(|state| {
        let queued = *state == Waiting::Queued;
        if queued {
            *state = Waiting::Cancelled;
        }
        queued
    })
}

/// The runs this process queued on `thread` (cancelled and failed ones included).
pub async fn queued_runs(app: &App, thread: ThreadId) -> Vec<(TurnId, u64, Waiting)> {
    let pending = app.agent.pending.lock().await;
    pending
        .iter()
        .filter(|(_, p)| p.thread == thread)
        .map(|(turn, p)| (*turn, p.created_ms, p.state.borrow().clone()))
        .collect()
}

async fn enqueue(app: &Arc<App>, thread: ThreadId, turn: TurnId, parts: Vec<InputPart>) {
    let (state, _) = watch::channel(Waiting::Queued);
    let created_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    {
        let mut pending = app.agent.pending.lock().await;
        // Those that never started are kept to be read (cancelled, failed), within bounds.
        if pending.len() >= super::REMEMBERED {
            pending.retain(|_, p| *p.state.borrow() == Waiting::Queued);
        }
        pending.insert(
            turn,
            Pending {
                thread,
                created_ms,
                state: state.clone(),
            },
        );
    }
    let lane = {
        let mut lanes = app.agent.lanes.lock().await;
        Arc::clone(
            lanes
                .entry(thread)
                .or_insert_with(|| Arc::new(Mutex::new(()))),
        )
    };
    let app = Arc::clone(app);
    tokio::spawn(async move {
        // tokio's Mutex is fair: the thread's queued runs start in the order they came.
        let _lane = lane.lock().await;
        let outcome = wait_and_start(&app, thread, turn, parts, &state).await;
        let started = outcome == Waiting::Started;
        state.send_replace(outcome);
        if started {
            app.agent.pending.lock().await.remove(&turn);
        }
    });
}

/// Wait until `thread` is idle (or the run is cancelled), then start the run.
async fn wait_and_start(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    parts: Vec<InputPart>,
    state: &watch::Sender<Waiting>,
) -> Waiting {
    let mut cancelled = state.subscribe();
    loop {
        if *cancelled.borrow_and_update() == Waiting::Cancelled {
            return Waiting::Cancelled;
        }
        let loaded = match app.runs.thread(thread).await {
            Ok(loaded) => loaded,
            Err(e) => return Waiting::Failed(e.to_string()),
        };
        let mut events = loaded.handle.subscribe();
        let active = loaded
            .handle
            .state()
            .await
            .ok()
            .and_then(|s| s.active_turn.map(|t| t.id));
        if let Some(active) = active {
            let ended = events.wait_for(|e| e.turn_id == Some(active) && ends_turn(e));
            tokio::select! {
                _ = ended => {}
                _ = cancelled.changed() => {}
            }
            continue;
        }
        match app.runs.start_on(thread, turn, parts.clone()).await {
            Ok(_) => return Waiting::Started,
            // Another start won the idle thread: wait for that one.
            Err(ApiError::Conflict(message)) => {
                if active_turn(app, thread).await.is_none() {
                    return Waiting::Failed(message);
                }
            }
            // Over --max-runs: the run keeps its place until a slot frees.
            Err(ApiError::TooManyRuns(_)) => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(e) => return Waiting::Failed(e.to_string()),
        }
    }
}
