//! Thread state as a projection of events: `state = fold(events)`. One reducer, applied
//! by the live submission loop to every event it emits and by resume to every event it
//! reads back, so both build the same state.
//!
//! Architecture invariant: nothing else mutates a `ThreadState`. Status, history, the
//! active turn, settings and usage change only here, in response to an event.

use std::collections::HashMap;
use std::sync::Arc;

use rein_protocol::{
    AgentOrigin, AgentStatus, ApprovalOutcome, ChildAgent, ClientRequest, ContextRole, ErrorCode,
    Event, EventMsg, InputPart, Item, ItemId, SessionId, Strategy, SubmissionId, TaskGraph,
    TaskKind, ThreadContext, ThreadId, ThreadSettings, TokenUsage, TurnAbortReason, TurnId,
};

use crate::goal::{GoalMark, GoalState};
use crate::tools::{SessionApprovals, SessionDenials};

/// One turn as history sees it: where its items begin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRecord {
    pub id: TurnId,
    pub kind: TaskKind,
    /// Index into `history` of the turn's first item.
    pub history_start: usize,
    pub status: TurnStatus,
    /// When the turn first started (ms since the epoch; a recovery keeps it).
    pub started_ms: u64,
    /// When it last ended, while it is not running.
    pub ended_ms: Option<u64>,
    /// The kernel started it to continue the thread's goal.
    pub goal: bool,
    /// The thread's goal when the turn started: what a rollback of this turn restores.
    pub goal_before: GoalMark,
    /// Why it failed, when it did.
    pub failure: Option<TurnFailure>,
}

/// The error a failed turn ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnFailure {
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    Running,
    Completed,
    Aborted(TurnAbortReason),
    Failed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActiveTurn {
    pub id: TurnId,
    pub kind: TaskKind,
    /// Settings captured at turn start.
    pub settings: ThreadSettings,
    /// The JSON Schema the turn's final answer must follow, if its input gave one.
    pub output_schema: Option<Arc<serde_json::Value>>,
}

/// An aborted turn `Recover` can restart: its id, and what it was asked to answer in.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoverableTurn {
    pub id: TurnId,
    pub output_schema: Option<Arc<serde_json::Value>>,
}

/// Mail waiting in a thread's mailbox (see [`EventMsg::MailQueued`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PendingMail {
    pub submission_id: SubmissionId,
    pub from: ThreadId,
    pub items: Vec<InputPart>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct ThreadState {
    pub thread_id: Option<ThreadId>,
    pub session_id: Option<SessionId>,
    pub forked_from: Option<ThreadId>,
    /// A root's strategy as recorded at its creation (`None`: a sub-agent, or a rollout
    /// from before it was recorded).
    pub strategy: Option<Strategy>,
    /// The user-facing name, once given.
    pub name: Option<String>,
    pub settings: Option<ThreadSettings>,
    pub status: AgentStatus,
    /// The model-visible history, in order.
    pub history: Vec<Arc<Item>>,
    /// What every request sends before `history` (`ContextLoaded`): the same items, so
    /// the same bytes, in every turn of the thread.
    pub prefix: Arc<[Arc<Item>]>,
    /// Where `prefix` came from.
    pub context: Option<ThreadContext>,
    pub turns: Vec<TurnRecord>,
    pub active_turn: Option<ActiveTurn>,
    /// The last turn that was aborted, while no later turn has started: what `Recover`
    /// restarts.
    pub recoverable_turn: Option<RecoverableTurn>,
    pub usage: TokenUsage,
    /// How many tokens the model-visible context held at the last response or compaction.
    pub context_tokens: u64,
    /// Turns at or before a compaction cannot be rolled back: their items are summarised.
    pub rollback_floor: usize,
    /// What the user approved "for this session" (folded from the answers' grants).
    pub session_grants: SessionApprovals,
    /// What the user denied "for this session" (folded from the requests so answered).
    pub session_denials: SessionDenials,
    /// The client requests not answered yet, by id: what a "deny for this session" denies.
    pub open_requests: HashMap<String, ClientRequest>,
    /// Where this thread comes from, when it is a sub-agent.
    pub agent: Option<AgentOrigin>,
    /// The sub-agents this thread spawned, in order (closed ones stay, marked closed).
    pub children: Vec<ChildAgent>,
    /// Mail accepted into the mailbox and not yet in the history, in order: what a
    /// restore delivers again.
    pub pending_mail: Vec<PendingMail>,
    /// The task graph this thread's plan made (`TaskGraphChanged`), empty without one.
    pub task_graph: TaskGraph,
    /// The thread's goal, its checkpoints and usage.
    pub goal: GoalState,
    /// Whether this thread uses memory (`MemoryModeSet`; enabled until one says otherwise).
    pub memory_mode: rein_protocol::ThreadMemoryMode,
    /// The skills the model opened itself (`SkillActivated`), each once, in order.
    pub skills_used: Vec<rein_protocol::SkillActivation>,
    /// Sequence number of the last event applied.
    pub last_seq: Option<u64>,
}

