//! The goal part of a thread's state, folded from events by the one reducer
//! (`ThreadState::apply` calls [`GoalState::apply`] for every event). Usage is derived
//! here from the events every turn records anyway (`TokenCount` at each step, the turn's
//! start and end), so it is as durable as the rollout: a kill -9 loses at most the step in
//! flight, and nothing is counted twice on resume.

use rein_protocol::{Event, EventMsg, GoalCheckpoint, GoalStatus, ThreadGoal};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct GoalState {
    pub goal: Option<ThreadGoal>,
    /// The checkpoints of the current goal, oldest first.
    pub checkpoints: Vec<GoalCheckpoint>,
    /// Since when the running turn's wall time has not been counted yet (while the goal is
    /// active and a turn runs).
    mark_ms: Option<u64>,
}

impl GoalState {
    pub fn active(&self) -> bool {
        self.goal
            .as_ref()
            .is_some_and(|g| g.status == GoalStatus::Active)
    }

    pub fn last_checkpoint(&self) -> Option<&GoalCheckpoint> {
        self.checkpoints.last()
    }

    /// Fold one event; `turn_running` is whether a turn was active before it.
    pub(crate) fn apply(&mut self, event: &Event, turn_running: bool) {
        let at = event.timestamp_ms;
        match &event.msg {
            EventMsg::GoalUpdated { goal } => {
                if self.goal.as_ref().map(|g| &g.goal_id) != Some(&goal.goal_id) {
                    self.checkpoints.clear();
                }
                self.goal = Some(goal.clone());
                self.mark_ms = (turn_running && self.active()).then_some(at);
            }
            EventMsg::GoalCleared => *self = GoalState::default(),
            EventMsg::GoalTurnStarted { .. } => {
                if let Some(goal) = &mut self.goal {
                    goal.usage.turns += 1;
                }
            }
            EventMsg::GoalCheckpointed { checkpoint } => {
                if let Some(goal) = &mut self.goal {
                    goal.idle_turns = if checkpoint.progress {
                        0
                    } else {
                        goal.idle_turns + 1
                    };
                }
                self.checkpoints.push(checkpoint.clone());
            }
            EventMsg::TurnStarted { .. } => {
                self.mark_ms = self.active().then_some(at);
            }
            EventMsg::TokenCount { last, .. } => {
                self.count_time(at);
                if let Some(goal) = self
                    .goal
                    .as_mut()
                    .filter(|g| g.status == GoalStatus::Active)
                {
                    goal.usage.tokens += last.total_tokens;
                }
            }
            EventMsg::TurnCompleted { .. }
            | EventMsg::TurnAborted { .. }
            | EventMsg::TurnFailed { .. } => {
                self.count_time(at);
                self.mark_ms = None;
            }
            _ => {}
        }
    }

    fn count_time(&mut self, at: u64) {
        let Some(mark) = self.mark_ms else { return };
        if let Some(goal) = self
            .goal
            .as_mut()
            .filter(|g| g.status == GoalStatus::Active)
        {
            goal.usage.time_ms += at.saturating_sub(mark);
            self.mark_ms = Some(at);
        }
    }
}
