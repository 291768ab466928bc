//! One task per loaded thread: it forwards the thread's events to its subscribers (through
//! the [`EventMapper`]), puts approval questions to all of them (the first answer wins),
//! unloads the thread once nobody has subscribed for the idle-unload time, and carries out
//! the requests that must be ordered with those events — `turn/start`, `turn/steer`,
//! `turn/interrupt`, approval answers. Because a single task gives both the answer and
//! the notifications, and waits for the answer to be queued before going on (see
//! [`crate::deferred`]), the client always sees the answer to `turn/start` before
//! `turn/started`, as with Codex.

use std::sync::Arc;
use std::time::Duration;

use rein_app_server_protocol::{
    RequestId, ServerNotification, ServerRequestResolvedNotification, Turn, TurnItemsView,
    TurnStatus,
};
use rein_core::{EventStream, ThreadError};
use rein_protocol::{
    Event, EventMsg, InputOutcome, Op, OpResult, RejectReason, SubmissionId, TurnId,
};
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use crate::error::RpcError;
use crate::event_map::{EventMapper, Outgoing};
use crate::loaded::{LoadedThread, LoadedThreads};
use crate::outbound::now_secs;
use crate::subscribers::Subscriber;

mod commands;
mod graph;
mod questions;
mod requests;
use questions::Asked;
pub use requests::{PendingRequests, PumpCmd, PumpRequest};

pub struct Pump {
    pub thread: LoadedThread,
    pub events: EventStream,
    pub cmds: mpsc::Receiver<PumpRequest>,
    pub mapper: EventMapper,
    pub threads: Arc<LoadedThreads>,
    /// How long the thread stays loaded, idle, once nobody subscribes.
    pub idle_unload: Duration,
    /// A sub-agent's pump: it shares its root's subscribers, so it never unloads the
    /// thread on its own (the kernel ends the subtree with its root) nor forgets them.
    pub sub_agent: bool,
    /// Fired once the answer that made the thread is queued; the pump sends nothing before.
    pub gate: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Pump {
    pub async fn run(mut self) {
        if let Some(gate) = self.gate.take() {
            // Dropped unfired (the connection is gone) also lets it go on.
            let _ = gate.await;
            // A resumed thread's graph, for the client that resumed it.
            if !self.sub_agent {
                self.send_graph(&self.thread.subscribers.current()).await;
            }
        }
        let mut asked = Asked::new();
        let mut unload_at: Option<Instant> = None;
        loop {
            tokio::select! {
                biased;
                Some(request) = self.cmds.recv() => {
                    let orphaned = matches!(request.cmd, PumpCmd::Left { last: true });
                    self.on_cmd(request, &mut asked).await;
                    if orphaned {
                        unload_at = self.idle_deadline().await;
                    }
                }
                event = self.events.recv() => {
                    let Some(event) = event else { break };
                    let turn_ended = matches!(
                        event.msg,
                        EventMsg::TurnCompleted { .. }
                            | EventMsg::TurnAborted { .. }
                            | EventMsg::TurnFailed { .. }
                    );
                    if self.on_event(&event, &mut asked).await {
                        break;
                    }
                    if turn_ended && self.thread.subscribers.current().is_empty() {
                        unload_at = self.idle_deadline().await;
                    }
                }
                () = sleep_until(unload_at.unwrap_or_else(Instant::now)), if unload_at.is_some() => {
                    unload_at = None;
                    self.unload_if_orphaned().await;
                }
            }
        }
        self.thread.spawned.close();
        let id = self.thread.handle.id();
        self.threads.remove_served_by(id, &self.thread.pump);
        for (subscriber, request_id) in asked.values().flat_map(|q| &q.askees) {
            subscriber.pending.take(request_id);
        }
        if !self.sub_agent {
            self.thread.subscribers.clear();
        }
    }

    /// When to unload the thread if nobody subscribes by then; none while a turn runs
    /// (its end asks again).
    async fn idle_deadline(&self) -> Option<Instant> {
        if self.sub_agent {
            return None;
        }
        let idle = self.is_idle().await;
        idle.then(|| Instant::now() + self.idle_unload)
    }

    /// No turn runs (a thread that is gone counts as idle).
    async fn is_idle(&self) -> bool {
        self.thread
            .handle
            .state()
            .await
            .map_or(true, |s| s.active_turn.is_none())
    }

    /// The countdown ran out: shut the thread down, unless someone subscribed meanwhile or
    /// a turn started (it finishes, and is written to its rollout, first).
    async fn unload_if_orphaned(&self) {
        if !self.is_idle().await || !self.thread.subscribers.close_if_orphaned() {
            return;
        }
        self.threads
            .remove_served_by(self.thread.handle.id(), &self.thread.pump);
        let handle = self.thread.handle.clone();
        tokio::spawn(async move {
            let _ = handle.shutdown().await;
        });
    }

    /// Returns true once the thread has closed.
    async fn on_event(&mut self, event: &Event, asked: &mut Asked) -> bool {
        match &event.msg {
            EventMsg::SettingsChanged { settings } => {
                self.thread.meta().settings = settings.clone()
            }
            EventMsg::ThreadNamed { name } => self.thread.meta().name = Some(name.clone()),
            _ => {}
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
                Outgoing::Notify(n) => {
                    let to = if matches!(n, ServerNotification::ThreadClosed(_)) {
                        self.thread.subscribers.everyone()
                    } else {
                        self.thread.subscribers.current()
                    };
                    // A subscriber's join snapshot is of the root: a sub-agent's events are
                    // all news.
                    let news = |s: &&Subscriber| self.sub_agent || s.is_news(event.seq, &n);
                    for subscriber in to.iter().filter(news) {
                        subscriber.out.notify(n.clone()).await;
                    }
                }
                Outgoing::Ask {
                    approval_id,
                    request,
                } => self.ask(approval_id, *request, asked).await,
                Outgoing::Withdrawn { approval_id } => {
                    let askees = asked.remove(&approval_id).map(|q| q.askees);
                    for (subscriber, request_id) in askees.unwrap_or_default() {
                        subscriber.pending.take(&request_id);
                        self.resolved(&subscriber, request_id).await;
                    }
                }
                Outgoing::Closed => closed = true,
            }
        }
        match &event.msg {
            EventMsg::AgentSpawned { thread_id, .. } => self.thread.spawned.forwarded(*thread_id),
            EventMsg::TaskGraphChanged { .. } => {
                self.send_graph(&self.thread.subscribers.current()).await;
            }
            _ => {}
        }
        closed
    }

