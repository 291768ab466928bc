//! What the goal tools ask of the loop beyond the goal itself: the verifiers of a
//! `complete` report (the criteria, the evaluator model, its evidence) and the budget a
//! sub-agent's goal carves out of this thread's. See `docs/goals.md`.

use rein_protocol::{GoalBudget, GoalError, GoalOrigin, GoalStatus, Verifier};

use super::SubmissionLoop;
use crate::goal::evaluator::{transcript_tail, Evaluator, Evidence};
use crate::goal::policy;
use crate::goal::verify::VerifyPlan;

impl SubmissionLoop {
    /// A sub-agent's goal asks for `asked`: without an active goal here it gets that; with
    /// one, `policy::carve` of what is left, and what it gets of the tokens and goal turns is
    /// recorded as carved (spent) on this goal. Wall time is not carved: the child runs
    /// beside this thread, so it only gets at most the wall time left.
    pub(super) fn carve(&mut self, asked: GoalBudget) -> Result<GoalBudget, GoalError> {
        let Some(mut goal) = self
            .goal()
            .filter(|g| g.status == GoalStatus::Active)
            .cloned()
        else {
            return Ok(asked);
        };
        let left = policy::remaining(&goal.budget, &goal.spent());
        if [left.tokens, left.wall_time_ms, left.turns.map(u64::from)].contains(&Some(0)) {
            return Err(GoalError::NothingToCarve);
        }
        let given = policy::carve(&asked, &left);
        let add = |carved: Option<u64>, limit: Option<u64>, given: Option<u64>| {
            limit.map(|_| carved.unwrap_or(0).saturating_add(given.unwrap_or(0)))
        };
        goal.carved.tokens = add(goal.carved.tokens, goal.budget.tokens, given.tokens);
        goal.carved.turns = add(
            goal.carved.turns.map(u64::from),
            goal.budget.turns.map(u64::from),
            given.turns.map(u64::from),
        )
        .map(|t| u32::try_from(t).unwrap_or(u32::MAX));
        goal.reason = None;
        self.record_goal(goal, GoalOrigin::Automatic);
        Ok(given)
    }

    /// What the verifiers of a `complete` report need: the criteria with verifiers, the
    /// evaluator model when one asks for it, and the evidence it reads. `None`: the goal
    /// has no verifier, and `complete` is taken as said.
    pub(super) fn verify_plan(&self, report: Option<String>) -> Option<VerifyPlan> {
        let goal = self.goal()?;
        let criteria: Vec<_> = goal.verifiers().map(|(c, _)| c.clone()).collect();
        if criteria.is_empty() {
            return None;
        }
        let evaluated = goal
            .verifiers()
            .any(|(_, v)| matches!(v, Verifier::Evaluator { .. }));
        let evaluator = evaluated.then(|| std::sync::Arc::new(self.evaluator()));
        let evidence = Evidence {
            objective: goal.objective.clone(),
            report,
            // Only an evaluator reads the transcript.
            transcript: if evaluated {
                transcript_tail(&self.state.history)
            } else {
                String::new()
            },
        };
        Some(VerifyPlan {
            criteria,
            evaluator,
            evidence,
        })
    }

    /// The goal's evaluator: `[goals] evaluator_profile`'s model, else the thread's. A
    /// model the catalog does not know fails each evaluator check (never passes it).
    fn evaluator(&self) -> Evaluator {
        let config = &self.services.config;
        let model_name = config.goal_evaluator_model.clone().unwrap_or_else(|| {
            self.state
                .settings
                .as_ref()
                .map(|s| s.model.clone())
                .unwrap_or_default()
        });
        let client = self
            .services
            .models
            .client(&model_name)
            .map_err(|e| e.to_string());
        Evaluator {
            model_name,
            client,
            timeout: config.goal_evaluator_timeout,
        }
    }
}
