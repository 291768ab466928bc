//! The submission loop: the only code that touches a thread's state. It takes Ops one at
//! a time from the bounded queue, routes input, spawns turns, and folds everything spawned
//! work reports back (through the task channel) into events. Heavy work never runs here,
//! so an interrupt or an approval answer is handled while a turn streams.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use rein_protocol::{
    ApprovalDecision, ClientRequest, ClientResponse, ErrorCode, EventMsg, InterruptOutcome, ItemId,
    Op, OpResult, SessionGrant, Submission, ThreadId, ToolOutcome, TurnAbortReason, TurnId,
};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

mod abort;
mod approvals;
mod extract;
mod goal;
mod goal_checks;
mod goal_limits;
mod input;
mod mail;
mod maintenance;
mod read_only;
mod record;
mod shutdown;
mod start;

use crate::manager::KernelServices;
use crate::thread::emitter::Emitter;
use crate::thread::handle::LoopMsg;
use crate::thread::open_items::OpenItems;
use crate::thread::state::ThreadState;
use crate::tools::ThreadTools;
use crate::turn::pending::PendingInput;
use crate::turn::sink::{RunId, TaskMsg, TaskMsgKind};
use crate::turn::TaskOutcome;

/// The turn the loop is running, as only the loop sees it.
struct RunningTurn {
    id: TurnId,
    run: RunId,
    cancel: CancellationToken,
    handle: AbortOnDropHandle<()>,
    /// When the wall-time budget runs out.
    deadline: Option<Instant>,
    open: OpenItems,
    /// The unified diffs of every patch this turn applied, in order.
    diff: String,
}

/// A client request a call waits on.
struct ParkedRequest {
    run: RunId,
    request: ClientRequest,
    /// What answering "approve for the session" grants.
    grant: Option<SessionGrant>,
    reply: oneshot::Sender<ClientResponse>,
}

pub(crate) struct SubmissionLoop {
    thread_id: ThreadId,
    state: ThreadState,
    emitter: Emitter,
    services: Arc<KernelServices>,
    /// The thread's tool state (terminals, grants, sources), shared with its calls.
    tools: Arc<ThreadTools>,
    inbox: async_channel::Receiver<LoopMsg>,
    task_tx: mpsc::UnboundedSender<TaskMsg>,
    task_rx: mpsc::UnboundedReceiver<TaskMsg>,
    running: Option<RunningTurn>,
    pending: PendingInput,
    requests: HashMap<String, ParkedRequest>,
    next_run: RunId,
    /// Maintenance ops that arrived while a turn ran; they run, in order, once it ends.
    deferred: VecDeque<(Submission, Option<oneshot::Sender<OpResult>>)>,
    /// A model switch waiting for its compaction turn to finish.
    switch_after_compaction: Option<String>,
    /// Run once the loop has ended (the manager forgets the thread).
    on_exit: Option<Box<dyn FnOnce() + Send>>,
    /// Set while the store cannot write the thread's rollout.
    read_only: Option<read_only::ReadOnly>,
    /// The user's hooks as the last regular turn saw them: set once the thread's
    /// `SessionStart` hooks ran in this process, and what its `SessionEnd` hooks are told.
    session_hooks: Option<crate::turn::tool_hooks::HookScope>,
    /// The thread's goal as only the loop sees it (the next goal turn, the running
    /// turn's progress).
    goal_driver: goal::GoalDriver,
    /// When the next memory extraction is due (`[memory] extract`).
    extraction: extract::Extraction,
}

enum Flow {
    Continue,
    Exit,
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

impl SubmissionLoop {
    pub(crate) fn new(
        state: ThreadState,
        emitter: Emitter,
        services: Arc<KernelServices>,
        tools: Arc<ThreadTools>,
        inbox: async_channel::Receiver<LoopMsg>,
    ) -> Self {
        let (task_tx, task_rx) = mpsc::unbounded_channel();
        let thread_id = state.thread_id.unwrap_or_default();
        Self {
            thread_id,
            state,
            emitter,
            services,
            tools,
            inbox,
            task_tx,
            task_rx,
            running: None,
            pending: PendingInput::default(),
            requests: HashMap::new(),
            next_run: 0,
            deferred: VecDeque::new(),
            switch_after_compaction: None,
            on_exit: None,
            session_hooks: None,
            read_only: None,
            goal_driver: goal::GoalDriver::default(),
            extraction: extract::Extraction::default(),
        }
    }

