//! A run on a thread that is running one: `multitask_strategy` mapped onto rein's routing.
//! `reject` is rein's `StartIfIdle` (409); `interrupt` interrupts the running turn (it
//! stays, `interrupted`) and starts; `rollback` also drops the interrupted turn from the
//! thread (`Op::Rollback`, which the rollout records, so the run is gone after a restart
//! too) before starting; `enqueue` waits, `pending`, in the thread's lane until the turns
//! before it have ended.
//!
//! A queued run is recorded (`crate::records`, `$REIN_HOME/serve/queue/`) before the
//! client is answered, and its record removed once its turn has started (the rollout has
//! it from then on). A server that restarts finds the records ([`recover`]): each run that
//! had not started is listed `pending` again and run in its order; one that was cancelled
//! or failed before starting is listed so; one whose turn the rollout already holds (the
//! crash came between its start and the record's removal) is the rollout's.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rein_core::store::RolloutError;
use rein_core::EventStream;
use rein_protocol::{EventMsg, InputPart, Op, OpResult, ThreadId, TurnId};
use tokio::sync::{watch, Mutex};

use super::body::Multitask;
use super::fold::Modes;
use crate::error::ApiError;
use crate::ids::ResponseId;
use crate::records::{QueuedEnd, QueuedRecord};
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
    /// As recorded, to record its end.
    pub record: QueuedRecord,
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
        enqueue(app, thread, turn, parts).await?;
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
            enqueue(app, thread, turn, parts).await?;
            Ok(None)
        }
    }
}

