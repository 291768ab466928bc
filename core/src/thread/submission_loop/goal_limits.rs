//! The goal at its limits: a thread loaded again (paused, or continued when `[goals]
//! auto_resume` says so), the provider's usage limit (retried later, not a failure) and a
//! spent budget (the goal ends with a wrap-up turn the user sees). See `docs/goals.md`.

use std::time::Duration;

use rein_protocol::{
    BudgetKind, EventMsg, GoalOrigin, GoalStatus, Item, ItemId, ThreadGoal, TurnId,
};
use tokio::time::Instant;

use super::goal::{now_ms, Opening};
use super::SubmissionLoop;
use crate::goal::policy;

fn ms(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}

impl SubmissionLoop {
    /// This thread is a fork in its first life: a goal it copied stays paused.
    pub(crate) fn goal_forked(&mut self, forked: bool) {
        self.goal_driver.forked = forked;
    }

    /// A thread loaded from its rollout never continues a goal by surprise: one the kernel
    /// still drove comes back paused (one call resumes it), unless the goal's own
    /// `auto_resume` (set by `thread/goal/set`), or else `[goals] auto_resume`, says to go
    /// on. A fork's copy is paused either way.
    pub(super) fn goal_on_load(&mut self) {
        let Some(goal) = self.goal().cloned() else {
            return;
        };
        self.offer_goal_tools();
        if !goal.driven() {
            return;
        }
        if self.goal_driver.forked {
            self.set_goal_status(
                GoalStatus::Paused,
                Some("copied by a fork; set it active to continue it here".into()),
            );
        } else if goal
            .auto_resume
            .unwrap_or(self.services.config.goal_auto_resume)
        {
            // A usage-limit retry keeps its time; an active goal continues at once.
            let wait = goal.retry_at_ms.map_or(0, |at| at.saturating_sub(now_ms()));
            let mut goal = goal;
            goal.reason = Some("continued after the thread was loaded again (auto_resume)".into());
            self.record_goal(goal, GoalOrigin::Automatic);
            self.goal_driver.wake = Some(Instant::now() + Duration::from_millis(wait));
        } else {
            self.set_goal_status(
                GoalStatus::Paused,
                Some("paused when the thread was loaded again; set it active to resume".into()),
            );
        }
    }

    /// A goal turn failed at the provider's usage limit: `usage_limited`, and a retry
    /// later (doubling waits) while retries are left. Then it stays `usage_limited`.
    pub(super) fn usage_limited(&mut self, message: &str) {
        let Some(mut goal) = self.goal().cloned() else {
            return;
        };
        let config = &self.services.config;
        let (max, base) = (config.goal_usage_retries, config.goal_usage_retry);
        goal.status = GoalStatus::UsageLimited;
        if self.goal_driver.usage_retries < max {
            self.goal_driver.usage_retries += 1;
            let n = self.goal_driver.usage_retries;
            let wait = policy::usage_retry_wait(base, n);
            goal.retry_at_ms = Some(now_ms().saturating_add(ms(wait)));
            goal.reason = Some(format!(
                "the provider's usage limit: {message}; retry {n} of {max} in {} ms",
                ms(wait)
            ));
            self.record_goal(goal, GoalOrigin::Automatic);
            self.goal_driver.wake = Some(Instant::now() + wait);
        } else {
            goal.retry_at_ms = None;
            goal.reason = Some(format!(
                "the provider's usage limit: {message}; {max} retries used, set the goal active to try again"
            ));
            self.record_goal(goal, GoalOrigin::Automatic);
            self.goal_driver.wake = None;
        }
    }

    /// A budget is spent: the goal ends `budget_limited`, after the wrap-up turn opens
    /// (so a client following the goal sees the turn before the status).
    pub(super) fn budget_limit(&mut self, kind: BudgetKind) {
        let Some(goal) = self.goal().cloned() else {
            return;
        };
        let text = policy::budget_text(kind, &goal);
        self.start_wrap_up(&goal, &text);
        self.set_goal_status(GoalStatus::BudgetLimited, Some(text));
    }

    /// One last model step, told the budget is spent, offered no tools: it summarises
    /// what was done and what is left, for the user.
    fn start_wrap_up(&mut self, goal: &ThreadGoal, spent: &str) {
        if self.running.is_some() || self.read_only.is_some() {
            return;
        }
        let text = policy::wrap_up_text(goal, spent, self.state.goal.last_checkpoint());
        self.goal_driver.opening = Some(Opening {
            remaining: None,
            item: Item::DeveloperMessage {
                id: ItemId::new(),
                text,
            },
        });
        let turn_id = TurnId::new();
        let inputs = self.pending.take_all();
        match self.start_turn(turn_id, inputs, false, None) {
            Ok(()) => self.goal_driver.wrap_up = Some((turn_id, 0)),
            Err(reason) => {
                self.goal_driver.opening = None;
                self.emit(
                    None,
                    EventMsg::Warning {
                        message: format!("the goal's wrap-up could not start: {reason}"),
                    },
                );
            }
        }
    }

    /// At a step boundary of the wrap-up turn: one step is all it gets (a model that
    /// calls a tool it was not offered would otherwise go on).
    pub(super) fn wrap_up_step_over(&mut self) -> bool {
        let running = self.running.as_ref().map(|t| t.id);
        match &mut self.goal_driver.wrap_up {
            Some((id, steps)) if Some(*id) == running => {
                *steps += 1;
                *steps > 1
            }
            _ => false,
        }
    }
}
