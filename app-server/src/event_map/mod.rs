//! Kernel events → Codex notifications. One exhaustive `match` over [`EventMsg`]: an event
//! added to the kernel does not compile here until someone decides what clients see of it.
//!
//! The mapper is pure (events in, [`Outgoing`] messages out) and keeps just enough state to
//! fill what Codex sends: the running turn and its last answer, the open tool calls (what
//! their tools said they do), and how many approvals wait. Tool items are built from the
//! kernel's facts by [`crate::tool_items`], the builder `thread/read` uses too.

use std::collections::HashMap;

use rein_app_server_protocol::{ServerNotification, ServerRequest, ThreadStatus, TurnStatus};
use rein_protocol::{Event, EventMsg, ToolAction, TurnId};

use crate::outbound::now_ms;

mod advisor;
mod approval;
mod hooks;
mod items;
mod notices;
pub(crate) mod review;
mod shapes;
mod tools;
mod turns;

use crate::tool_items::Ended;
pub use hooks::codex_event_name;
pub(crate) use shapes::turn_error as turn_error_of;
use shapes::{plain_error, turn_error, TurnTrack};

/// What the mapper asks the connection to send. Notifications are by far the common case,
/// so they stay inline; how much larger they are than the rest depends on serde_json's
/// features (`preserve_order`, which the ACP SDK turns on, makes every `Value` larger).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum Outgoing {
    Notify(ServerNotification),
    /// Ask the client (a server → client request); answers go back to `approval_id`.
    Ask {
        approval_id: String,
        request: Box<ServerRequest>,
    },
    /// The kernel settled an approval without the client's answer (the turn ended).
    Withdrawn {
        approval_id: String,
    },
    /// The thread shut down: nothing more will come.
    Closed,
}

/// A tool call shown to clients, until it ends.
struct ToolTrack {
    turn_id: TurnId,
    tool: String,
    action: ToolAction,
    /// Its output streams as a file change's (else as a command's).
    file_change: bool,
}

pub struct EventMapper {
    thread_id: String,
    context_window: Option<i64>,
    turn: Option<TurnTrack>,
    tools: HashMap<String, ToolTrack>,
    /// approval id → call id, while the client is asked.
    approvals: HashMap<String, String>,
    status: ThreadStatus,
    preview: Option<String>,
    /// Usage of a reply, held until the reply's items are out: Codex clients see a
    /// reply's items completed before its token count.
    held_usage: Option<ServerNotification>,
    /// The item id of the compaction in progress.
    compaction: Option<String>,
    /// The advisor's reviews in progress.
    reviews: advisor::Reviews,
    /// The hook runs in progress.
    hooks: hooks::HookRuns,
}

impl EventMapper {
    pub fn new(thread_id: String, context_window: Option<i64>) -> Self {
        Self {
            thread_id,
            context_window,
            turn: None,
            tools: HashMap::new(),
            approvals: HashMap::new(),
            status: ThreadStatus::Idle,
            preview: None,
            held_usage: None,
            compaction: None,
            reviews: advisor::Reviews::default(),
            hooks: hooks::HookRuns::default(),
        }
    }

    pub fn status(&self) -> &ThreadStatus {
        &self.status
    }

    /// The first user message, once one was seen.
    pub fn preview(&self) -> Option<&str> {
        self.preview.as_deref()
    }

    pub fn active_turn(&self) -> Option<TurnId> {
        self.turn.as_ref().map(|t| t.id)
    }

