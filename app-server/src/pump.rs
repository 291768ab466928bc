//! One task per loaded thread: it forwards the thread's events to the client (through the
//! [`EventMapper`]) and carries out the requests that must be ordered with those events —
//! `turn/start`, `turn/steer`, `turn/interrupt`, approval answers. Because a single task
//! writes both the answer and the notifications, the client always sees the answer to
//! `turn/start` before `turn/started`, as with Codex.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_core::{EventStream, ThreadError};
use rein_protocol::app_server::{
    EmptyResponse, RequestId, ReviewDecision, ServerNotification,
    ServerRequestResolvedNotification, ThreadResponse, ThreadUnsubscribeResponse,
    ThreadUnsubscribeStatus, Turn, TurnItemsView, TurnStartResponse, TurnStatus, TurnSteerResponse,
};
use rein_protocol::{
    ApprovalDecision, Event, EventMsg, InputMode, InputOutcome, InputPart, Op, OpResult,
    RejectReason, SettingsChange, SubmissionId, TurnId,
};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::RpcError;
use crate::event_map::{EventMapper, Outgoing};
use crate::loaded::{LoadedThread, LoadedThreads};
use crate::outbound::{now_secs, Outbound};
use crate::turns::turns_from_state;

/// Requests a pump carries out, each answering `id` itself.
pub enum PumpCmd {
    StartTurn {
        id: RequestId,
        items: Vec<InputPart>,
        settings: SettingsChange,
    },
    Steer {
        id: RequestId,
        items: Vec<InputPart>,
        expected: TurnId,
    },
    Interrupt {
        id: RequestId,
        turn_id: TurnId,
    },
    /// The client answered the server → client request `request_id`.
    Answer {
        request_id: RequestId,
        outcome: Result<Value, Value>,
    },
    /// Stop sending this thread's notifications and shut it down.
    Unsubscribe {
        id: RequestId,
    },
    /// Summarise the history now (`thread/compact/start`).
    Compact {
        id: RequestId,
    },
    /// Drop the last `turns` turns from the model-visible history (`thread/rollback`).
    Rollback {
        id: RequestId,
        turns: u32,
    },
}

/// Server → client requests waiting for an answer: request id → the pump that asked.
#[derive(Default)]
pub struct PendingRequests {
    inner: Mutex<HashMap<RequestId, mpsc::Sender<PumpCmd>>>,
}

impl PendingRequests {
    fn lock(&self) -> MutexGuard<'_, HashMap<RequestId, mpsc::Sender<PumpCmd>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn take(&self, id: &RequestId) -> Option<mpsc::Sender<PumpCmd>> {
        self.lock().remove(id)
    }
}

pub struct Pump {
    pub thread: LoadedThread,
    pub events: EventStream,
    pub cmds: mpsc::Receiver<PumpCmd>,
    pub mapper: EventMapper,
    pub out: Outbound,
    pub pending: Arc<PendingRequests>,
    pub threads: Arc<LoadedThreads>,
}

impl Pump {
    pub async fn run(mut self) {
        // approval id ↔ request id of the questions this thread has open.
        let mut asked: HashMap<String, RequestId> = HashMap::new();
        let mut muted = false;
        loop {
            tokio::select! {
                biased;
                Some(cmd) = self.cmds.recv() => {
                    if let PumpCmd::Unsubscribe { .. } = cmd {
                        muted = true;
                    }
                    self.on_cmd(cmd, &mut asked).await;
                }
                event = self.events.recv() => {
                    let Some(event) = event else { break };
                    let turn_ended = matches!(
                        event.msg,
                        EventMsg::TurnCompleted { .. }
                            | EventMsg::TurnAborted { .. }
                            | EventMsg::TurnFailed { .. }
                    );
                    if self.on_event(&event, &mut asked, muted).await {
                        break;
                    }
                    if muted && turn_ended {
                        self.unload_when_idle().await;
                    }
                }
            }
        }
        let id = self.thread.handle.id();
        self.threads.remove(id);
        let mut pending = self.pending.lock();
        for request_id in asked.values() {
            pending.remove(request_id);
        }
    }

