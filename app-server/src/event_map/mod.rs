//! Kernel events → Codex notifications. One exhaustive `match` over [`EventMsg`]: an event
//! added to the kernel does not compile here until someone decides what clients see of it.
//!
//! The mapper is pure (events in, [`Outgoing`] messages out) and keeps just enough state to
//! fill what Codex sends: the running turn and its last answer, the open tool calls (what
//! their tools said they do), and how many approvals wait. Tool items are built from the
//! kernel's facts by [`crate::tool_items`], the builder `thread/read` uses too.

use std::collections::HashMap;

use rein_app_server_protocol::{
    DeltaNotification, ErrorNotification, ItemCompletedNotification,
    McpToolCallProgressNotification, ReasoningSummaryTextDeltaNotification, ServerNotification,
    ServerRequest, ThreadGoalClearedNotification, ThreadGoalUpdatedNotification,
    ThreadIdNotification, ThreadItem, ThreadNameUpdatedNotification, ThreadStatus,
    ThreadStatusChangedNotification, ThreadTokenUsage, ThreadTokenUsageUpdatedNotification,
    TurnDiffUpdatedNotification, TurnError, TurnItemsView, TurnNotification, TurnPlanStep,
    TurnPlanUpdatedNotification, TurnStatus, WarningNotification,
};
use rein_protocol::{Event, EventMsg, ItemKind, PlanStepStatus, TaskKind, ToolAction, TurnId};

use crate::convert::usage_to_wire;
use crate::outbound::now_ms;

mod advisor;
mod approval;
mod hooks;
mod items;
pub(crate) mod review;
mod shapes;

