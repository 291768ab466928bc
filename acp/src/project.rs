//! Kernel events → `session/update`s. One [`Projector`] per session folds its thread's
//! events into the updates a client draws: message and thought chunks, tool calls from the
//! tool facts, the plan, usage, the title. The same projector serves a live turn and the
//! replay of `session/load` (the rollout's events, in order), so a loaded session shows
//! what the live one showed; the match is exhaustive, so a new event that is not mapped
//! fails to compile.
//!
//! Deltas are not in the rollout: a message or thought streamed live arrives as its
//! deltas, one replayed as one chunk of its whole text. The updates of a turn's end (its
//! stop reason) are the session's business, not the projector's.

use std::collections::{HashMap, HashSet};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ImageContent, MessageId, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionInfoUpdate, SessionUpdate, Terminal, TerminalId, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use rein_protocol::{
    Event, EventMsg, InputPart, Item, ItemId, PlanStep, PlanStepStatus, TaskGraph, TaskState,
    ThreadId, ToolAction,
};

use crate::cards::{self, Agents};
use crate::goal_card::GoalCard;
use crate::tool_calls::{self, TerminalDisplay};

/// Whether the events are a turn happening now or a history read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The client sent the prompts itself; user messages are not echoed.
    Live,
    /// `session/load`: user messages are part of what is replayed.
    Replay,
}

/// What a session remembers between events to project them.
pub struct Projector {
    mode: Mode,
    display: TerminalDisplay,
    /// Calls that began and have not ended: their tool and action.
    open: HashMap<String, ToolAction>,
    /// Items whose text arrived as deltas (so their completion repeats nothing).
    streamed: HashSet<ItemId>,
    /// The cards of the thread's sub-agents.
    agents: Agents,
    /// Calls whose command runs in a terminal of the client: their card shows it to the end.
    client_terminals: HashMap<String, TerminalId>,
    /// The thread's task graph, folded from its changes: shown as the session's plan.
    graph: TaskGraph,
    /// The last event the graph was seeded through ([`Projector::seed_graph`]): changes up
    /// to it are in the graph already.
    graph_seq: Option<u64>,
    /// The thread's goal, shown as a card.
    goal: GoalCard,
}

impl Projector {
    pub fn new(mode: Mode, display: TerminalDisplay) -> Self {
        Self {
            mode,
            display,
            open: HashMap::new(),
            streamed: HashSet::new(),
            agents: Agents::default(),
            client_terminals: HashMap::new(),
            graph: TaskGraph::default(),
            graph_seq: None,
            goal: GoalCard::default(),
        }
    }

    /// Start from the thread's graph as folded through event `seq` (a live session of a
    /// thread that already has one), so its next change shows the whole plan.
    pub fn seed_graph(&mut self, graph: TaskGraph, seq: Option<u64>) {
        self.graph = graph;
        self.graph_seq = seq;
    }