impl ThreadState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold a whole event sequence.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut state = Self::new();
        for event in events {
            state.apply(event);
        }
        state
    }

    pub fn is_idle(&self) -> bool {
        self.active_turn.is_none()
    }

    /// The next sequence number to assign.
    pub fn next_seq(&self) -> u64 {
        self.last_seq.map_or(0, |s| s + 1)
    }

    /// The reducer, taking the event by value: a completed item moves into history
    /// instead of being cloned (resume folds large rollouts this way). Same semantics as
    /// [`apply`](Self::apply).
    pub fn apply_owned(&mut self, event: Event) {
        match event.msg {
            EventMsg::ItemCompleted { item } => {
                self.last_seq = Some(event.seq);
                if self.thread_id.is_none() {
                    self.thread_id = Some(event.thread_id);
                }
                self.history.push(Arc::new(item));
            }
            _ => self.apply(&event),
        }
    }

    /// The reducer. One match over every event kind, with no wildcard arm, on purpose: a
    /// new event does not compile until its fold here is decided (the contract's "one
    /// reducer"). It is long because the event enum is; an arm of more than a few lines is
    /// a method below.
    pub fn apply(&mut self, event: &Event) {
        self.last_seq = Some(event.seq);
        if self.thread_id.is_none() {
            self.thread_id = Some(event.thread_id);
        }
        self.goal.apply(event, self.active_turn.is_some());
        match &event.msg {
            EventMsg::ThreadConfigured {
                session_id,
                settings,
                forked_from,
                strategy,
            } => {
                self.session_id = Some(*session_id);
                self.settings = Some(settings.clone());
                self.forked_from = *forked_from;
                self.strategy = *strategy;
            }
            EventMsg::ContextLoaded { context } => {
                self.prefix = prefix_items(context);
                self.context = Some(context.clone());
            }
            EventMsg::AgentOrigin { origin } => self.agent = Some(origin.clone()),
            EventMsg::SkillActivated { skill, .. } => {
                if !self.skills_used.contains(skill) {
                    self.skills_used.push(skill.clone());
                }
            }
            EventMsg::AgentSpawned {
                thread_id,
                nickname,
                role,
                task,
            } => {
                let child = ChildAgent {
                    thread_id: *thread_id,
                    nickname: nickname.clone(),
                    role: role.clone(),
                    last_task: task.clone(),
                    open: true,
                };
                // Spawned again: a closed child reopened.
                match self.children.iter_mut().find(|c| c.thread_id == *thread_id) {
                    Some(known) => *known = child,
                    None => self.children.push(child),
                }
            }
            EventMsg::AgentTasked { thread_id, task } => {
                if let Some(child) = self.children.iter_mut().find(|c| c.thread_id == *thread_id) {
                    child.last_task.clone_from(task);
                }
            }
            EventMsg::MailQueued {
                submission_id,
                from,
                items,
            } => {
                self.pending_mail
                    .retain(|m| m.submission_id != *submission_id);
                self.pending_mail.push(PendingMail {
                    submission_id: *submission_id,
                    from: *from,
                    items: items.clone(),
                });
            }
            EventMsg::MailTaken { submission_ids } => self
                .pending_mail
                .retain(|m| !submission_ids.contains(&m.submission_id)),
            EventMsg::AgentClosed { thread_id } => {
                if let Some(child) = self.children.iter_mut().find(|c| c.thread_id == *thread_id) {
                    child.open = false;
                }
            }
            EventMsg::SettingsChanged { settings } => self.settings = Some(settings.clone()),
            EventMsg::ThreadNamed { name } => self.name = Some(name.clone()),
            EventMsg::MemoryModeSet { mode } => self.memory_mode = *mode,
            EventMsg::TurnStarted {
                kind,
                settings,
                output_schema,
                ..
            } => self.turn_started(event, *kind, settings, output_schema.as_ref()),
            EventMsg::TurnCompleted { .. } => {
                self.end_turn(event, TurnStatus::Completed);
                self.status = AgentStatus::Completed;
            }
            EventMsg::TurnAborted { reason } => self.turn_aborted(event, *reason),
            EventMsg::TurnFailed { code, message } => {
                self.end_turn(event, TurnStatus::Failed);
                if let Some(record) = self.turn_mut(event.turn_id) {
                    record.failure = Some(TurnFailure {
                        code: *code,
                        message: message.clone(),
                    });
                }
                self.status = AgentStatus::Errored;
            }
            EventMsg::ItemCompleted { item } => self.history.push(Arc::new(item.clone())),
            EventMsg::TokenCount { last, total, .. } => {
                self.usage = *total;
                // A review samples a context of its own; the thread's stays as it was.
                let review = self
                    .active_turn
                    .as_ref()
                    .is_some_and(|t| t.kind == TaskKind::Review);
                if !review {
                    self.context_tokens = last.input_tokens + last.output_tokens;
                }
            }
            EventMsg::Compacted {
                summary,
                kept,
                summary_at,
                tokens_after,
                ..
            } => self.compacted(summary, kept, *summary_at, *tokens_after),
            EventMsg::ModelSwitched { to, .. } => {
                if let Some(settings) = &mut self.settings {
                    settings.model.clone_from(to);
                }
            }
            EventMsg::RolledBack { turns } => self.roll_back(*turns as usize),
            EventMsg::ClientRequested {
                request_id,
                request,
                ..
            } => {
                self.open_requests
                    .insert(request_id.clone(), request.clone());
            }
            EventMsg::ClientRequestResolved {
                request_id,
                outcome,
                grant,
            } => {
                let request = self.open_requests.remove(request_id);
                if let Some(grant) = grant {
                    self.session_grants.grant(grant);
                }
                if let (ApprovalOutcome::DeniedForSession, Some(request)) = (outcome, request) {
                    self.session_denials.deny(&request);
                }
            }
            EventMsg::TaskGraphChanged { change } => {
                self.task_graph.apply(change, event.timestamp_ms);
            }
            EventMsg::GoalTurnStarted { .. } => {
                if let Some(record) = self.turn_mut(event.turn_id) {
                    record.goal = true;
                }
            }
            EventMsg::ShutdownComplete => {
                self.active_turn = None;
                self.status = AgentStatus::Shutdown;
            }
            // The memory store keeps memories; the thread's state holds nothing of them.
            EventMsg::MemoryProposed { .. }
            | EventMsg::MemoryAccepted { .. }
            | EventMsg::MemoryRejected { .. } => {}
            EventMsg::ItemStarted { .. }
            | EventMsg::AgentMessageDelta { .. }
            | EventMsg::ReasoningDelta { .. }
            | EventMsg::ToolCallBegin { .. }
            | EventMsg::AdvisorReviewStarted { .. }
            | EventMsg::AdvisorReviewCompleted { .. }
            | EventMsg::HookStarted { .. }
            | EventMsg::HookCompleted { .. }
            | EventMsg::ToolOutputDelta { .. }
            | EventMsg::ToolCallEnd { .. }
            | EventMsg::PlanUpdated { .. }
            | EventMsg::PatchApplied { .. }
            | EventMsg::TurnDiff { .. }
            | EventMsg::StreamRetry { .. }
            | EventMsg::StepRequested { .. }
            | EventMsg::CompactionStarted { .. }
            | EventMsg::ModelRerouted { .. }
            | EventMsg::Warning { .. }
            | EventMsg::Error { .. }
            | EventMsg::GoalUpdated { .. }
            | EventMsg::GoalCleared
            | EventMsg::GoalCheckpointed { .. } => {}
        }
    }

    fn turn_started(
        &mut self,
        event: &Event,
        kind: TaskKind,
        settings: &ThreadSettings,
        output_schema: Option<&serde_json::Value>,
    ) {
        let Some(id) = event.turn_id else { return };
        self.active_turn = Some(ActiveTurn {
            id,
            kind,
            settings: settings.clone(),
            output_schema: output_schema.cloned().map(Arc::new),
        });
        self.recoverable_turn = None;
        self.status = AgentStatus::Running;
        match self.turns.last_mut() {
            // A recovered turn continues its record rather than opening a new one.
            Some(last) if last.id == id => {
                last.status = TurnStatus::Running;
                last.ended_ms = None;
                last.failure = None;
            }
            _ => self.turns.push(TurnRecord {
                id,
                kind,
                history_start: self.history.len(),
                status: TurnStatus::Running,
                started_ms: event.timestamp_ms,
                ended_ms: None,
                failure: None,
                goal: false,
                goal_before: self.goal.mark(),
            }),
        }
    }

    fn turn_aborted(&mut self, event: &Event, reason: TurnAbortReason) {
        // The root's interrupt cascades to its task graph's running nodes.
        self.task_graph.cancel_running(event.timestamp_ms);
        let ended = self.end_turn(event, TurnStatus::Aborted(reason));
        // Only a regular turn restarts as one; a review or a compaction is asked for again
        // instead.
        let regular = ended.as_ref().is_none_or(|t| t.kind == TaskKind::Regular);
        self.recoverable_turn = event.turn_id.filter(|_| regular).map(|id| RecoverableTurn {
            id,
            output_schema: ended.and_then(|t| t.output_schema),
        });
        self.status = AgentStatus::Interrupted;
    }

    /// The history becomes the kept items with the summary at its place.
    fn compacted(&mut self, summary: &Item, kept: &[u32], summary_at: u32, tokens_after: u64) {
        let mut history: Vec<Arc<Item>> = kept
            .iter()
            .filter_map(|&i| self.history.get(i as usize).cloned())
            .collect();
        let at = (summary_at as usize).min(history.len());
        history.insert(at, Arc::new(summary.clone()));
        self.history = history;
        self.context_tokens = tokens_after;
        self.rollback_floor = self.turns.len();
        for turn in &mut self.turns {
            turn.history_start = 0;
        }
    }

    fn turn_mut(&mut self, id: Option<TurnId>) -> Option<&mut TurnRecord> {
        self.turns.iter_mut().rev().find(|t| Some(t.id) == id)
    }

    /// Close the turn `event` is about; returns it if it was the active one.
    fn end_turn(&mut self, event: &Event, status: TurnStatus) -> Option<ActiveTurn> {
        let id = event.turn_id;
        if let Some(record) = self.turn_mut(id) {
            record.status = status;
            record.ended_ms = Some(event.timestamp_ms);
        }
        if self.active_turn.as_ref().map(|t| t.id) == id {
            self.active_turn.take()
        } else {
            None
        }
    }

    /// How many of the last turns a rollback may drop.
    pub fn rollbackable_turns(&self) -> usize {
        self.turns.len().saturating_sub(self.rollback_floor)
    }

    fn roll_back(&mut self, turns: usize) {
        let keep = self
            .turns
            .len()
            .saturating_sub(turns.min(self.rollbackable_turns()));
        if let Some(first_dropped) = self.turns.get(keep) {
            self.history.truncate(first_dropped.history_start);
            self.goal.roll_back(&first_dropped.goal_before);
        }
        self.turns.truncate(keep);
        self.recoverable_turn = None;
    }

    /// The last agent message of the history, if any.
    pub fn last_agent_message(&self) -> Option<&str> {
        self.history.iter().rev().find_map(|i| match i.as_ref() {
            Item::AgentMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
    }
}

/// The items a context's messages are sent as. Their ids are fixed (`context_N`): the
/// model never sees an id, and a resumed thread folds the same state as the live one.
pub fn prefix_items(context: &ThreadContext) -> Arc<[Arc<Item>]> {
    context
        .messages
        .iter()
        .enumerate()
        .map(|(n, message)| {
            let id = ItemId(format!("context_{n}"));
            Arc::new(match message.role {
                ContextRole::Developer => Item::DeveloperMessage {
                    id,
                    text: message.text.clone(),
                },
                ContextRole::User => Item::UserMessage {
                    id,
                    content: vec![InputPart::text(message.text.clone())],
                },
            })
        })
        .collect()
}

/// Folds events into a thread's state, moving items instead of copying them.
pub fn fold_owned(events: Vec<Event>) -> ThreadState {
    let mut state = ThreadState::new();
    for event in events {
        state.apply_owned(event);
    }
    state
}
