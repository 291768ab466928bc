//! The thread's goal as a card: one `think` card per goal (named by its id), opened when
//! the goal is set, its title and status following every `goal_updated`, its content the
//! goal's usage and reason and the note of its last checkpoint, closed when the goal is
//! cleared. ACP has no goal object; a card is what editors already draw, and it does not
//! take the session's plan from the model. Built from kernel events only, so a
//! `session/load` replays it as the live session showed it.

use std::collections::HashSet;

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use rein_protocol::{GoalCheckpoint, GoalStatus, ThreadGoal};

use crate::project::one_line;

/// What the goal card of a session remembers.
#[derive(Default)]
pub struct GoalCard {
    /// The goal as last recorded, and the note of its last checkpoint.
    goal: Option<ThreadGoal>,
    note: Option<String>,
    /// The goals whose card is open already.
    opened: HashSet<String>,
}

fn card_id(goal: &ThreadGoal) -> String {
    format!("goal-{}", goal.goal_id)
}

/// A card's status: running while the kernel drives the goal, waiting while it is paused
/// or waits out a usage limit, done when complete, failed when it cannot go on.
fn card_status(status: GoalStatus) -> ToolCallStatus {
    match status {
        GoalStatus::Active => ToolCallStatus::InProgress,
        GoalStatus::Paused | GoalStatus::UsageLimited => ToolCallStatus::Pending,
        GoalStatus::Complete => ToolCallStatus::Completed,
        GoalStatus::Blocked | GoalStatus::BudgetLimited => ToolCallStatus::Failed,
    }
}

fn title(goal: &ThreadGoal) -> String {
    one_line(&format!(
        "Goal ({}): {}",
        goal.status.as_str(),
        goal.objective
    ))
}

/// The goal's status in a few lines: what `/goal` says and the card shows.
pub fn summary(goal: &ThreadGoal, note: Option<&str>) -> String {
    let of = |limit: Option<String>| limit.map(|l| format!(" of {l}")).unwrap_or_default();
    let mut text = format!(
        "Goal ({}): {}\nUsed: {} tokens{}, {} s{}, {} goal turns{}",
        goal.status.as_str(),
        goal.objective,
        goal.usage.tokens,
        of(goal.budget.tokens.map(|n| n.to_string())),
        goal.usage.time_ms / 1000,
        of(goal.budget.wall_time_ms.map(|ms| format!("{}", ms / 1000))),
        goal.usage.turns,
        of(goal.budget.turns.map(|n| n.to_string())),
    );
    if let Some(reason) = &goal.reason {
        text.push_str(&format!("\nWhy: {reason}"));
    }
    if let Some(note) = note.filter(|n| !n.is_empty()) {
        text.push_str(&format!("\nLast turn: {note}"));
    }
    text
}

fn content(text: String) -> Vec<ToolCallContent> {
    vec![ToolCallContent::from(ContentBlock::from(text))]
}

impl GoalCard {
    pub fn updated(&mut self, goal: &ThreadGoal) -> SessionUpdate {
        if self.goal.as_ref().map(|g| &g.goal_id) != Some(&goal.goal_id) {
            self.note = None;
        }
        self.goal = Some(goal.clone());
        let text = summary(goal, self.note.as_deref());
        if self.opened.insert(goal.goal_id.clone()) {
            return SessionUpdate::ToolCall(
                ToolCall::new(card_id(goal), title(goal))
                    .kind(ToolKind::Think)
                    .status(card_status(goal.status))
                    .content(content(text)),
            );
        }
        let fields = ToolCallUpdateFields::new()
            .title(title(goal))
            .status(card_status(goal.status))
            .content(content(text));
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(card_id(goal), fields))
    }

    pub fn checkpointed(&mut self, checkpoint: &GoalCheckpoint) -> Option<SessionUpdate> {
        let goal = self.goal.as_ref()?;
        self.note = Some(checkpoint.note.clone());
        let fields =
            ToolCallUpdateFields::new().content(content(summary(goal, self.note.as_deref())));
        Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            card_id(goal),
            fields,
        )))
    }

    pub fn cleared(&mut self) -> Option<SessionUpdate> {
        let goal = self.goal.take()?;
        self.note = None;
        let fields = ToolCallUpdateFields::new()
            .title(one_line(&format!("Goal cleared: {}", goal.objective)))
            .status(ToolCallStatus::Completed);
        Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            card_id(&goal),
            fields,
        )))
    }
}