    pub(crate) fn on_exit(&mut self, on_exit: Box<dyn FnOnce() + Send>) {
        self.on_exit = Some(on_exit);
    }

    pub(crate) fn emit(&mut self, turn_id: Option<TurnId>, msg: EventMsg) {
        self.emitter.emit(&mut self.state, turn_id, msg);
    }

    pub(crate) async fn run(mut self) {
        self.goal_on_load();
        loop {
            let deadline = self.running.as_ref().and_then(|r| r.deadline);
            let retry_at = self.retry_at();
            // A goal turn starts only on an idle thread that can record it.
            let goal_wake = self
                .goal_driver
                .wake
                .filter(|_| self.running.is_none() && self.read_only.is_none());
            let flow = tokio::select! {
                msg = self.inbox.recv() => match msg {
                    Ok(LoopMsg::Submit { submission, reply }) => self.on_submission(submission, reply).await,
                    Ok(LoopMsg::Snapshot(tx)) => {
                        let _ = tx.send(self.state.clone());
                        Flow::Continue
                    }
                    // Every handle is gone: nobody can talk to this thread any more.
                    Err(_) => {
                        self.shut_down().await;
                        Flow::Exit
                    }
                },
                Some(msg) = self.task_rx.recv() => {
                    self.on_task_msg(msg).await;
                    Flow::Continue
                }
                () = sleep_until(deadline) => {
                    self.abort_turn(TurnAbortReason::BudgetLimited).await;
                    Flow::Continue
                }
                () = self.emitter.changed() => {
                    self.on_store_changed().await;
                    Flow::Continue
                }
                () = sleep_until(retry_at) => {
                    self.retry_store();
                    Flow::Continue
                }
                () = sleep_until(goal_wake) => {
                    self.start_goal_turn();
                    Flow::Continue
                }
            };
            let flow = match flow {
                Flow::Continue if self.after_extraction().await => Flow::Exit,
                flow => flow,
            };
            if let Flow::Exit = flow {
                if let Some(on_exit) = self.on_exit.take() {
                    on_exit();
                }
                return;
            }
            // Deferred work waits while read-only (it would exist only in memory).
            if self.running.is_none() && self.read_only.is_none() {
                self.resume_idle_work().await;
            }
        }
    }