    /// The updates `event` makes, in order (often none).
    ///
    /// One match over every event kind, with no wildcard arm, on purpose: a new event does
    /// not compile until this projection decides its updates (which is why it is long).
    pub fn project(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match &event.msg {
            EventMsg::AgentMessageDelta { item_id, delta } => {
                self.streamed.insert(item_id.clone());
                vec![SessionUpdate::AgentMessageChunk(chunk(item_id, delta))]
            }
            EventMsg::ReasoningDelta { item_id, delta } => {
                self.streamed.insert(item_id.clone());
                vec![SessionUpdate::AgentThoughtChunk(chunk(item_id, delta))]
            }
            EventMsg::ItemCompleted { item } => self.completed(item),
            EventMsg::ToolCallBegin {
                call_id,
                name,
                arguments,
                action,
            } => {
                let opened = tool_calls::opened(call_id, name, arguments, action, self.display);
                self.open.insert(call_id.clone(), action.clone());
                opened.map(SessionUpdate::ToolCall).into_iter().collect()
            }
            EventMsg::ToolOutputDelta { call_id, delta } => {
                tool_calls::output_delta(call_id, self.open.get(call_id), delta, self.display)
                    .map(SessionUpdate::ToolCallUpdate)
                    .into_iter()
                    .collect()
            }
            EventMsg::ToolCallEnd {
                call_id, outcome, ..
            } => {
                let action = self.open.remove(call_id);
                let terminal = self.client_terminals.remove(call_id);
                tool_calls::closed(call_id, action.as_ref(), outcome, self.display)
                    .map(|mut update| {
                        if let Some(terminal) = terminal {
                            update.fields.content =
                                Some(vec![ToolCallContent::Terminal(Terminal::new(terminal))]);
                        }
                        SessionUpdate::ToolCallUpdate(update)
                    })
                    .into_iter()
                    .collect()
            }
            EventMsg::PlanUpdated { plan } => vec![SessionUpdate::Plan(plan_of(plan))],
            EventMsg::ThreadNamed { name } => {
                vec![SessionUpdate::SessionInfoUpdate(
                    SessionInfoUpdate::new().title(one_line(name)),
                )]
            }
            EventMsg::TokenCount {
                last,
                context_window: Some(size),
                ..
            } => {
                let used = last.input_tokens + last.output_tokens;
                vec![SessionUpdate::UsageUpdate(UsageUpdate::new(used, *size))]
            }
            EventMsg::CompactionStarted { .. } => {
                let call = ToolCall::new(compaction_id(event), "Compact the conversation")
                    .kind(ToolKind::Think)
                    .status(ToolCallStatus::InProgress);
                vec![SessionUpdate::ToolCall(call)]
            }
            EventMsg::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => {
                let fields = ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .raw_output(serde_json::json!({
                        "tokens_before": tokens_before,
                        "tokens_after": tokens_after,
                    }));
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    compaction_id(event),
                    fields,
                ))]
            }
            EventMsg::AgentSpawned {
                thread_id,
                nickname,
                role,
                task,
            } => vec![self.agents.spawned(
                *thread_id,
                nickname.as_deref(),
                role.as_deref(),
                task,
            )],
            EventMsg::AgentTasked { thread_id, task } => self.agents.tasked(*thread_id, task),
            EventMsg::AgentClosed { thread_id } => self.agents.closed(*thread_id),
            EventMsg::AdvisorReviewStarted {
                review_id,
                risk,
                calls,
                ..
            } => vec![cards::review_started(review_id, *risk, calls)],
            EventMsg::AdvisorReviewCompleted {
                review_id, verdict, ..
            } => vec![cards::review_completed(review_id, verdict)],
            EventMsg::HookStarted {
                run_id,
                event_name,
                command,
                ..
            } => vec![cards::hook_started(run_id, *event_name, command)],
            EventMsg::HookCompleted {
                run_id,
                status,
                message,
                ..
            } => vec![cards::hook_completed(run_id, *status, message.as_deref())],
            // The root's turn was aborted: its running nodes are cancelled (the kernel's
            // fold does the same).
            EventMsg::TurnAborted { .. } if !self.graph.is_empty() => {
                self.graph.cancel_running(event.timestamp_ms);
                vec![SessionUpdate::Plan(graph_plan(&self.graph))]
            }
            EventMsg::TurnAborted { .. } => Vec::new(),
            EventMsg::TaskGraphChanged { change } => {
                if self.graph_seq.is_some_and(|seen| event.seq <= seen) {
                    return Vec::new();
                }
                self.graph.apply(change, event.timestamp_ms);
                vec![SessionUpdate::Plan(graph_plan(&self.graph))]
            }
            EventMsg::GoalUpdated { goal } => vec![self.goal.updated(goal)],
            EventMsg::GoalCheckpointed { checkpoint } => {
                self.goal.checkpointed(checkpoint).into_iter().collect()
            }
            EventMsg::GoalCleared => self.goal.cleared().into_iter().collect(),
            EventMsg::TokenCount { .. }
            | EventMsg::ThreadConfigured { .. }
            | EventMsg::SettingsChanged { .. }
            | EventMsg::MailQueued { .. }
            | EventMsg::MailTaken { .. }
            | EventMsg::TurnStarted { .. }
            | EventMsg::TurnCompleted { .. }
            | EventMsg::TurnFailed { .. }
            | EventMsg::ItemStarted { .. }
            | EventMsg::ClientRequested { .. }
            | EventMsg::ClientRequestResolved { .. }
            // Carried by the `patched` outcome of the call's end.
            | EventMsg::PatchApplied { .. }
            | EventMsg::TurnDiff { .. }
            | EventMsg::StreamRetry { .. }
            | EventMsg::StepRequested { .. }
            | EventMsg::ModelRerouted { .. }
            | EventMsg::ModelSwitched { .. }
            | EventMsg::RolledBack { .. }
            | EventMsg::Warning { .. }
            | EventMsg::Error { .. }
            // This thread is itself a sub-agent: its parent's session shows it.
            | EventMsg::AgentOrigin { .. }
            | EventMsg::ContextLoaded { .. }
            | EventMsg::SkillActivated { .. }
            // Asked as a permission of the `remember` call; its answer is the call's output.
            | EventMsg::MemoryProposed { .. }
            | EventMsg::MemoryAccepted { .. }
            | EventMsg::MemoryRejected { .. }
            // Decides the next turns' tools and recall; nothing to show.
            | EventMsg::MemoryModeSet { .. }
            // The goal's turns show as turns; its card counts them.
            | EventMsg::GoalTurnStarted { .. }
            | EventMsg::ShutdownComplete => Vec::new(),
        }
    }

    /// An event of sub-agent `child` of this thread, for its card.
    pub fn project_child(&mut self, child: ThreadId, msg: &EventMsg) -> Vec<SessionUpdate> {
        self.agents.child_event(child, msg)
    }

    /// The command of the running call `call_id` runs in the client's `terminal`: the
    /// update that puts it on the card, where it stays when the call ends (a replay, which
    /// has no such terminal any more, shows the output as text).
    pub fn client_terminal(&mut self, call_id: &str, terminal: TerminalId) -> ToolCallUpdate {
        self.client_terminals
            .insert(call_id.to_owned(), terminal.clone());
        ToolCallUpdate::new(
            call_id.to_owned(),
            ToolCallUpdateFields::new()
                .content(vec![ToolCallContent::Terminal(Terminal::new(terminal))]),
        )
    }

    /// The action of a call that is running, for a permission request about it.
    pub fn open_action(&self, call_id: &str) -> Option<&ToolAction> {
        self.open.get(call_id)
    }

    fn completed(&mut self, item: &Item) -> Vec<SessionUpdate> {
        match item {
            Item::AgentMessage { id, text, .. }
                if !self.streamed.remove(id) && !text.is_empty() =>
            {
                vec![SessionUpdate::AgentMessageChunk(chunk(id, text))]
            }
            Item::Reasoning { id, text, .. } if !self.streamed.remove(id) && !text.is_empty() => {
                vec![SessionUpdate::AgentThoughtChunk(chunk(id, text))]
            }
            Item::AgentMessage { id, .. } | Item::Reasoning { id, .. } => {
                self.streamed.remove(id);
                Vec::new()
            }
            Item::UserMessage { id, content } if self.mode == Mode::Replay => content
                .iter()
                .filter_map(|part| user_block(part).map(|b| (id, b)))
                .map(|(id, block)| {
                    SessionUpdate::UserMessageChunk(
                        ContentChunk::new(block).message_id(MessageId::new(id.0.clone())),
                    )
                })
                .collect(),
            Item::UserMessage { .. }
            | Item::ToolCall { .. }
            | Item::ToolOutput { .. }
            | Item::DeveloperMessage { .. }
            | Item::Interruption { .. } => Vec::new(),
        }
    }
}