    /// Returns true once the thread has closed.
    async fn on_event(
        &mut self,
        event: &Event,
        asked: &mut HashMap<String, RequestId>,
        muted: bool,
    ) -> bool {
        if let EventMsg::SettingsChanged { settings } = &event.msg {
            self.thread.meta().settings = settings.clone();
        }
        let outgoing = self.mapper.map(event);
        {
            let mut meta = self.thread.meta();
            meta.status = self.mapper.status().clone();
            meta.updated_at = now_secs();
            if meta.preview.is_empty() {
                if let Some(p) = self.mapper.preview() {
                    meta.preview = p.to_owned();
                }
            }
        }
        let mut closed = false;
        for o in outgoing {
            match o {
                Outgoing::Notify(n) if !muted => self.out.notify(n).await,
                Outgoing::Notify(_) => {}
                Outgoing::Ask {
                    approval_id,
                    method,
                    params,
                } => {
                    let request_id = self.out.next_request_id();
                    self.pending
                        .lock()
                        .insert(request_id.clone(), self.thread.pump.clone());
                    asked.insert(approval_id, request_id.clone());
                    self.out.request(&request_id, method, params).await;
                }
                Outgoing::Withdrawn { approval_id } => {
                    if let Some(request_id) = asked.remove(&approval_id) {
                        self.pending.take(&request_id);
                        self.resolved(request_id).await;
                    }
                }
                Outgoing::Closed => closed = true,
            }
        }
        closed
    }

    async fn on_cmd(&mut self, cmd: PumpCmd, asked: &mut HashMap<String, RequestId>) {
        match cmd {
            PumpCmd::StartTurn {
                id,
                items,
                settings,
            } => {
                let op = Op::UserInput {
                    items,
                    mode: InputMode::StartIfIdle,
                    settings,
                };
                let submission = SubmissionId::new();
                let result = match self.submit(submission, op).await {
                    Ok(OpResult::Input(InputOutcome::Started { turn_id })) => {
                        to_value(&TurnStartResponse {
                            turn: pending_turn(turn_id),
                        })
                    }
                    // Behind a compaction: it starts, under the submission's id, right after.
                    Ok(OpResult::Input(InputOutcome::Queued { .. })) => {
                        to_value(&TurnStartResponse {
                            turn: pending_turn(TurnId::from(submission)),
                        })
                    }
                    other => Err(refusal(other)),
                };
                self.out.respond(id, result).await;
            }
            PumpCmd::Steer {
                id,
                items,
                expected,
            } => {
                let op = Op::UserInput {
                    items,
                    mode: InputMode::Steer(expected),
                    settings: SettingsChange::default(),
                };
                let submission = SubmissionId::new();
                let result = match self.submit(submission, op).await {
                    Ok(OpResult::Input(InputOutcome::Steered { turn_id })) => {
                        to_value(&TurnSteerResponse {
                            turn_id: turn_id.to_string(),
                        })
                    }
                    // The running turn takes no steers; the input starts the next one.
                    Ok(OpResult::Input(InputOutcome::Queued { .. })) => {
                        to_value(&TurnSteerResponse {
                            turn_id: TurnId::from(submission).to_string(),
                        })
                    }
                    other => Err(refusal(other)),
                };
                self.out.respond(id, result).await;
            }
            PumpCmd::Interrupt { id, turn_id } => {
                // Interrupt only the turn the client named; an ended or unknown turn is
                // answered at once with nothing to do.
                let active = self
                    .thread
                    .handle
                    .state()
                    .await
                    .ok()
                    .and_then(|s| s.active_turn.map(|t| t.id));
                if active == Some(turn_id) {
                    if let Err(e) = self.thread.handle.submit(Op::Interrupt).await {
                        tracing::debug!("interrupt: {e}");
                    }
                }
                self.out.respond_with(id, &EmptyResponse {}).await;
            }
            PumpCmd::Answer {
                request_id,
                outcome,
            } => {
                let Some(approval_id) = asked
                    .iter()
                    .find(|(_, r)| **r == request_id)
                    .map(|(a, _)| a.clone())
                else {
                    return;
                };
                asked.remove(&approval_id);
                let decision = decision_of(&outcome);
                let op = Op::ApprovalAnswer {
                    approval_id,
                    decision,
                };
                if let Err(e) = self.thread.handle.submit(op).await {
                    tracing::debug!("approval answer: {e}");
                }
                self.resolved(request_id).await;
            }
            PumpCmd::Compact { id } => {
                let result = match self.submit(SubmissionId::new(), Op::Compact).await {
                    Ok(OpResult::Accepted) => to_value(&EmptyResponse {}),
                    other => Err(refusal(other)),
                };
                self.out.respond(id, result).await;
            }
            PumpCmd::Rollback { id, turns } => {
                let result = match self
                    .submit(SubmissionId::new(), Op::Rollback { turns })
                    .await
                {
                    Ok(OpResult::Accepted) => match self.thread.handle.state().await {
                        Ok(folded) => {
                            let mut thread = self.thread.meta().to_wire();
                            thread.turns = turns_from_state(&folded);
                            to_value(&ThreadResponse { thread })
                        }
                        Err(e) => Err(RpcError::invalid_request(e.to_string())),
                    },
                    other => Err(refusal(other)),
                };
                self.out.respond(id, result).await;
            }
            PumpCmd::Unsubscribe { id } => {
                self.out
                    .respond_with(
                        id,
                        &ThreadUnsubscribeResponse {
                            status: ThreadUnsubscribeStatus::Unsubscribed,
                        },
                    )
                    .await;
                self.unload_when_idle().await;
            }
        }
    }

