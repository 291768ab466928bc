//! Cards for what is not one tool call: a sub-agent (a card per child thread, opened when
//! the parent spawns it, whose content follows the child's answers and whose status its
//! turns), an advisor review (a `think` card per reviewed batch, closed with the
//! verdict, as codex-acp shows a guardian review) and a user hook's run (a card per run,
//! closed with how it ended, so the user sees why a call was blocked). All are built from
//! kernel events only.

use std::collections::{HashMap, HashSet};

use agent_client_protocol::v1::schema::{
    ContentBlock, Meta, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use rein_protocol::{
    AdvisorFailure, AdvisorRisk, AdvisorVerdict, EventMsg, HookEventName, HookRunStatus, Item,
    ItemId, ReviewedCall, ThreadId,
};

use crate::project::one_line;
use crate::tool_calls;

/// The card of sub-agent `child`.
pub fn agent_card_id(child: &ThreadId) -> String {
    format!("agent-{child}")
}

fn review_card_id(review_id: &str) -> String {
    format!("advisor-{review_id}")
}

/// What the cards of a session's sub-agents remember.
#[derive(Default)]
pub struct Agents {
    children: HashMap<ThreadId, Child>,
}

struct Child {
    name: String,
    /// The child's answers so far, in order: the card's content.
    answers: Vec<String>,
    seen: HashSet<ItemId>,
}

impl Agents {
    pub fn spawned(
        &mut self,
        child: ThreadId,
        nickname: Option<&str>,
        role: Option<&str>,
        task: &str,
    ) -> SessionUpdate {
        let name = nickname.or(role).unwrap_or("agent").to_owned();
        let call = ToolCall::new(agent_card_id(&child), title(&name, task))
            .kind(ToolKind::Other)
            .status(ToolCallStatus::InProgress)
            .raw_input(serde_json::json!({
                "threadId": child, "nickname": nickname, "role": role, "task": task,
            }))
            .meta(meta(&child));
        self.children.insert(
            child,
            Child {
                name,
                answers: Vec::new(),
                seen: HashSet::new(),
            },
        );
        SessionUpdate::ToolCall(call)
    }

    pub fn tasked(&mut self, child: ThreadId, task: &str) -> Vec<SessionUpdate> {
        let Some(known) = self.children.get(&child) else {
            return Vec::new();
        };
        let fields = ToolCallUpdateFields::new()
            .title(title(&known.name, task))
            .status(ToolCallStatus::InProgress);
        vec![update(&child, fields)]
    }

    pub fn closed(&mut self, child: ThreadId) -> Vec<SessionUpdate> {
        if self.children.remove(&child).is_none() {
            return Vec::new();
        }
        vec![update(
            &child,
            ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
        )]
    }

    /// An event of the child thread `child` (followed live; replays do not include them).
    pub fn child_event(&mut self, child: ThreadId, msg: &EventMsg) -> Vec<SessionUpdate> {
        let Some(known) = self.children.get_mut(&child) else {
            return Vec::new();
        };
        let fields = match msg {
            EventMsg::ItemCompleted {
                item: Item::AgentMessage { id, text, .. },
            } if !text.is_empty() && known.seen.insert(id.clone()) => {
                known.answers.push(text.clone());
                ToolCallUpdateFields::new().content(
                    known
                        .answers
                        .iter()
                        .map(|a| ToolCallContent::from(ContentBlock::from(a.clone())))
                        .collect::<Vec<_>>(),
                )
            }
            EventMsg::TurnStarted { .. } => {
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress)
            }
            EventMsg::TurnCompleted { .. } => {
                ToolCallUpdateFields::new().status(ToolCallStatus::Completed)
            }
            EventMsg::TurnFailed { .. } | EventMsg::TurnAborted { .. } => {
                ToolCallUpdateFields::new().status(ToolCallStatus::Failed)
            }
            _ => return Vec::new(),
        };
        vec![update(&child, fields)]
    }
}

fn title(name: &str, task: &str) -> String {
    one_line(&format!("Sub-agent {name}: {task}"))
}