    /// One arm per kind of [`Op`], with no wildcard, so a new op does not compile until the
    /// loop decides what it does (long because there are that many ops; an arm of more than
    /// a few lines calls a method of this loop).
    async fn on_submission(
        &mut self,
        Submission { id, op }: Submission,
        reply: Option<oneshot::Sender<OpResult>>,
    ) -> Flow {
        let refusal = self
            .refuse_while_closing(&op)
            .or_else(|| self.refuse_read_only(&op));
        if let Some(refusal) = refusal {
            if let Some(reply) = reply {
                self.emitter.answer(reply, refusal);
            }
            return Flow::Continue;
        }
        let (result, flow) = match op {
            Op::UserInput {
                items,
                mode,
                settings,
                output_schema,
            } => (
                OpResult::Input(self.on_input(id, items, mode, &settings, output_schema)),
                Flow::Continue,
            ),
            Op::AgentMail { from, items } => (
                OpResult::Input(self.on_mail(id, from, items)),
                Flow::Continue,
            ),
            Op::HoldMail { from, items } => (self.on_hold_mail(id, from, items), Flow::Continue),
            Op::DropMail { submission_ids } => (self.on_drop_mail(submission_ids), Flow::Continue),
            Op::RecordTaskGraph { change } => {
                let turn = self.running.as_ref().map(|t| t.id);
                self.emit(turn, EventMsg::TaskGraphChanged { change });
                (OpResult::Accepted, Flow::Continue)
            }
            Op::Recover => (OpResult::Input(self.on_recover()), Flow::Continue),
            op @ (Op::Interrupt | Op::InterruptTurn { .. } | Op::BudgetStop) => {
                let reason = if matches!(op, Op::BudgetStop) {
                    TurnAbortReason::BudgetLimited
                } else {
                    TurnAbortReason::Interrupted
                };
                let outcome = match (&self.running, op) {
                    (Some(turn), Op::InterruptTurn { turn_id }) if turn.id != turn_id => {
                        InterruptOutcome::Idle
                    }
                    (Some(turn), _) => InterruptOutcome::Interrupting { turn_id: turn.id },
                    (None, _) => InterruptOutcome::Idle,
                };
                let stop = matches!(outcome, InterruptOutcome::Interrupting { .. });
                // Answer first: the caller learns at once whether there was anything to stop.
                if let Some(reply) = reply {
                    self.emitter.answer(reply, OpResult::Interrupt(outcome));
                }
                if stop {
                    self.abort_turn(reason).await;
                }
                return Flow::Continue;
            }
            Op::Shutdown => {
                // Shut down once nothing runs (perhaps after a memory extraction).
                self.begin_shutdown(reply).await;
                return Flow::Continue;
            }
            Op::CleanBackgroundTerminals => {
                self.tools.clean_background();
                (OpResult::Accepted, Flow::Continue)
            }
            Op::SetName { name } => (self.on_set_name(name), Flow::Continue),
            Op::SetMemoryMode { mode } => (self.on_set_memory_mode(mode), Flow::Continue),
            Op::ApprovalAnswer {
                approval_id,
                decision,
            } => (
                self.on_response(&approval_id, ClientResponse::Decision { decision })
                    .await,
                Flow::Continue,
            ),
            Op::Respond {
                request_id,
                response,
            } => (
                self.on_response(&request_id, response).await,
                Flow::Continue,
            ),
            Op::Rollback { turns } => (self.on_rollback(turns), Flow::Continue),
            Op::SetGoal { change } => (self.on_set_goal(change), Flow::Continue),
            Op::ClearGoal => (self.on_clear_goal(), Flow::Continue),
            op @ (Op::Compact
            | Op::SwitchModel { .. }
            | Op::Review { .. }
            | Op::UserShell { .. }) => {
                if self.running.is_some() {
                    self.deferred.push_back((Submission { id, op }, reply));
                    return Flow::Continue;
                }
                let result = self.on_maintenance(id, op);
                self.answer_maintenance(reply, result);
                return Flow::Continue;
            }
        };
        if let Some(reply) = reply {
            self.emitter.answer(reply, result);
        }
        flow
    }

    /// Answer a maintenance op; when nobody waits for the answer (it was queued), a
    /// refusal becomes an `Error` event, so the client that queued it still hears why.
    pub(super) fn answer_maintenance(
        &mut self,
        reply: Option<oneshot::Sender<OpResult>>,
        result: OpResult,
    ) {
        match (reply, result) {
            (Some(reply), result) => self.emitter.answer(reply, result),
            (None, OpResult::Refused { message }) => self.emit(
                None,
                EventMsg::Error {
                    code: ErrorCode::OpRefused,
                    message,
                },
            ),
            (None, _) => {}
        }
    }

    async fn on_task_msg(&mut self, msg: TaskMsg) {
        let usage = matches!(msg.kind, TaskMsgKind::Usage(_));
        if let Some(outcome) = self.absorb(msg) {
            self.finish_turn(outcome);
        } else if usage && self.goal_budget_crossed() {
            // A step boundary past the goal's budget: the turn ends here.
            self.abort_turn(TurnAbortReason::BudgetLimited).await;
        }
    }