use crate::tool_items::{tool_item, Ended};
pub use hooks::codex_event_name;
pub(crate) use shapes::turn_error as turn_error_of;
use shapes::{active, plain_error, turn_error, turn_object, TurnTrack};

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

    pub fn map(&mut self, event: &Event) -> Vec<Outgoing> {
        let mut out = Vec::new();
        let turn_id = event.turn_id;
        if !matches!(event.msg, EventMsg::ItemCompleted { .. }) {
            if let Some(usage) = self.held_usage.take() {
                out.push(Outgoing::Notify(usage));
            }
        }
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
            EventMsg::ThreadNamed { name } => {
                out.push(Outgoing::Notify(ServerNotification::ThreadNameUpdated(
                    ThreadNameUpdatedNotification {
                        thread_id: self.thread_id.clone(),
                        thread_name: Some(name.clone()),
                    },
                )));
            }
            EventMsg::TurnStarted { kind, .. } => {
                if let Some(id) = turn_id {
                    let track = TurnTrack {
                        id,
                        started_at_ms: event_ms(event),
                        last_agent: None,
                        error: None,
                        review: *kind == TaskKind::Review,
                    };
                    let turn = turn_object(&track, TurnStatus::InProgress, None);
                    self.turn = Some(track);
                    self.set_status(&mut out, active(false));
                    out.push(Outgoing::Notify(ServerNotification::TurnStarted(
                        TurnNotification {
                            thread_id: self.thread_id.clone(),
                            turn,
                        },
                    )));
                }
            }
            EventMsg::TurnCompleted { .. } => {
                self.end_turn(&mut out, event, TurnStatus::Completed, None);
            }
            EventMsg::TurnAborted { .. } => {
                self.end_turn(&mut out, event, TurnStatus::Interrupted, None);
            }
            EventMsg::TurnFailed { code, message } => {
                let error = turn_error(*code, message);
                self.end_turn(&mut out, event, TurnStatus::Failed, Some(error));
            }
            EventMsg::ItemStarted { item_id, kind } => {
                let item = match kind {
                    ItemKind::AgentMessage => ThreadItem::AgentMessage {
                        id: item_id.to_string(),
                        text: String::new(),
                        phase: None,
                    },
                    ItemKind::Reasoning => ThreadItem::Reasoning {
                        id: item_id.to_string(),
                        summary: Vec::new(),
                        content: Vec::new(),
                    },
                };
                if let Some(n) = self.item_started(turn_id, item, event_ms(event)) {
                    out.push(n);
                }
            }
            EventMsg::ItemCompleted { item } => self.item_completed(&mut out, event, item),
            EventMsg::AgentMessageDelta { item_id, delta } => {
                if let Some(turn_id) = turn_id {
                    out.push(Outgoing::Notify(ServerNotification::AgentMessageDelta(
                        DeltaNotification {
                            thread_id: self.thread_id.clone(),
                            turn_id: turn_id.to_string(),
                            item_id: item_id.to_string(),
                            delta: delta.clone(),
                        },
                    )));
                }
            }
            EventMsg::ReasoningDelta { item_id, delta } => {
                if let Some(turn_id) = turn_id {
                    out.push(Outgoing::Notify(
                        ServerNotification::ReasoningSummaryTextDelta(
                            ReasoningSummaryTextDeltaNotification {
                                thread_id: self.thread_id.clone(),
                                turn_id: turn_id.to_string(),
                                item_id: item_id.to_string(),
                                delta: delta.clone(),
                                summary_index: 0,
                            },
                        ),
                    ));
                }
            }
            EventMsg::ToolCallBegin {
                call_id,
                name,
                action: Some(action),
                ..
            } => {
                if let (Some(turn_id), Some(item)) = (
                    turn_id,
                    tool_item(&self.thread_id, call_id, name, action, None),
                ) {
                    self.tools.insert(
                        call_id.clone(),
                        ToolTrack {
                            turn_id,
                            tool: name.clone(),
                            action: action.clone(),
                            file_change: matches!(item, ThreadItem::FileChange { .. }),
                        },
                    );
                    out.extend(self.item_started(Some(turn_id), item, event_ms(event)));
                }
            }
            // Written before tools described their calls; never sent live.
            EventMsg::ToolCallBegin { action: None, .. } => {}
            EventMsg::AdvisorReviewStarted {
                review_id,
                cwd,
                risk,
                calls,
            } => {
                if let Some(turn_id) = turn_id {
                    let cwd = cwd.to_string_lossy();
                    let started = self.reviews.started(
                        &self.thread_id,
                        (turn_id, event_ms(event)),
                        review_id,
                        &cwd,
                        *risk,
                        calls,
                    );
                    out.extend(started.into_iter().map(Outgoing::Notify));
                }
            }
            EventMsg::AdvisorReviewCompleted {
                review_id, verdict, ..
            } => {
                let done =
                    self.reviews
                        .completed(&self.thread_id, review_id, verdict, event_ms(event));
                out.extend(done.into_iter().map(Outgoing::Notify));
            }
            EventMsg::ToolOutputDelta { call_id, delta } => {
                if let Some(track) = self
                    .tools
                    .get(call_id)
                    .filter(|t| matches!(t.action, ToolAction::Mcp { .. }))
                {
                    out.push(Outgoing::Notify(ServerNotification::McpToolCallProgress(
                        McpToolCallProgressNotification {
                            thread_id: self.thread_id.clone(),
                            turn_id: track.turn_id.to_string(),
                            item_id: call_id.clone(),
                            message: delta.trim_end().to_owned(),
                        },
                    )));
                } else if let Some(track) = self.tools.get(call_id) {
                    let params = DeltaNotification {
                        thread_id: self.thread_id.clone(),
                        turn_id: track.turn_id.to_string(),
                        item_id: call_id.clone(),
                        delta: delta.clone(),
                    };
                    out.push(Outgoing::Notify(if track.file_change {
                        ServerNotification::FileChangeOutputDelta(params)
                    } else {
                        ServerNotification::CommandExecutionOutputDelta(params)
                    }));
                }
            }
            EventMsg::ToolCallEnd {
                call_id,
                duration_ms,
                outcome: Some(outcome),
                ..
            } => self.tool_completed(
                &mut out,
                event,
                call_id,
                Ended {
                    outcome,
                    duration_ms: *duration_ms,
                },
            ),
            EventMsg::ToolCallEnd { outcome: None, .. } => {}
            // Work for a client that can read files or run terminals for rein: Codex
            // clients declare no such capability, so their threads never ask it.
            EventMsg::ClientRequested { request, .. } if request.is_client_work() => {}
            EventMsg::ClientRequested {
                request_id: approval_id,
                call_id,
                request,
            } => {
                if let Some(turn_id) = turn_id {
                    self.approvals.insert(approval_id.clone(), call_id.clone());
                    self.set_status(&mut out, active(true));
                    out.extend(approval::ask(
                        &self.thread_id,
                        approval_id,
                        call_id,
                        turn_id,
                        request,
                        event_ms(event),
                    ));
                }
            }
            EventMsg::ClientRequestResolved {
                request_id: approval_id,
                ..
            } => {
                if self.approvals.remove(approval_id).is_some() {
                    out.push(Outgoing::Withdrawn {
                        approval_id: approval_id.clone(),
                    });
                    if self.turn.is_some() {
                        let waiting = !self.approvals.is_empty();
                        self.set_status(&mut out, active(waiting));
                    }
                }
            }
            EventMsg::TokenCount {
                last,
                total,
                context_window,
            } => {
                if let Some(window) = context_window.and_then(|w| i64::try_from(w).ok()) {
                    self.context_window = Some(window);
                }
                if let Some(turn_id) = turn_id {
                    self.held_usage = Some(ServerNotification::ThreadTokenUsageUpdated(
                        ThreadTokenUsageUpdatedNotification {
                            thread_id: self.thread_id.clone(),
                            turn_id: turn_id.to_string(),
                            token_usage: ThreadTokenUsage {
                                total: usage_to_wire(total),
                                last: usage_to_wire(last),
                                model_context_window: self.context_window,
                            },
                        },
                    ));
                }
            }
            EventMsg::PlanUpdated { plan } => {
                if let Some(turn_id) = turn_id {
                    out.push(Outgoing::Notify(ServerNotification::TurnPlanUpdated(
                        TurnPlanUpdatedNotification {
                            thread_id: self.thread_id.clone(),
                            turn_id: turn_id.to_string(),
                            explanation: None,
                            plan: plan
                                .iter()
                                .map(|s| TurnPlanStep {
                                    step: s.step.clone(),
                                    status: match s.status {
                                        PlanStepStatus::Pending => "pending",
                                        PlanStepStatus::InProgress => "inProgress",
                                        PlanStepStatus::Completed => "completed",
                                    }
                                    .into(),
                                })
                                .collect(),
                        },
                    )));
                }
            }
            EventMsg::StreamRetry {
                attempt,
                max_attempts,
                message,
            } => {
                let text = format!("{message} (retry {attempt}/{max_attempts})");
                out.push(self.error_or_warning(turn_id, plain_error(text), true));
            }
            // Written by rein before patches were outcomes; the outcome carries the diffs.
            EventMsg::PatchApplied { .. } => {}
            // For replays: Codex clients have no notion of a request fingerprint.
            EventMsg::StepRequested { .. } => {}
            EventMsg::TurnDiff { unified_diff } => {
                if let Some(turn_id) = turn_id {
                    out.push(Outgoing::Notify(ServerNotification::TurnDiffUpdated(
                        TurnDiffUpdatedNotification {
                            thread_id: self.thread_id.clone(),
                            turn_id: turn_id.to_string(),
                            diff: unified_diff.clone(),
                        },
                    )));
                }
            }
            // Codex's `model/rerouted` only knows its own safety reasons; a fallback after
            // failures is told to clients as a warning.
            EventMsg::ModelRerouted { from, to, reason } => {
                out.push(Outgoing::Notify(ServerNotification::Warning(
                    WarningNotification {
                        thread_id: Some(self.thread_id.clone()),
                        message: format!("{from} failed ({reason}); continuing with {to}"),
                    },
                )));
            }
            EventMsg::CompactionStarted { .. } => {
                let id = format!("compaction-{}", event.seq);
                let item = ThreadItem::ContextCompaction { id: id.clone() };
                self.compaction = Some(id);
                if let Some(n) = self.item_started(turn_id, item, event_ms(event)) {
                    out.push(n);
                }
            }
            EventMsg::Compacted { .. } => {
                let id = self
                    .compaction
                    .take()
                    .unwrap_or_else(|| format!("compaction-{}", event.seq));
                if let Some(turn_id) = turn_id {
                    out.push(Outgoing::Notify(ServerNotification::ItemCompleted(
                        ItemCompletedNotification {
                            thread_id: self.thread_id.clone(),
                            turn_id: turn_id.to_string(),
                            item: ThreadItem::ContextCompaction { id },
                            completed_at_ms: event_ms(event),
                        },
                    )));
                }
            }
            EventMsg::HookStarted { .. } | EventMsg::HookCompleted { .. } => {
                out.extend(self.hooks.map(&self.thread_id, event).map(Outgoing::Notify));
            }
            // A proposal is asked as `rein/memory/requestApproval`; its answer is the
            // `remember` call's output, shown as the tool call's item.
            EventMsg::MemoryProposed { .. }
            | EventMsg::MemoryAccepted { .. }
            | EventMsg::MemoryRejected { .. } => {}
            // The new model shows in the thread's next `Thread` object and token counts.
            EventMsg::ModelSwitched { .. } => {}
            // Answered by the `thread/rollback` response.
            EventMsg::RolledBack { .. } => {}
            EventMsg::Warning { message } => {
                out.push(Outgoing::Notify(ServerNotification::Warning(
                    WarningNotification {
                        thread_id: Some(self.thread_id.clone()),
                        message: message.clone(),
                    },
                )));
            }
            EventMsg::Error { code, message } => {
                if let Some(turn) = &mut self.turn {
                    turn.error = Some(turn_error(*code, message));
                }
                out.push(self.error_or_warning(turn_id, turn_error(*code, message), false));
            }
            EventMsg::GoalUpdated { goal } => {
                out.push(Outgoing::Notify(ServerNotification::ThreadGoalUpdated(
                    Box::new(ThreadGoalUpdatedNotification {
                        thread_id: self.thread_id.clone(),
                        turn_id: turn_id.map(|t| t.to_string()),
                        goal: crate::handlers::goal::wire_goal(&self.thread_id, goal),
                    }),
                )));
            }
            EventMsg::GoalCleared => {
                out.push(Outgoing::Notify(ServerNotification::ThreadGoalCleared(
                    ThreadGoalClearedNotification {
                        thread_id: self.thread_id.clone(),
                    },
                )));
            }
            // Codex's wire has no checkpoints; a goal turn is an ordinary turn there.
            EventMsg::GoalTurnStarted { .. } | EventMsg::GoalCheckpointed { .. } => {}
            EventMsg::ShutdownComplete => {
                self.status = ThreadStatus::NotLoaded;
                out.push(Outgoing::Notify(ServerNotification::ThreadClosed(
                    ThreadIdNotification {
                        thread_id: self.thread_id.clone(),
                    },
                )));
                out.push(Outgoing::Closed);
            }
        }
        out
    }

    fn end_turn(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        status: TurnStatus,
        error: Option<TurnError>,
    ) {
        let Some(mut track) = self.turn.take() else {
            return;
        };
        if event.turn_id != Some(track.id) {
            self.turn = Some(track);
            return;
        }
        if error.is_some() {
            track.error = error;
        }
        self.approvals.clear();
        self.tools.retain(|_, t| t.turn_id != track.id);
        let aborted = self
            .reviews
            .end_turn(&self.thread_id, track.id, event_ms(event));
        out.extend(aborted.into_iter().map(Outgoing::Notify));
        if track.review {
            let at = event_ms(event);
            let done = review::exited(track.last_agent.as_ref());
            out.extend(self.item_started(Some(track.id), done.clone(), at));
            out.push(Outgoing::Notify(ServerNotification::ItemCompleted(
                ItemCompletedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: track.id.to_string(),
                    item: done,
                    completed_at_ms: at,
                },
            )));
        }
        let mut turn = turn_object(&track, status, Some(event_ms(event)));
        if status == TurnStatus::Interrupted {
            turn.items.clear();
            turn.items_view = TurnItemsView::NotLoaded;
            turn.error = None;
        }
        self.set_status(out, ThreadStatus::Idle);
        out.push(Outgoing::Notify(ServerNotification::TurnCompleted(
            TurnNotification {
                thread_id: self.thread_id.clone(),
                turn,
            },
        )));
    }

    fn set_status(&mut self, out: &mut Vec<Outgoing>, status: ThreadStatus) {
        if self.status == status {
            return;
        }
        self.status = status.clone();
        out.push(Outgoing::Notify(ServerNotification::ThreadStatusChanged(
            ThreadStatusChangedNotification {
                thread_id: self.thread_id.clone(),
                status,
            },
        )));
    }

    fn error_or_warning(
        &self,
        turn_id: Option<TurnId>,
        error: TurnError,
        will_retry: bool,
    ) -> Outgoing {
        Outgoing::Notify(match turn_id {
            Some(turn_id) => ServerNotification::Error(ErrorNotification {
                thread_id: self.thread_id.clone(),
                turn_id: turn_id.to_string(),
                error,
                will_retry,
            }),
            None => ServerNotification::Warning(WarningNotification {
                thread_id: Some(self.thread_id.clone()),
                message: error.message,
            }),
        })
    }
}

fn event_ms(event: &Event) -> i64 {
    i64::try_from(event.timestamp_ms).unwrap_or_else(|_| now_ms())
}

#[cfg(test)]
mod tests;