/// The strategy run `turn` of `thread` was started under.
pub async fn strategy_of(app: &App, thread: ThreadId, turn: TurnId) -> Multitask {
    super::remembered(app, thread, turn).await.strategy
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
pub async fn cancel_queued(app: &App, turn: TurnId) -> Result<bool, ApiError> {
    let (cancelled, record) = {
        let pending = app.agent.pending.lock().await;
        let Some(p) = pending.get(&turn) else {
            return Ok(false);
        };
        let cancelled = p.state.send_if_modified(|state| {
            let queued = *state == Waiting::Queued;
            if queued {
                *state = Waiting::Cancelled;
            }
            queued
        });
        (cancelled, p.record.clone())
    };
    if cancelled {
        // Recorded before the answer: a restart must not run what the client cancelled.
        let ended = QueuedRecord {
            ended: Some(QueuedEnd::Cancelled),
            ..record
        };
        app.runs.records().put_queued(&ended).await?;
    }
    Ok(cancelled)
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

/// Queue run `turn`: recorded first (an error leaves nothing queued), then waiting in
/// the thread's lane.
async fn enqueue(
    app: &Arc<App>,
    thread: ThreadId,
    turn: TurnId,
    parts: Vec<InputPart>,
) -> Result<(), ApiError> {
    let created_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let modes = super::remembered(app, thread, turn).await.modes;
    let record = QueuedRecord {
        thread,
        turn,
        created_ms,
        input: parts,
        stream_mode: modes.names(),
        ended: None,
    };
    app.runs.records().put_queued(&record).await?;
    let state = hold(app, &record, Waiting::Queued).await;
    let lane = lane(app, thread).await;
    let app = Arc::clone(app);
    tokio::spawn(async move {
        // tokio's Mutex is fair: the thread's queued runs start in the order they came.
        let _lane = lane.lock().await;
        run_queued(&app, record, state).await;
    });
    Ok(())
}

/// Keep `record` among the pending runs, as `waiting`; its state.
async fn hold(app: &App, record: &QueuedRecord, waiting: Waiting) -> watch::Sender<Waiting> {
    let (state, _) = watch::channel(waiting);
    let mut pending = app.agent.pending.lock().await;
    // Those that never started are kept to be read (cancelled, failed), within bounds.
    if pending.len() >= super::REMEMBERED {
        pending.retain(|_, p| *p.state.borrow() == Waiting::Queued);
    }
    pending.insert(
        record.turn,
        Pending {
            thread: record.thread,
            created_ms: record.created_ms,
            state: state.clone(),
            record: record.clone(),
        },
    );
    state
}

async fn lane(app: &App, thread: ThreadId) -> Arc<Mutex<()>> {
    let mut lanes = app.agent.lanes.lock().await;
    Arc::clone(
        lanes
            .entry(thread)
            .or_insert_with(|| Arc::new(Mutex::new(()))),
    )
}

/// Wait for the thread, start the run, and record how it went: a started run's record is
/// removed (the rollout has it), a failed one's says why.
async fn run_queued(app: &App, record: QueuedRecord, state: watch::Sender<Waiting>) {
    let (thread, turn) = (record.thread, record.turn);
    let outcome = wait_and_start(app, thread, turn, record.input.clone(), &state).await;
    state.send_replace(outcome.clone());
    let records = app.runs.records();
    let written = match outcome {
        Waiting::Started => {
            app.agent.pending.lock().await.remove(&turn);
            records.remove_queued(turn).await
        }
        Waiting::Failed(message) => {
            let ended = Some(QueuedEnd::Failed { message });
            records.put_queued(&QueuedRecord { ended, ..record }).await
        }
        // Recorded by the cancel, before it answered.
        Waiting::Cancelled | Waiting::Queued => Ok(()),
    };
    if let Err(e) = written {
        tracing::warn!("recording queued run {turn}: {e}");
    }
}

/// A queued run found after a restart, and its state.
type Recovered = (QueuedRecord, watch::Sender<Waiting>);

/// After a restart: the queued runs recorded, listed again, and those that had not started
/// run in their order. Called before the server takes connections, so each thread's lane
/// is taken by its recovered runs before any new run can queue behind them.
pub async fn recover(app: &Arc<App>) {
    let found = match app.runs.records().queued().await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!("reading the queued runs: {e}");
            return;
        }
    };
    let mut lanes: Vec<(ThreadId, Vec<Recovered>)> = Vec::new();
    for record in found {
        let Some(waiting) = recovered_state(app, &record).await else {
            continue;
        };
        let queued = waiting == Waiting::Queued;
        let strategy = Multitask::Enqueue;
        // Names it wrote itself; one it no longer knows leaves the default.
        let names = record.stream_mode.iter().map(String::as_str);
        let modes = Modes::parse(names).unwrap_or_default();
        app.agent
            .keep(record.turn, super::Remembered { strategy, modes })
            .await;
        let state = hold(app, &record, waiting).await;
        if !queued {
            continue;
        }
        match lanes.iter_mut().find(|(t, _)| *t == record.thread) {
            Some((_, runs)) => runs.push((record, state)),
            None => lanes.push((record.thread, vec![(record, state)])),
        }
    }
    for (thread, runs) in lanes {
        let held = lane(app, thread).await.lock_owned().await;
        let app = Arc::clone(app);
        tokio::spawn(async move {
            for (record, state) in runs {
                run_queued(&app, record, state).await;
            }
            drop(held);
        });
    }
}

/// What a recovered record is now; `None` when the rollout has its turn (it had started:
/// the record is removed) or its thread is gone.
async fn recovered_state(app: &App, record: &QueuedRecord) -> Option<Waiting> {
    match &record.ended {
        Some(QueuedEnd::Cancelled) => return Some(Waiting::Cancelled),
        Some(QueuedEnd::Failed { message }) => return Some(Waiting::Failed(message.clone())),
        None => {}
    }
    let started = match app.runs.kernel().store().read(record.thread).await {
        Ok(stored) => stored.events.iter().any(|e| {
            e.turn_id == Some(record.turn) && matches!(e.msg, EventMsg::TurnStarted { .. })
        }),
        Err(RolloutError::ThreadNotFound(_)) => {
            return Some(Waiting::Failed(format!(
                "thread {} is gone; the run never started",
                record.thread
            )))
        }
        Err(e) => {
            return Some(Waiting::Failed(format!(
                "reading thread {} after a restart: {e}",
                record.thread
            )))
        }
    };
    if !started {
        return Some(Waiting::Queued);
    }
    if let Err(e) = app.runs.records().remove_queued(record.turn).await {
        tracing::warn!("removing started run {}: {e}", record.turn);
    }
    None
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