    /// Fold one message of the running task into events. Returns the task's outcome when
    /// the message says it finished. Messages of runs already closed are dropped.
    /// One arm per kind of task message (long because there are that many).
    fn absorb(&mut self, TaskMsg { run, kind, .. }: TaskMsg) -> Option<TaskOutcome> {
        let turn = self.running.as_mut().filter(|t| t.run == run)?;
        let turn_id = turn.id;
        match kind {
            TaskMsgKind::Emit(msg) => {
                turn.open.observe(&msg);
                self.goal_observe(&msg);
                let turn = self.running.as_mut()?;
                let turn_diff = match &msg {
                    EventMsg::ToolCallEnd {
                        outcome: ToolOutcome::Patched { changes },
                        ..
                    } => {
                        for change in changes {
                            turn.diff.push_str(&change.unified_diff);
                        }
                        Some(turn.diff.clone())
                    }
                    _ => None,
                };
                self.emit(Some(turn_id), msg);
                if let Some(unified_diff) = turn_diff {
                    self.emit(Some(turn_id), EventMsg::TurnDiff { unified_diff });
                }
            }
            TaskMsgKind::EmitWritten { msg, written } => {
                turn.open.observe(&msg);
                self.emit(Some(turn_id), msg);
                self.emitter.answer(written, ());
            }
            TaskMsgKind::ClaimMail { id, taken } => {
                let claimed = self.pending.take_mail(id);
                if claimed {
                    // It left the mailbox: a restore must not deliver it again.
                    self.emit(
                        Some(turn_id),
                        EventMsg::MailTaken {
                            submission_ids: vec![id],
                        },
                    );
                }
                self.emitter.answer(taken, claimed);
            }
            TaskMsgKind::Usage(last) => {
                let mut total = self.state.usage;
                total.add(&last);
                let context_window = self
                    .state
                    .active_turn
                    .as_ref()
                    .and_then(|t| self.services.models.context_window(&t.settings.model));
                self.emit(
                    Some(turn_id),
                    EventMsg::TokenCount {
                        last,
                        total,
                        context_window,
                    },
                );
            }
            TaskMsgKind::Ask {
                call_id,
                ask,
                reply,
            } => {
                if turn.cancel.is_cancelled() {
                    return None; // dropping `reply` tells the tool it was cancelled
                }
                if self.state.session_denials.covers(&ask.request) {
                    // Denied for the session: refused again without asking anyone.
                    let _ = reply.send(ClientResponse::Decision {
                        decision: ApprovalDecision::Deny,
                    });
                    return None;
                }
                let request_id = ItemId::new().0;
                self.requests.insert(
                    request_id.clone(),
                    ParkedRequest {
                        run,
                        request: ask.request.clone(),
                        grant: ask.session_grant,
                        reply,
                    },
                );
                self.emit(
                    Some(turn_id),
                    EventMsg::ClientRequested {
                        request_id,
                        call_id,
                        request: ask.request,
                    },
                );
            }
            TaskMsgKind::Goal { request, reply } => self.on_goal_request(request, reply),
            TaskMsgKind::Finished(outcome) => return Some(outcome),
        }
        None
    }

    fn finish_turn(&mut self, outcome: TaskOutcome) {
        let Some(turn) = self.running.take() else {
            return;
        };
        self.cancel_requests(turn.run, turn.id);
        match outcome {
            TaskOutcome::Completed { last_agent_message } => {
                self.goal_before_turn_end(turn.id);
                self.emit(
                    Some(turn.id),
                    EventMsg::TurnCompleted { last_agent_message },
                );
                self.goal_after_turn(turn.id, goal::TurnEnd::Completed);
                self.start_leftover_turn();
                self.extract_after_turn(turn.id);
            }
            TaskOutcome::Failed { code, message } => {
                self.goal_before_failed_turn_end(turn.id, code);
                self.emit(
                    Some(turn.id),
                    EventMsg::Error {
                        code,
                        message: message.clone(),
                    },
                );
                self.emit(
                    Some(turn.id),
                    EventMsg::TurnFailed {
                        code,
                        message: message.clone(),
                    },
                );
                self.goal_after_turn(turn.id, goal::TurnEnd::Failed(code, message));
            }
            TaskOutcome::BudgetExhausted => {
                self.close_aborted(turn, TurnAbortReason::BudgetLimited)
            }
            // Only an abort cancels a task, and an abort consumes the task's report itself;
            // should one slip through, the turn still closes properly.
            TaskOutcome::Cancelled => self.close_aborted(turn, TurnAbortReason::Interrupted),
        }
    }
}