    /// Nobody listens to this thread any more: shut it down, but never under a running
    /// turn (it finishes, and is written to its rollout, first).
    async fn unload_when_idle(&self) {
        let idle = self
            .thread
            .handle
            .state()
            .await
            .map_or(true, |s| s.active_turn.is_none());
        if idle {
            let handle = self.thread.handle.clone();
            tokio::spawn(async move {
                let _ = handle.shutdown().await;
            });
        }
    }

    async fn submit(&self, id: SubmissionId, op: Op) -> Result<OpResult, ThreadError> {
        self.thread.handle.submit_with_id(id, op).await
    }

    async fn resolved(&self, request_id: RequestId) {
        self.out
            .notify(ServerNotification::ServerRequestResolved(
                ServerRequestResolvedNotification {
                    thread_id: self.thread.handle.id().to_string(),
                    request_id,
                },
            ))
            .await;
    }
}

/// The turn as `turn/start` answers it: running, nothing loaded yet.
fn pending_turn(turn_id: TurnId) -> Turn {
    Turn {
        id: turn_id.to_string(),
        root_turn_id: Some(turn_id.to_string()),
        items: Vec::new(),
        items_view: TurnItemsView::NotLoaded,
        status: TurnStatus::InProgress,
        error: None,
        started_at: None,
        completed_at: None,
        duration_ms: None,
    }
}

fn decision_of(outcome: &Result<Value, Value>) -> ApprovalDecision {
    let decision = match outcome {
        Ok(result) => result.get("decision").and_then(ReviewDecision::from_value),
        Err(_) => None,
    };
    match decision {
        Some(ReviewDecision::Accept) => ApprovalDecision::Approve,
        Some(ReviewDecision::AcceptForSession) => ApprovalDecision::ApproveForSession,
        Some(ReviewDecision::Cancel) => ApprovalDecision::Abort,
        // An error or an answer rein cannot read is a refusal: never run unapproved.
        Some(ReviewDecision::Decline) | None => ApprovalDecision::Deny,
    }
}

fn refusal(result: Result<OpResult, ThreadError>) -> RpcError {
    match result {
        Ok(OpResult::Input(InputOutcome::Rejected { reason })) => match reason {
            RejectReason::EmptyInput => {
                RpcError::invalid_params("input: must not be empty", Some("input".into()))
            }
            RejectReason::InvalidSettings { message } => RpcError::invalid_params(message, None),
            other => RpcError::invalid_request(other.to_string()),
        },
        Ok(OpResult::Refused { message }) => RpcError::invalid_request(message),
        Ok(other) => RpcError::internal(format!("unexpected answer from the thread: {other:?}")),
        Err(e) => RpcError::invalid_request(e.to_string()),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(RpcError::internal)
}
