//! The goal part of a thread's state, folded from events by the one reducer
//! (`ThreadState::apply` calls `GoalState::apply` for every event). Usage is derived
//! here from the events every turn records anyway (`TokenCount` at each step, the turn's
//! start and end), so it is as durable as the rollout: a kill -9 loses at most the step in
//! flight, and nothing is counted twice on resume.

use std::sync::Arc;

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

/// The goal as a turn found it (see `GoalState::roll_back`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GoalMark {
    goal: Option<Arc<ThreadGoal>>,
    checkpoints: usize,
}

impl GoalState {
    /// Where the goal stands now, for a turn that starts.
    pub(crate) fn mark(&self) -> GoalMark {
        GoalMark {
            goal: self.goal.clone().map(Arc::new),
            checkpoints: self.checkpoints.len(),
        }
    }

    /// A rollback drops turns: the goal is as it was when the first of them started
    /// (objective, status, criteria and the checkpoints before it), except its usage,
    /// which stays: what was spent was spent.
    pub(crate) fn roll_back(&mut self, mark: &GoalMark) {
        let usage = self.goal.as_ref().map(|g| g.usage);
        self.goal = mark.goal.as_deref().cloned();
        if let (Some(goal), Some(usage)) = (&mut self.goal, usage) {
            goal.usage = usage;
        }
        self.checkpoints.truncate(mark.checkpoints);
        self.mark_ms = None;
    }

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
                    } else if checkpoint.waited {
                        goal.idle_turns
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

#[cfg(test)]
mod tests {
    use crate::thread::state::ThreadState;
    use rein_protocol::{
        Event, EventMsg, GoalBudget, GoalStatus, GoalUsage, TaskKind, ThreadGoal, ThreadId,
        TokenUsage, TurnAbortReason, TurnId,
    };

    fn goal(status: GoalStatus, objective: &str) -> ThreadGoal {
        ThreadGoal {
            goal_id: "g".into(),
            objective: objective.into(),
            status,
            budget: GoalBudget::default(),
            usage: GoalUsage::default(),
            carved: GoalBudget::default(),
            criteria: Vec::new(),
            idle_turns: 0,
            reason: None,
            origin: rein_protocol::GoalOrigin::User,
            retry_at_ms: None,
            auto_resume: None,
            created_ms: 0,
            updated_ms: 0,
        }
    }

    struct Log {
        thread: ThreadId,
        events: Vec<Event>,
    }

    impl Log {
        fn push(&mut self, turn: Option<TurnId>, at: u64, msg: EventMsg) {
            let seq = self.events.len() as u64;
            self.events.push(Event {
                thread_id: self.thread,
                turn_id: turn,
                seq,
                timestamp_ms: at,
                msg,
            });
        }

        fn turn(&mut self, at: u64, tokens: u64) -> TurnId {
            let turn = TurnId::new();
            let settings = rein_test_settings();
            self.push(
                Some(turn),
                at,
                EventMsg::TurnStarted {
                    kind: TaskKind::Regular,
                    settings,
                    recovered: false,
                    output_schema: None,
                },
            );
            let last = TokenUsage {
                total_tokens: tokens,
                ..TokenUsage::default()
            };
            self.push(
                Some(turn),
                at + 100,
                EventMsg::TokenCount {
                    last,
                    total: last,
                    context_window: None,
                },
            );
            self.push(
                Some(turn),
                at + 150,
                EventMsg::TurnAborted {
                    reason: TurnAbortReason::Interrupted,
                },
            );
            turn
        }
    }

    fn rein_test_settings() -> rein_protocol::ThreadSettings {
        rein_protocol::ThreadSettings {
            model: "m".into(),
            cwd: "/".into(),
            approval_policy: rein_protocol::ApprovalPolicy::Never,
            sandbox_policy: rein_protocol::SandboxPolicy::ReadOnly,
            sandbox_options: None,
            reasoning_effort: None,
            budget: rein_protocol::TurnBudget::default(),
            instructions: String::new(),
        }
    }

    #[test]
    fn usage_is_folded_from_turns_while_active_and_a_rollback_restores_the_goal_not_its_usage() {
        let mut log = Log {
            thread: ThreadId::new(),
            events: Vec::new(),
        };
        log.push(
            None,
            0,
            EventMsg::GoalUpdated {
                goal: goal(GoalStatus::Active, "first"),
            },
        );
        log.turn(1_000, 40);
        log.push(
            None,
            2_000,
            EventMsg::GoalUpdated {
                goal: {
                    let mut g = goal(GoalStatus::Active, "edited");
                    g.usage = GoalUsage {
                        tokens: 40,
                        time_ms: 150,
                        turns: 0,
                    };
                    g
                },
            },
        );
        log.turn(3_000, 60);
        let state = ThreadState::from_events(&log.events);
        let now = state.goal.goal.unwrap();
        assert_eq!(now.objective, "edited");
        assert_eq!(
            now.usage,
            GoalUsage {
                tokens: 100,
                time_ms: 300,
                turns: 0
            }
        );

        let mut third = now;
        third.objective = "third".into();
        log.push(None, 3_500, EventMsg::GoalUpdated { goal: third });
        log.push(None, 4_000, EventMsg::RolledBack { turns: 1 });
        let state = ThreadState::from_events(&log.events);
        let back = state.goal.goal.unwrap();
        assert_eq!(back.objective, "edited", "as the dropped turn found it");
        assert_eq!(back.usage.tokens, 100, "spent stays spent");
    }
}
