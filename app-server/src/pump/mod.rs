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
    EmptyResponse, RequestId, ReviewStartResponse, ServerNotification,
    ServerRequestResolvedNotification, ThreadResponse, Turn, TurnItemsView, TurnStartResponse,
    TurnStatus, TurnSteerResponse,
};
use rein_core::{EventStream, ThreadError};
use rein_protocol::{
    Event, EventMsg, InputMode, InputOutcome, Op, OpResult, RejectReason, SettingsChange,
    SubmissionId, TurnId,
};
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use crate::error::RpcError;
use crate::event_map::{EventMapper, Outgoing};
use crate::loaded::{LoadedThread, LoadedThreads};
use crate::outbound::now_secs;
use crate::subscribers::Subscriber;
use crate::turns::turns_from_state;

mod graph;
mod questions;
mod requests;
use questions::{response_of, unanswered, Asked};
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

    /// Put the questions still open to `from` (just subscribed), unless it was asked.
    async fn reask(&self, from: &Subscriber, asked: &mut Asked) {
        for question in asked.values_mut() {
            if question
                .askees
                .iter()
                .any(|(s, _)| s.connection == from.connection)
            {
                continue;
            }
            let (out, request_id) = self.register_ask(question, from.clone());
            out.request(&request_id, &question.request).await;
        }
    }

    async fn on_cmd(&mut self, request: PumpRequest, asked: &mut Asked) {
        let PumpRequest { from, cmd } = request;
        match cmd {
            PumpCmd::StartTurn {
                reply,
                items,
                settings,
                output_schema,
            } => {
                let op = Op::UserInput {
                    items,
                    mode: InputMode::StartIfIdle,
                    settings,
                    output_schema,
                };
                let submission = SubmissionId::new();
                let result = match self.submit(submission, op).await {
                    Ok(OpResult::Input(InputOutcome::Started { turn_id })) => {
                        Ok(TurnStartResponse {
                            turn: pending_turn(turn_id),
                        })
                    }
                    // Behind a compaction: it starts, under the submission's id, right after.
                    Ok(OpResult::Input(InputOutcome::Queued { .. })) => Ok(TurnStartResponse {
                        turn: pending_turn(TurnId::from(submission)),
                    }),
                    other => Err(refusal(other)),
                };
                reply.answer(result).await;
            }
            PumpCmd::Steer {
                reply,
                items,
                expected,
            } => {
                let op = Op::UserInput {
                    items,
                    mode: InputMode::Steer(expected),
                    settings: SettingsChange::default(),
                    output_schema: None,
                };
                let submission = SubmissionId::new();
                let result = match self.submit(submission, op).await {
                    Ok(OpResult::Input(InputOutcome::Steered { turn_id })) => {
                        Ok(TurnSteerResponse {
                            turn_id: turn_id.to_string(),
                        })
                    }
                    // The running turn takes no steers; the input starts the next one.
                    Ok(OpResult::Input(InputOutcome::Queued { .. })) => Ok(TurnSteerResponse {
                        turn_id: TurnId::from(submission).to_string(),
                    }),
                    other => Err(refusal(other)),
                };
                reply.answer(result).await;
            }
            PumpCmd::Interrupt { reply, turn_id } => {
                // Interrupt only the turn the client named (the loop checks, so a turn that
                // started since is never hit); an ended or unknown turn is answered at once
                // with nothing to do.
                if let Err(e) = self
                    .thread
                    .handle
                    .submit(Op::InterruptTurn { turn_id })
                    .await
                {
                    tracing::debug!("interrupt: {e}");
                }
                reply.answer(Ok(EmptyResponse {})).await;
            }
            PumpCmd::Answer {
                request_id,
                outcome,
            } => {
                let question = asked.iter().find_map(|(approval, question)| {
                    question
                        .askees
                        .iter()
                        .any(|(s, r)| s.connection == from.connection && *r == request_id)
                        .then(|| approval.clone())
                });
                // Already answered by another subscriber, or withdrawn.
                let Some(approval_id) = question else { return };
                let Some(question) = asked.remove(&approval_id) else {
                    return;
                };
                self.respond(approval_id, response_of(&question.request, outcome))
                    .await;
                for (subscriber, request_id) in question.askees {
                    subscriber.pending.take(&request_id);
                    self.resolved(&subscriber, request_id).await;
                }
            }
            PumpCmd::Join {
                reply,
                mut response,
                exclude_turns,
            } => {
                let folded = match self.thread.handle.state().await {
                    Ok(folded) => folded,
                    Err(e) => {
                        reply
                            .answer(Err(RpcError::invalid_request(e.to_string())))
                            .await;
                        return;
                    }
                };
                let joining = Subscriber {
                    seen_through: folded.last_seq,
                    ..from.clone()
                };
                if !self.thread.subscribers.join(joining) {
                    let refusal = RpcError::invalid_request(format!(
                        "thread {} is being unloaded; resume it again once it has closed",
                        self.thread.handle.id()
                    ));
                    reply.answer(Err(refusal)).await;
                    return;
                }
                if !exclude_turns {
                    response.thread.turns = turns_from_state(&folded);
                }
                reply.answer(Ok(*response)).await;
                self.send_graph(std::slice::from_ref(&from)).await;
                self.reask(&from, asked).await;
                // The sub-agents' open questions are the root's subscribers' to answer too.
                if !self.sub_agent {
                    for child in self.threads.sub_agents_of(&self.thread) {
                        let request = PumpRequest {
                            from: from.clone(),
                            cmd: PumpCmd::Reask,
                        };
                        // Never wait on a busy child's pump: it may be waiting on this one.
                        if let Err(mpsc::error::TrySendError::Full(request)) =
                            child.pump.try_send(request)
                        {
                            tokio::spawn(async move { child.pump.send(request).await });
                        }
                    }
                }
            }
            PumpCmd::Reask => self.reask(&from, asked).await,
            PumpCmd::Left { .. } => {
                // Its questions are no longer its to answer; one nobody else was asked is
                // declined, so the turn does not wait forever.
                let mut unanswerable = Vec::new();
                for (approval_id, question) in asked.iter_mut() {
                    let askees = &mut question.askees;
                    let mut kept = Vec::with_capacity(askees.len());
                    for (subscriber, request_id) in askees.drain(..) {
                        if subscriber.connection == from.connection {
                            subscriber.pending.take(&request_id);
                            self.resolved(&subscriber, request_id).await;
                        } else {
                            kept.push((subscriber, request_id));
                        }
                    }
                    *askees = kept;
                    if askees.is_empty() {
                        unanswerable.push(approval_id.clone());
                    }
                }
                for approval_id in unanswerable {
                    if let Some(question) = asked.remove(&approval_id) {
                        self.respond(approval_id, unanswered(&question.request))
                            .await;
                    }
                }
            }
            // Compaction and review wait behind a running turn; the pump must not wait with
            // them (it forwards that turn's approvals), so they are queued, not awaited. The
            // turn they start takes the submission's id, which the answer can name at once.
            PumpCmd::Compact { reply } => {
                let result = match self
                    .thread
                    .handle
                    .enqueue_with_id(SubmissionId::new(), Op::Compact)
                    .await
                {
                    Ok(()) => Ok(EmptyResponse {}),
                    Err(e) => Err(RpcError::invalid_request(e.to_string())),
                };
                reply.answer(result).await;
            }
            PumpCmd::Shell {
                reply,
                command,
                timeout_ms,
            } => {
                let op = Op::UserShell {
                    command,
                    timeout_ms,
                };
                let result = match self
                    .thread
                    .handle
                    .enqueue_with_id(SubmissionId::new(), op)
                    .await
                {
                    Ok(()) => Ok(EmptyResponse {}),
                    Err(e) => Err(RpcError::invalid_request(e.to_string())),
                };
                reply.answer(result).await;
            }
            PumpCmd::Review { reply, target } => {
                let submission = SubmissionId::new();
                let result = match self
                    .thread
                    .handle
                    .enqueue_with_id(submission, Op::Review { target })
                    .await
                {
                    Ok(()) => Ok(ReviewStartResponse {
                        turn: pending_turn(TurnId::from(submission)),
                        review_thread_id: self.thread.handle.id().to_string(),
                    }),
                    Err(e) => Err(RpcError::invalid_request(e.to_string())),
                };
                reply.answer(result).await;
            }
            PumpCmd::Goal { reply, op } => {
                let result = self
                    .thread
                    .handle
                    .submit(op)
                    .await
                    .map_err(RpcError::internal);
                // The kernel queued the op's events before answering it: its goal event
                // goes out before the answer (`thread/goal/updated`, `…/cleared`, as Codex
                // orders them), what follows it (a goal turn starting) after the answer.
                let mut after = Vec::new();
                let mut goal_seen = false;
                while let Some(event) = self.events.try_recv() {
                    if goal_seen {
                        after.push(event);
                        continue;
                    }
                    goal_seen = matches!(
                        event.msg,
                        EventMsg::GoalUpdated { .. } | EventMsg::GoalCleared
                    );
                    self.on_event(&event, asked).await;
                }
                reply.answer(result).await;
                for event in after {
                    self.on_event(&event, asked).await;
                }
            }
            PumpCmd::SetName { reply, name } => {
                let result = match self.submit(SubmissionId::new(), Op::SetName { name }).await {
                    Ok(OpResult::Accepted) => Ok(EmptyResponse {}),
                    other => Err(refusal(other)),
                };
                reply.answer(result).await;
            }
            PumpCmd::Rollback { reply, turns } => {
                let result = match self
                    .submit(SubmissionId::new(), Op::Rollback { turns })
                    .await
                {
                    Ok(OpResult::Accepted) => match self.thread.handle.state().await {
                        Ok(folded) => {
                            let mut thread = self.thread.meta().to_wire();
                            thread.turns = turns_from_state(&folded);
                            Ok(ThreadResponse::new(thread))
                        }
                        Err(e) => Err(RpcError::invalid_request(e.to_string())),
                    },
                    other => Err(refusal(other)),
                };
                reply.answer(result).await;
            }
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