    /// What clients see of one event. A dispatch: each arm names the event's fields and
    /// hands them to the method (in this module's files) that builds its messages. It is
    /// longer than 80 lines because it lists every kind of event, which is the point.
    pub fn map(&mut self, event: &Event) -> Vec<Outgoing> {
        let mut out = Vec::new();
        let turn_id = event.turn_id;
        if !matches!(event.msg, EventMsg::ItemCompleted { .. }) {
            if let Some(usage) = self.held_usage.take() {
                out.push(Outgoing::Notify(usage));
            }
        }
        let o = &mut out;
        match &event.msg {
            // Announced by the thread/start answer and `thread/started`.
            EventMsg::ThreadConfigured { .. }
            | EventMsg::SettingsChanged { .. }
            | EventMsg::AgentOrigin { .. }
            | EventMsg::ContextLoaded { .. }
            | EventMsg::SkillActivated { .. }
            | EventMsg::AgentSpawned { .. }
            | EventMsg::AgentTasked { .. }
            | EventMsg::AgentClosed { .. }
            | EventMsg::MailQueued { .. }
            | EventMsg::TaskGraphChanged { .. }
            | EventMsg::MailTaken { .. } => {}
            EventMsg::ThreadNamed { name } => self.thread_named(o, name),
            EventMsg::TurnStarted { kind, .. } => self.turn_started(o, event, *kind),
            EventMsg::TurnCompleted { .. } => self.end_turn(o, event, TurnStatus::Completed, None),
            EventMsg::TurnAborted { .. } => self.end_turn(o, event, TurnStatus::Interrupted, None),
            EventMsg::TurnFailed { code, message } => {
                let error = Some(turn_error(*code, message));
                self.end_turn(o, event, TurnStatus::Failed, error);
            }
            EventMsg::ItemStarted { item_id, kind } => self.item_begun(o, event, item_id, *kind),
            EventMsg::ItemCompleted { item } => self.item_completed(o, event, item),
            EventMsg::AgentMessageDelta { item_id, delta } => {
                self.agent_message_delta(o, turn_id, item_id, delta);
            }
            EventMsg::ReasoningDelta { item_id, delta } => {
                self.reasoning_delta(o, turn_id, item_id, delta);
            }
            EventMsg::ToolCallBegin {
                call_id,
                name,
                action,
                ..
            } => self.tool_begun(o, event, call_id, name, action),
            EventMsg::AdvisorReviewStarted {
                review_id,
                cwd,
                risk,
                calls,
            } => self.review_started(o, event, review_id, cwd, *risk, calls),
            EventMsg::AdvisorReviewCompleted {
                review_id, verdict, ..
            } => self.review_completed(o, event, review_id, verdict),
            EventMsg::ToolOutputDelta { call_id, delta } => self.tool_output(o, call_id, delta),
            EventMsg::ToolCallEnd {
                call_id,
                duration_ms,
                outcome,
                ..
            } => {
                let ended = Ended {
                    outcome,
                    duration_ms: *duration_ms,
                };
                self.tool_completed(o, event, call_id, ended);
            }
            // Work for a client that can read files or run terminals for rein: Codex
            // clients declare no such capability, so their threads never ask it.
            EventMsg::ClientRequested { request, .. } if request.is_client_work() => {}
            EventMsg::ClientRequested {
                request_id,
                call_id,
                request,
            } => self.approval_asked(o, event, request_id, call_id, request),
            EventMsg::ClientRequestResolved { request_id, .. } => {
                self.approval_resolved(o, request_id);
            }
            EventMsg::TokenCount {
                last,
                total,
                context_window,
            } => self.token_count(turn_id, last, total, *context_window),
            EventMsg::PlanUpdated { plan } => self.plan_updated(o, turn_id, plan),
            EventMsg::StreamRetry {
                attempt,
                max_attempts,
                message,
            } => {
                let text = format!("{message} (retry {attempt}/{max_attempts})");
                o.push(self.error_or_warning(turn_id, plain_error(text), true));
            }
            // Written by rein before patches were outcomes; the outcome carries the diffs.
            EventMsg::PatchApplied { .. } => {}
            // For replays: Codex clients have no notion of a request fingerprint.
            EventMsg::StepRequested { .. } => {}
            EventMsg::TurnDiff { unified_diff } => self.turn_diff(o, turn_id, unified_diff),
            // Codex's `model/rerouted` only knows its own safety reasons; a fallback after
            // failures is told to clients as a warning.
            EventMsg::ModelRerouted { from, to, reason } => {
                self.warning(o, format!("{from} failed ({reason}); continuing with {to}"));
            }
            EventMsg::CompactionStarted { .. } => self.compaction_started(o, event),
            EventMsg::Compacted { .. } => self.compacted(o, event),
            EventMsg::HookStarted { .. } | EventMsg::HookCompleted { .. } => {
                o.extend(self.hooks.map(&self.thread_id, event).map(Outgoing::Notify));
            }
            // A proposal is asked as `rein/memory/requestApproval`; its answer is the
            // `remember` call's output, shown as the tool call's item.
            EventMsg::MemoryProposed { .. }
            | EventMsg::MemoryAccepted { .. }
            | EventMsg::MemoryRejected { .. } => {}
            // Codex has no notification for it: `thread/memoryMode/set` answers `{}`.
            EventMsg::MemoryModeSet { .. } => {}
            // The new model shows in the thread's next `Thread` object and token counts.
            EventMsg::ModelSwitched { .. } => {}
            // Answered by the `thread/rollback` response.
            EventMsg::RolledBack { .. } => {}
            EventMsg::Warning { message } => self.warning(o, message.clone()),
            EventMsg::Error { code, message } => self.error(o, turn_id, *code, message),
            EventMsg::GoalUpdated { goal } => self.goal_updated(o, turn_id, goal),
            EventMsg::GoalCleared => self.goal_cleared(o),
            // Codex's wire has no checkpoints; a goal turn is an ordinary turn there.
            EventMsg::GoalTurnStarted { .. } | EventMsg::GoalCheckpointed { .. } => {}
            EventMsg::ShutdownComplete => self.shut_down(o),
        }
        out
    }
}

fn event_ms(event: &Event) -> i64 {
    i64::try_from(event.timestamp_ms).unwrap_or_else(|_| now_ms())
}

#[cfg(test)]
mod tests;