fn chunk(id: &ItemId, text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text.to_owned())).message_id(MessageId::new(id.0.clone()))
}

/// A user's input part as the client sent it (an image by `data:` URL back as its data).
fn user_block(part: &InputPart) -> Option<ContentBlock> {
    match part {
        InputPart::Text { text } => Some(ContentBlock::from(text.clone())),
        // The client sent the `$name` that attached it, not the file's text.
        InputPart::Skill { .. } => None,
        InputPart::Image { url } => {
            let (mime, data) = url
                .strip_prefix("data:")
                .and_then(|rest| rest.split_once(";base64,"))?;
            Some(ContentBlock::Image(ImageContent::new(data, mime)))
        }
    }
}

fn plan_of(plan: &[PlanStep]) -> Plan {
    Plan::new(
        plan.iter()
            .map(|s| {
                let status = match s.status {
                    PlanStepStatus::Pending => PlanEntryStatus::Pending,
                    PlanStepStatus::InProgress => PlanEntryStatus::InProgress,
                    PlanStepStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(s.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// The task graph as the session's plan: one entry per node, in plan order, named by its
/// title and role; a node that cannot run any more (failed, blocked, skipped, cancelled)
/// is an ended entry whose text says so, since ACP plans have no failed state.
fn graph_plan(graph: &TaskGraph) -> Plan {
    Plan::new(
        graph
            .nodes
            .iter()
            .map(|node| {
                let (status, note) = match node.state {
                    TaskState::Pending | TaskState::Ready => (PlanEntryStatus::Pending, ""),
                    TaskState::Running => (PlanEntryStatus::InProgress, ""),
                    TaskState::Completed => (PlanEntryStatus::Completed, ""),
                    TaskState::Failed => (PlanEntryStatus::Completed, " (failed)"),
                    TaskState::Blocked => (PlanEntryStatus::Completed, " (blocked)"),
                    TaskState::Skipped => (PlanEntryStatus::Completed, " (skipped)"),
                    TaskState::Cancelled => (PlanEntryStatus::Completed, " (cancelled)"),
                };
                let text = format!("{} [{}]{note}", node.spec.title, node.spec.role);
                PlanEntry::new(text, PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// The card of a compaction is named after its turn, so its start and end meet.
fn compaction_id(event: &Event) -> String {
    match &event.turn_id {
        Some(turn) => format!("compaction-{turn}"),
        None => format!("compaction-{}", event.thread_id),
    }
}

/// A title on one line: Zed's sidebar breaks on a newline.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;