    /// One request, carried out between two events (see the module's header).
    async fn on_cmd(&mut self, request: PumpRequest, asked: &mut Asked) {
        let PumpRequest { from, cmd } = request;
        match cmd {
            PumpCmd::StartTurn {
                reply,
                items,
                settings,
                output_schema,
            } => self.start_turn(reply, items, settings, output_schema).await,
            PumpCmd::Steer {
                reply,
                items,
                expected,
            } => self.steer(reply, items, expected).await,
            PumpCmd::Interrupt { reply, turn_id } => self.interrupt(reply, turn_id).await,
            PumpCmd::Answer {
                request_id,
                outcome,
            } => self.answer(&from, request_id, outcome, asked).await,
            PumpCmd::Join {
                reply,
                response,
                exclude_turns,
            } => self.join(from, reply, response, exclude_turns, asked).await,
            PumpCmd::Reask => self.reask(&from, asked).await,
            PumpCmd::Left { .. } => self.left(&from, asked).await,
            PumpCmd::Compact { reply } => self.enqueue(reply, Op::Compact).await,
            PumpCmd::Shell {
                reply,
                command,
                timeout_ms,
            } => {
                let op = Op::UserShell {
                    command,
                    timeout_ms,
                };
                self.enqueue(reply, op).await;
            }
            PumpCmd::Review { reply, target } => self.review(reply, target).await,
            PumpCmd::Goal { reply, op } => self.goal(reply, op, asked).await,
            PumpCmd::SetName { reply, name } => self.set_name(reply, name).await,
            PumpCmd::SetMemoryMode { reply, mode } => self.set_memory_mode(reply, mode).await,
            PumpCmd::Rollback { reply, turns } => self.rollback(reply, turns).await,
        }
    }

    async fn submit(&self, id: SubmissionId, op: Op) -> Result<OpResult, ThreadError> {
        self.thread.handle.submit_with_id(id, op).await
    }

    async fn resolved(&self, to: &Subscriber, request_id: RequestId) {
        to.out
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
