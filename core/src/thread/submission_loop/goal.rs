//! The loop's side of thread goals: the goal ops, the goal tools' requests, what a turn
//! did for the goal, and starting the next goal turn when the thread is idle. Every change
//! is an event (`GoalUpdated`, `GoalTurnStarted`, `GoalCheckpointed`, `GoalCleared`)
//! folded by the one reducer; what to do after a turn is `crate::goal::policy`.

use rein_protocol::{
    check_criteria, check_objective, BudgetKind, ErrorCode, EventMsg, GoalBudget, GoalChange,
    GoalCheckpoint, GoalError, GoalOrigin, GoalStatus, GoalUsage, Item, ItemId, OpResult,
    ThreadGoal, ToolOutcome, TurnId, VerifierOutcome,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::SubmissionLoop;
use crate::goal::policy::{self, Next};
use crate::goal::{GoalAnswer, GoalReply, GoalRequest};

/// How long a checkpoint's note may be, in characters.
const NOTE_CHARS: usize = 300;

/// The goal facts only the loop keeps (not state: they are about the running turn or
/// the next one, and a restart starts them afresh).
#[derive(Default)]
pub(super) struct GoalDriver {
    /// When the next goal turn starts, while the thread is idle.
    pub(super) wake: Option<Instant>,
    /// Set by `start_goal_turn` (and the wrap-up) for `start_turn` to record after
    /// `TurnStarted`.
    pub(super) opening: Option<Opening>,
    /// Usage-limit retries since the last turn that got through.
    pub(super) usage_retries: u32,
    /// The wrap-up turn after a budget ended the goal, and the steps it took.
    pub(super) wrap_up: Option<(TurnId, u32)>,
    /// The thread is a fork's first life: its goal is paused whatever `auto_resume` says.
    pub(super) forked: bool,
    /// What the running turn did for the goal.
    turn: TurnFacts,
    /// The failing verifier outcomes the next goal turn is told.
    feedback: Vec<VerifierOutcome>,
    /// Which verifiers passed at their last run (a change is progress).
    last_passed: Option<Vec<bool>>,
    /// Whether the goal tools are among the thread's tool sources yet.
    tools_offered: bool,
}

/// What a turn the loop starts for the goal begins with.
pub(super) struct Opening {
    /// The budget left, for a goal turn (`GoalTurnStarted`); `None`: the wrap-up.
    pub(super) remaining: Option<GoalBudget>,
    pub(super) item: Item,
}

#[derive(Default)]
struct TurnFacts {
    progress: bool,
    waited: bool,
    outcomes: Vec<VerifierOutcome>,
}

/// How a turn ended, as far as its goal cares.
pub(super) enum TurnEnd {
    Completed,
    Interrupted,
    Budget,
    Failed(ErrorCode, String),
}

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn short(text: &str) -> String {
    let mut s: String = text.chars().take(NOTE_CHARS).collect();
    if text.chars().count() > NOTE_CHARS {
        s.push('…');
    }
    s
}

impl SubmissionLoop {
    pub(super) fn goal(&self) -> Option<&ThreadGoal> {
        self.state.goal.goal.as_ref()
    }

    /// Offer the model the goal tools from the next step on (once the thread has a goal:
    /// threads without one send the same tool list as before goals existed).
    pub(super) fn offer_goal_tools(&mut self) {
        if !self.goal_driver.tools_offered {
            self.goal_driver.tools_offered = true;
            self.tools.sources.add(crate::goal::tools::goal_tools());
        }
    }

    /// Record `goal` as the thread's goal now, changed by `origin`.
    pub(super) fn record_goal(&mut self, mut goal: ThreadGoal, origin: GoalOrigin) -> ThreadGoal {
        self.offer_goal_tools();
        goal.updated_ms = now_ms();
        goal.origin = origin;
        if goal.status != GoalStatus::UsageLimited {
            goal.retry_at_ms = None;
        }
        let turn = self.running.as_ref().map(|t| t.id);
        self.emit(turn, EventMsg::GoalUpdated { goal: goal.clone() });
        goal
    }

    /// Move the goal to `status` (with why), if it has one: the kernel's own change.
    pub(super) fn set_goal_status(&mut self, status: GoalStatus, reason: Option<String>) {
        if let Some(mut goal) = self.goal().cloned() {
            goal.status = status;
            goal.reason = reason;
            if status != GoalStatus::Active {
                self.goal_driver.wake = None;
            }
            self.record_goal(goal, GoalOrigin::Automatic);
        }
    }

    pub(super) fn on_set_goal(&mut self, change: GoalChange) -> OpResult {
        match self.change_goal(change) {
            Ok(goal) => OpResult::Goal { goal: Some(goal) },
            Err(error) => OpResult::GoalRefused { error },
        }
    }

    pub(super) fn on_clear_goal(&mut self) -> OpResult {
        let goal = self.goal().cloned();
        if goal.is_some() {
            let tools_offered = self.goal_driver.tools_offered;
            self.goal_driver = GoalDriver {
                tools_offered,
                ..GoalDriver::default()
            };
            let turn = self.running.as_ref().map(|t| t.id);
            self.emit(turn, EventMsg::GoalCleared);
        }
        OpResult::Goal { goal }
    }

    fn change_goal(&mut self, change: GoalChange) -> Result<ThreadGoal, GoalError> {
        if !self.emitter.persists() {
            return Err(GoalError::Ephemeral);
        }
        if self.read_only.is_some() {
            return Err(GoalError::ReadOnly);
        }
        if let Some(objective) = &change.objective {
            check_objective(objective)?;
        }
        let mut goal = match (self.goal().cloned(), change.objective) {
            (None, None) => return Err(GoalError::NoGoal),
            (None, Some(objective)) => ThreadGoal {
                goal_id: ItemId::new().0,
                objective,
                status: GoalStatus::Active,
                budget: GoalBudget::default(),
                usage: GoalUsage::default(),
                carved: GoalBudget::default(),
                criteria: Vec::new(),
                idle_turns: 0,
                reason: None,
                origin: change.origin,
                retry_at_ms: None,
                auto_resume: None,
                created_ms: now_ms(),
                updated_ms: 0,
            },
            // An edited objective keeps status and usage (as Codex 0.169 does).
            (Some(mut goal), Some(objective)) => {
                goal.objective = objective;
                goal
            }
            (Some(goal), None) => goal,
        };
        if let Some(budget) = change.budget {
            goal.budget = goal.budget.merged(budget);
        }
        if let Some(criteria) = change.criteria {
            check_criteria(&criteria)?;
            goal.criteria = criteria;
        }
        if change.auto_resume.is_some() {
            goal.auto_resume = change.auto_resume;
        }
        if let Some(status) = change.status {
            if status == GoalStatus::Active && goal.status != GoalStatus::Active {
                // Resumed by the user: a fresh start for the no-progress count and
                // the usage-limit retries.
                goal.idle_turns = 0;
                self.goal_driver.usage_retries = 0;
            }
            goal.status = status;
            goal.reason = None;
        }
        let goal = self.record_goal(goal, change.origin);
        if goal.status == GoalStatus::Active && self.running.is_none() {
            self.goal_driver.wake = Some(Instant::now());
        }
        Ok(goal)
    }

    /// A goal tool's request (from the running turn).
    pub(super) fn on_goal_request(
        &mut self,
        request: GoalRequest,
        reply: oneshot::Sender<GoalAnswer>,
    ) {
        let answer = self.answer_goal_request(request);
        let _ = reply.send(answer);
    }

    fn answer_goal_request(&mut self, request: GoalRequest) -> GoalAnswer {
        match request {
            GoalRequest::Get => Ok(GoalReply::Goal(self.goal().cloned())),
            GoalRequest::Create {
                objective,
                token_budget,
            } => {
                if self.goal().is_some() {
                    return Err(GoalError::GoalExists);
                }
                let change = GoalChange {
                    objective: Some(objective),
                    budget: Some(GoalBudget {
                        tokens: token_budget,
                        ..GoalBudget::default()
                    }),
                    // The model's own lifecycle change (the user asked it, its
                    // description says; the kernel cannot tell).
                    origin: GoalOrigin::Automatic,
                    ..GoalChange::default()
                };
                self.change_goal(change).map(|g| GoalReply::Goal(Some(g)))
            }
            GoalRequest::Update { status, note } => {
                if self.goal().is_none() {
                    return Err(GoalError::NoGoal);
                }
                match status {
                    GoalStatus::Complete => {
                        if let Some(plan) = self.verify_plan(note.clone()) {
                            return Ok(GoalReply::Verify(std::sync::Arc::new(plan)));
                        }
                    }
                    GoalStatus::Blocked | GoalStatus::Paused => {}
                    other => return Err(GoalError::NotTheModels { status: other }),
                }
                self.set_goal_status(status, note);
                Ok(GoalReply::Goal(self.goal().cloned()))
            }
            GoalRequest::Wait { requested } => {
                let Some(goal) = self.goal().filter(|g| g.status == GoalStatus::Active) else {
                    return Err(GoalError::NoGoal);
                };
                let granted = policy::wait_bound(requested, goal);
                self.goal_driver.turn.waited = true;
                Ok(GoalReply::Wait(granted))
            }
            GoalRequest::Carve { asked } => self.carve(asked).map(GoalReply::Carved),
            GoalRequest::Verified { outcomes } => {
                let passed: Vec<bool> = outcomes.iter().map(|o| o.passed).collect();
                if self.goal_driver.last_passed.as_ref() != Some(&passed) {
                    self.goal_driver.turn.progress = true;
                }
                self.goal_driver.last_passed = Some(passed);
                self.goal_driver.turn.outcomes.clone_from(&outcomes);
                if outcomes.iter().all(|o| o.passed) {
                    self.goal_driver.feedback.clear();
                    self.set_goal_status(
                        GoalStatus::Complete,
                        Some("every acceptance check passed".into()),
                    );
                } else {
                    self.goal_driver.feedback = outcomes;
                }
                Ok(GoalReply::Goal(self.goal().cloned()))
            }
        }
    }

    /// Input reached the thread (a new turn or a steer): progress for the goal.
    pub(super) fn goal_saw_input(&mut self) {
        self.goal_driver.turn.progress = true;
    }

    /// What an event of the running turn means for its goal.
    pub(super) fn goal_observe(&mut self, msg: &EventMsg) {
        if let EventMsg::ToolCallEnd {
            outcome: ToolOutcome::Patched { .. },
            ..
        } = msg
        {
            self.goal_driver.turn.progress = true;
        }
    }

    /// At a step boundary: a spent token or wall-time budget ends the running turn.
    /// (A turn budget only stops the next goal turn from starting.)
    pub(super) fn goal_budget_crossed(&mut self) -> bool {
        if self.wrap_up_step_over() {
            return true;
        }
        let Some(goal) = self.goal().filter(|g| g.status == GoalStatus::Active) else {
            return false;
        };
        matches!(
            goal.spent().exceeds(&goal.budget),
            Some(BudgetKind::Tokens | BudgetKind::WallTime)
        )
    }

    /// After a turn ended: checkpoint a goal turn, then pause, block, stop on a budget or
    /// schedule the next goal turn.
    pub(super) fn goal_after_turn(&mut self, turn_id: TurnId, end: TurnEnd) {
        if self.goal().is_none() {
            return;
        }
        let goal_turn = self.is_goal_turn(turn_id);
        if !self.state.goal.active() {
            return;
        }
        let goal = self.goal().cloned();
        let Some(goal) = goal else { return };
        match end {
            TurnEnd::Interrupted => self.set_goal_status(
                GoalStatus::Paused,
                Some("interrupted by the user; set it active to resume".into()),
            ),
            TurnEnd::Failed(ErrorCode::RateLimited, message) => self.usage_limited(&message),
            TurnEnd::Failed(_, message) => self.set_goal_status(
                GoalStatus::Blocked,
                Some(format!("the turn failed: {message}")),
            ),
            TurnEnd::Completed | TurnEnd::Budget => {
                self.goal_driver.usage_retries = 0;
                let next = if goal_turn {
                    policy::next(
                        &goal,
                        &self.state.goal.checkpoints,
                        self.services.config.goal_backoff,
                    )
                } else {
                    // The user's own turn: new input is progress, continue at once.
                    match goal.spent().exceeds(&goal.budget) {
                        Some(kind) => Next::BudgetLimited(kind),
                        None => Next::Continue {
                            after: std::time::Duration::ZERO,
                        },
                    }
                };
                match next {
                    Next::Continue { after } => {
                        self.goal_driver.wake = Some(Instant::now() + after);
                    }
                    Next::BudgetLimited(kind) => self.budget_limit(kind),
                    Next::Blocked { evidence } => {
                        self.set_goal_status(GoalStatus::Blocked, Some(evidence));
                    }
                }
            }
        }
    }

    fn is_goal_turn(&self, turn_id: TurnId) -> bool {
        self.state
            .turns
            .iter()
            .rev()
            .find(|t| t.id == turn_id)
            .is_some_and(|t| t.goal)
    }

    /// Before a turn's end is recorded: the checkpoint of a goal turn, so a client that
    /// stops reading at the turn's end has it already.
    pub(super) fn goal_before_turn_end(&mut self, turn_id: TurnId) {
        let facts = std::mem::take(&mut self.goal_driver.turn);
        if self.goal().is_some() && self.is_goal_turn(turn_id) {
            self.checkpoint(turn_id, facts);
        }
    }

    /// The same for a failed turn. A turn the provider refused at its usage limit got no
    /// answer: it is no goal turn for the no-progress count (no checkpoint).
    pub(super) fn goal_before_failed_turn_end(&mut self, turn_id: TurnId, code: ErrorCode) {
        if code == ErrorCode::RateLimited && self.state.goal.active() {
            self.goal_driver.turn = TurnFacts::default();
            return;
        }
        self.goal_before_turn_end(turn_id);
    }

    fn checkpoint(&mut self, turn_id: TurnId, facts: TurnFacts) {
        let Some(goal) = self.goal() else { return };
        let mut criteria_met = Vec::new();
        let mut remaining = Vec::new();
        for criterion in &goal.criteria {
            let passed = facts
                .outcomes
                .iter()
                .any(|o| o.criterion == criterion.description && o.passed);
            if passed {
                criteria_met.push(criterion.description.clone());
            } else {
                remaining.push(criterion.description.clone());
            }
        }
        let note = self
            .state
            .last_agent_message()
            .map_or_else(|| "(no answer)".to_owned(), short);
        let checkpoint = GoalCheckpoint {
            turn_id,
            progress: facts.progress,
            waited: facts.waited,
            criteria_met,
            remaining,
            verifier_outcomes: facts.outcomes,
            note,
        };
        self.emit(Some(turn_id), EventMsg::GoalCheckpointed { checkpoint });
    }

    /// The thread is idle and the goal's pause is over: start the next goal turn, with the
    /// objective, the budget left, the last checkpoint and failed checks as its input.
    pub(super) fn start_goal_turn(&mut self) {
        self.goal_driver.wake = None;
        let Some(mut goal) = self.goal().filter(|g| g.driven()).cloned() else {
            return;
        };
        if goal.status == GoalStatus::UsageLimited {
            // The retry after the provider's usage limit: the goal is active again.
            goal.status = GoalStatus::Active;
            goal.reason = None;
            goal = self.record_goal(goal, GoalOrigin::Automatic);
        }
        if let Some(kind) = goal.spent().exceeds(&goal.budget) {
            self.budget_limit(kind);
            return;
        }
        let remaining = policy::remaining(&goal.budget, &goal.spent());
        let feedback = std::mem::take(&mut self.goal_driver.feedback);
        let text = policy::continuation_text(
            &goal,
            self.state.goal.last_checkpoint(),
            Some(feedback.as_slice()),
        );
        let item = Item::DeveloperMessage {
            id: ItemId::new(),
            text,
        };
        self.goal_driver.opening = Some(Opening {
            remaining: Some(remaining),
            item,
        });
        let inputs = self.pending.take_all();
        if let Err(reason) = self.start_turn(TurnId::new(), inputs, false, None) {
            self.goal_driver.opening = None;
            self.set_goal_status(
                GoalStatus::Blocked,
                Some(format!("the goal turn could not start: {reason}")),
            );
            return;
        }
        if let (Some(left), Some(turn)) = (remaining.wall_time_ms, self.running.as_mut()) {
            let at = Instant::now() + std::time::Duration::from_millis(left);
            turn.deadline = Some(turn.deadline.map_or(at, |d| d.min(at)));
        }
    }

    /// Record what `start_goal_turn` (or the wrap-up) left for the turn just opened.
    /// True when the turn is the wrap-up, which is offered no tools.
    pub(super) fn open_goal_turn(&mut self, turn_id: TurnId) -> bool {
        let Some(Opening { remaining, item }) = self.goal_driver.opening.take() else {
            return false;
        };
        if let Some(remaining) = remaining {
            self.emit(Some(turn_id), EventMsg::GoalTurnStarted { remaining });
        }
        self.emit(Some(turn_id), EventMsg::ItemCompleted { item });
        remaining.is_none()
    }
}
