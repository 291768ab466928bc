//! Thread goals in the kernel: the state folded from goal events ([`fold`]), what the
//! loop decides after a goal turn ([`policy`]), the model's goal tools ([`tools`]) and the
//! requests those tools send to the thread's loop. The loop glue is
//! `thread/submission_loop/goal.rs`. See `docs/goals.md`.

pub mod evaluator;
pub mod fold;
pub mod policy;
pub mod tools;
pub mod verify;

pub use fold::{GoalMark, GoalState};

use rein_protocol::{GoalError, GoalStatus, ThreadGoal, VerifierOutcome};

/// What a goal tool asks the thread's loop (the one place that changes the goal).
#[derive(Clone, Debug, PartialEq)]
pub enum GoalRequest {
    Get,
    Create {
        objective: String,
        token_budget: Option<u64>,
    },
    /// The model reports a status (`complete`, `blocked`, `paused`).
    Update {
        status: GoalStatus,
        note: Option<String>,
    },
    /// The verifiers the loop asked for ran: complete if every one passed.
    Verified {
        outcomes: Vec<VerifierOutcome>,
    },
    /// The model must wait (CI, a long build): how long it may.
    Wait {
        requested: std::time::Duration,
    },
    /// A sub-agent is spawned with a goal asking this budget: carve it out of this
    /// thread's goal, if it has an active one.
    Carve {
        asked: rein_protocol::GoalBudget,
    },
}

/// The loop's answer to a [`GoalRequest`].
#[derive(Clone, Debug)]
pub enum GoalReply {
    Goal(Option<ThreadGoal>),
    /// Before `complete` is believed: run these criteria's verifiers and report back.
    Verify(std::sync::Arc<verify::VerifyPlan>),
    /// Wait this long (the request bounded by the goal's budget).
    Wait(std::time::Duration),
    /// The sub-agent's goal gets this budget.
    Carved(rein_protocol::GoalBudget),
}

pub type GoalAnswer = Result<GoalReply, GoalError>;