fn meta(child: &ThreadId) -> Meta {
    let mut meta = Meta::new();
    meta.insert(
        "rein".into(),
        serde_json::json!({ "subagent": { "threadId": child } }),
    );
    meta
}

fn update(child: &ThreadId, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(agent_card_id(child), fields))
}

/// The card of an advisor review, opened as the review starts.
pub fn review_started(review_id: &str, risk: AdvisorRisk, calls: &[ReviewedCall]) -> SessionUpdate {
    let risky = match risk {
        AdvisorRisk::High => " (high risk)",
        AdvisorRisk::Low => "",
    };
    let lines: Vec<String> = calls
        .iter()
        .map(|c| {
            let title = tool_calls::title(&c.tool, &c.action);
            match &c.risk {
                Some(why) => format!("- {title}: {why}"),
                None => format!("- {title}"),
            }
        })
        .collect();
    let call = ToolCall::new(
        review_card_id(review_id),
        format!("Advisor review of {} call(s){risky}", calls.len()),
    )
    .kind(ToolKind::Think)
    .status(ToolCallStatus::InProgress)
    .content(vec![ToolCallContent::from(ContentBlock::from(
        lines.join("\n"),
    ))])
    .raw_input(serde_json::json!({
        "calls": calls.iter().map(|c| &c.call_id).collect::<Vec<_>>(),
    }));
    SessionUpdate::ToolCall(call)
}

/// The verdict on the card: a rejected batch fails (none of its calls runs).
pub fn review_completed(review_id: &str, verdict: &AdvisorVerdict) -> SessionUpdate {
    let (status, text) = match verdict {
        AdvisorVerdict::Approve { reason } => {
            (ToolCallStatus::Completed, format!("Approved: {reason}"))
        }
        AdvisorVerdict::ApproveWithWarnings { reason } => (
            ToolCallStatus::Completed,
            format!("Approved with warnings: {reason}"),
        ),
        AdvisorVerdict::Reject { reason } => {
            (ToolCallStatus::Failed, format!("Rejected: {reason}"))
        }
        AdvisorVerdict::FailedOpen { failure, message } => (
            ToolCallStatus::Completed,
            format!(
                "The advisor failed ({}): {message}; the calls went on to the approval policy",
                failure_name(*failure)
            ),
        ),
    };
    let fields = ToolCallUpdateFields::new()
        .status(status)
        .content(vec![ToolCallContent::from(ContentBlock::from(text))])
        .raw_output(serde_json::to_value(verdict).unwrap_or_default());
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(review_card_id(review_id), fields))
}

fn failure_name(failure: AdvisorFailure) -> &'static str {
    match failure {
        AdvisorFailure::Error => "error",
        AdvisorFailure::Timeout => "timeout",
        AdvisorFailure::Garbage => "an unusable answer",
    }
}

fn hook_card_id(run_id: &str) -> String {
    format!("hook-{run_id}")
}

/// The card of a hook run, opened as it starts.
pub fn hook_started(run_id: &str, event: HookEventName, command: &str) -> SessionUpdate {
    let call = ToolCall::new(
        hook_card_id(run_id),
        format!("{} hook: {}", event.as_str(), one_line(command)),
    )
    .kind(ToolKind::Other)
    .status(ToolCallStatus::InProgress);
    SessionUpdate::ToolCall(call)
}

/// How the run ended: a block completes the card with its reason (the hook did its job),
/// a failure fails it.
pub fn hook_completed(run_id: &str, status: HookRunStatus, message: Option<&str>) -> SessionUpdate {
    let (status, text) = match status {
        HookRunStatus::Completed => (ToolCallStatus::Completed, None),
        HookRunStatus::Blocked => (
            ToolCallStatus::Completed,
            Some(format!("Blocked: {}", message.unwrap_or("no reason given"))),
        ),
        HookRunStatus::Failed => (
            ToolCallStatus::Failed,
            Some(format!("Failed: {}", message.unwrap_or("no detail"))),
        ),
    };
    let mut fields = ToolCallUpdateFields::new().status(status);
    if let Some(text) = text {
        fields = fields.content(vec![ToolCallContent::from(ContentBlock::from(text))]);
    }
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(hook_card_id(run_id), fields))
}
