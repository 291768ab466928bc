//! `/goal`: the thread's goal from an editor, through the kernel's goal ops (the same as
//! `thread/goal/*`). The answer is a message; the goal's progress shows on its card
//! (`goal_card.rs`) and its turns as the session's turns.

use rein_protocol::{GoalChange, GoalOrigin, GoalStatus, ThreadGoal};

use super::*;
use crate::goal_card::summary;
use crate::prompt::GoalCommand;

impl Agent {
    /// Carry out `/goal …`; what to tell the user.
    pub(super) async fn goal_command(&self, session: &Session, command: GoalCommand) -> String {
        match command {
            GoalCommand::Status => match session.handle.state().await {
                Ok(state) => match &state.goal.goal {
                    Some(goal) => {
                        let note = state.goal.checkpoints.last().map(|c| c.note.as_str());
                        summary(goal, note)
                    }
                    None => "No goal. Set one with /goal OBJECTIVE.".to_owned(),
                },
                Err(e) => format!("Cannot read the goal: {e}"),
            },
            GoalCommand::Clear => match goal_op(session, Op::ClearGoal).await {
                Ok(Some(goal)) => format!("Goal cleared: {}", goal.objective),
                Ok(None) => "There was no goal.".to_owned(),
                Err(e) => format!("Cannot clear the goal: {e}"),
            },
            GoalCommand::Set {
                objective,
                auto_resume,
            } => set_goal(session, objective, auto_resume).await,
        }
    }
}

/// `/goal OBJECTIVE`: a goal the agent works on now. A goal still in play (active or
/// paused) gets the new objective and keeps its usage, as `thread/goal/set` does; one that
/// has ended (complete, blocked, out of budget or usage) is replaced by a new one, since
/// asking for a goal again means starting again. Either way it is set active.
/// `auto_resume` sets the goal's own auto-resume (else `[goals] auto_resume` decides).
async fn set_goal(session: &Session, objective: String, auto_resume: bool) -> String {
    let ended = match session.handle.state().await {
        Ok(state) => state
            .goal
            .goal
            .is_some_and(|g| !matches!(g.status, GoalStatus::Active | GoalStatus::Paused)),
        Err(e) => return format!("Cannot read the goal: {e}"),
    };
    if ended {
        if let Err(e) = goal_op(session, Op::ClearGoal).await {
            return format!("Cannot replace the goal: {e}");
        }
    }
    let change = GoalChange {
        objective: Some(objective),
        status: Some(GoalStatus::Active),
        budget: None,
        criteria: None,
        origin: GoalOrigin::User,
        auto_resume: auto_resume.then_some(true),
    };
    match goal_op(session, Op::SetGoal { change }).await {
        Ok(Some(goal)) => format!(
            "Goal set ({}{}): {}\nThe agent works on it in turns of its own; /goal shows where \
             it stands, /goal clear removes it.",
            goal.status.as_str(),
            if goal.auto_resume == Some(true) {
                ", continues after a restart"
            } else {
                ""
            },
            goal.objective
        ),
        Ok(None) => "The goal was not returned.".to_owned(),
        Err(e) => format!("Cannot set the goal: {e}"),
    }
}

/// Submit a goal op; the goal it answers with, or why it was refused.
async fn goal_op(session: &Session, op: Op) -> Result<Option<ThreadGoal>, String> {
    match session.handle.submit(op).await {
        Ok(OpResult::Goal { goal }) => Ok(goal),
        Ok(OpResult::GoalRefused { error }) => Err(error.to_string()),
        Ok(other) => Err(format!("unexpected answer from the thread: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}
