//! Thread goals: a standing objective the kernel drives to a verified finish, within
//! budgets (see `docs/goals.md`). A goal is a record of its thread: it lives in the rollout
//! as events (`GoalUpdated`, `GoalCheckpointed`, `GoalTurnStarted`, `GoalCleared`) and is
//! folded by the one reducer, so resume, fork and `thread/read` all see it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::TurnId;

/// The longest objective a goal takes, in characters (Codex's and Claude Code's limit).
pub const MAX_OBJECTIVE_CHARS: usize = 4_000;

/// Where a goal stands. The names are Codex's (`thread/goal/*` speaks them in camelCase).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// The kernel continues the thread while it is idle.
    Active,
    /// Stopped by the user (an interrupt, a restart); one call resumes it.
    Paused,
    /// Turns made no progress, or the model said it cannot go on.
    Blocked,
    /// The provider's usage limit was reached.
    UsageLimited,
    /// A token, wall-time or turn budget is spent.
    BudgetLimited,
    /// Every verifier passed (or there were none and the model said it is done).
    Complete,
}

impl GoalStatus {
    pub const ALL: [GoalStatus; 6] = [
        GoalStatus::Active,
        GoalStatus::Paused,
        GoalStatus::Blocked,
        GoalStatus::UsageLimited,
        GoalStatus::BudgetLimited,
        GoalStatus::Complete,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::Blocked => "blocked",
            GoalStatus::UsageLimited => "usage_limited",
            GoalStatus::BudgetLimited => "budget_limited",
            GoalStatus::Complete => "complete",
        }
    }
}

/// Who asked for a goal change (Codex's `ThreadGoalMutationOrigin`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalOrigin {
    #[default]
    User,
    /// The kernel itself (a budget, an interrupt, a restart) or the model's goal tools.
    Automatic,
}

impl GoalOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalOrigin::User => "user",
            GoalOrigin::Automatic => "automatic",
        }
    }
}

/// Limits of a goal; `None` is unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalBudget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Wall time spent in turns while the goal is active, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_ms: Option<u64>,
    /// Goal continuations (turns the kernel started for the goal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
}

impl GoalBudget {
    /// No limit at all.
    pub fn is_unlimited(&self) -> bool {
        *self == GoalBudget::default()
    }

    /// `self` with every limit `change` sets replaced.
    pub fn merged(self, change: GoalBudget) -> GoalBudget {
        GoalBudget {
            tokens: change.tokens.or(self.tokens),
            wall_time_ms: change.wall_time_ms.or(self.wall_time_ms),
            turns: change.turns.or(self.turns),
        }
    }
}

/// What a goal used so far; accounted at step and turn boundaries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalUsage {
    pub tokens: u64,
    pub time_ms: u64,
    pub turns: u32,
}

/// Which budget a goal crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    Tokens,
    WallTime,
    Turns,
}

impl GoalUsage {
    /// The first budget `self` has reached, if any.
    pub fn exceeds(&self, budget: &GoalBudget) -> Option<BudgetKind> {
        if budget.tokens.is_some_and(|b| self.tokens >= b) {
            return Some(BudgetKind::Tokens);
        }
        if budget.wall_time_ms.is_some_and(|b| self.time_ms >= b) {
            return Some(BudgetKind::WallTime);
        }
        if budget.turns.is_some_and(|b| self.turns >= b) {
            return Some(BudgetKind::Turns);
        }
        None
    }
}

/// How a criterion is checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Verifier {
    /// A shell command run in the thread's sandbox and cwd; exit 0 passes.
    Shell { command: String },
    /// A tool of one of the thread's MCP servers, called with `arguments` (an object;
    /// absent: `{}`) through the thread's own MCP tool (its approval mode and policy);
    /// passes when the call succeeds and its result is not `isError`.
    Mcp {
        server: String,
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<serde_json::Value>,
    },
    /// A question answered by the goal's evaluator model (`[goals] evaluator_profile`,
    /// else the thread's model) with the verdict `{"pass": bool, "reason": "..."}`;
    /// anything else fails the check.
    Evaluator { prompt: String },
}

impl Verifier {
    /// What the verifier does, in a few words (a criterion given without a description).
    pub fn describe(&self) -> String {
        match self {
            Verifier::Shell { command } => command.clone(),
            Verifier::Mcp { server, tool, .. } => format!("MCP {server}/{tool}"),
            Verifier::Evaluator { prompt } => format!("evaluator: {prompt}"),
        }
    }
}

/// One acceptance criterion of a goal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Criterion {
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verifier>,
}

/// What one verifier run came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerifierOutcome {
    pub criterion: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What the verifier printed (bounded).
    pub output: String,
}

/// Written after each goal turn: where the goal stands, for the next continuation, a new
/// session and a person (`rein sessions show`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalCheckpoint {
    pub turn_id: TurnId,
    /// Whether the turn made progress (a patch, a verifier whose outcome changed, new input).
    pub progress: bool,
    /// Whether the model waited (the `wait` tool): a turn that waited is no turn without
    /// progress, and the next goal turn starts at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waited: bool,
    pub criteria_met: Vec<String>,
    pub remaining: Vec<String>,
    /// The verifier runs of the turn, when the model reported the goal complete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verifier_outcomes: Vec<VerifierOutcome>,
    pub note: String,
}

/// A thread's goal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoal {
    /// Changes when the objective is replaced (usage and checkpoints start again).
    pub goal_id: String,
    pub objective: String,
    pub status: GoalStatus,
    #[serde(default)]
    pub budget: GoalBudget,
    #[serde(default)]
    pub usage: GoalUsage,
    /// What the goal gave its sub-agents' goals (tokens and goal turns, summed): counted
    /// as spent, so a tree of goals never spends more than the root's budget.
    #[serde(default, skip_serializing_if = "GoalBudget::is_unlimited")]
    pub carved: GoalBudget,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<Criterion>,
    /// Goal turns in a row that made no progress.
    #[serde(default)]
    pub idle_turns: u32,
    /// Why the goal is in its status, when the kernel set it (the evidence of a block, the
    /// budget spent, a verifier's failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who made the last change: the user (a client, `rein exec --goal`) or the kernel
    /// and the model's goal tools (`automatic`). Absent from rollouts written before it
    /// was recorded (read as `user`).
    #[serde(default)]
    pub origin: GoalOrigin,
    /// When the kernel retries a `usage_limited` goal (milliseconds since the Unix
    /// epoch); absent when no retry is scheduled (its retries are used up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at_ms: Option<u64>,
    /// Whether this goal continues by itself when its thread is loaded again while the
    /// kernel still drove it, overriding `[goals] auto_resume`; absent: the setting decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resume: Option<bool>,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    pub updated_ms: u64,
}

impl ThreadGoal {
    /// Whether the kernel still drives the goal: it is `active`, or `usage_limited` with a
    /// retry scheduled.
    pub fn driven(&self) -> bool {
        self.status == GoalStatus::Active
            || (self.status == GoalStatus::UsageLimited && self.retry_at_ms.is_some())
    }

    /// The usage the budget is checked against: the goal's own and what it carved out
    /// for sub-agents.
    pub fn spent(&self) -> GoalUsage {
        GoalUsage {
            tokens: self
                .usage
                .tokens
                .saturating_add(self.carved.tokens.unwrap_or(0)),
            time_ms: self.usage.time_ms,
            turns: self
                .usage
                .turns
                .saturating_add(self.carved.turns.unwrap_or(0)),
        }
    }

    pub fn verifiers(&self) -> impl Iterator<Item = (&Criterion, &Verifier)> {
        self.criteria
            .iter()
            .filter_map(|c| c.verify.as_ref().map(|v| (c, v)))
    }
}

/// A change to a thread's goal (`Op::SetGoal`). With an objective on a thread without a
/// goal: a new goal. With one on a thread that has a goal: the objective is edited, status
/// and usage kept (as Codex 0.169 does). Without one: status or budget change only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GoalStatus>,
    /// Limits to set (the ones left `None` keep their value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<GoalBudget>,
    /// Replaces the criteria when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criteria: Option<Vec<Criterion>>,
    #[serde(default)]
    pub origin: GoalOrigin,
    /// Sets the goal's own auto-resume (`ThreadGoal::auto_resume`) when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resume: Option<bool>,
}

/// Why a goal change was refused (nothing changed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum GoalError {
    /// Goals are records of a rollout: an ephemeral thread has none.
    Ephemeral,
    ObjectiveTooLong {
        chars: usize,
        max: usize,
    },
    EmptyObjective,
    /// A status or budget change, but the thread has no goal.
    NoGoal,
    /// `create_goal` while the thread already has a goal.
    GoalExists,
    /// The model's `update_goal` may only report `complete`, `blocked` or `paused`.
    NotTheModels {
        status: GoalStatus,
    },
    ReadOnly,
    /// A sub-agent's goal asked for budget the parent's goal has no more of.
    NothingToCarve,
    /// A criterion the kernel could not check (an MCP verifier without a server, its
    /// arguments not an object, an empty command or prompt).
    InvalidCriterion {
        message: String,
    },
}

impl fmt::Display for GoalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoalError::Ephemeral => f.write_str("thread goals require a persisted thread"),
            GoalError::ObjectiveTooLong { chars, max } => {
                write!(
                    f,
                    "the objective has {chars} characters; at most {max} are allowed"
                )
            }
            GoalError::EmptyObjective => f.write_str("the objective is empty"),
            GoalError::NoGoal => f.write_str("the thread has no goal"),
            GoalError::GoalExists => f.write_str(
                "the thread already has a goal; use update_goal or ask the user to replace it",
            ),
            GoalError::NotTheModels { status } => write!(
                f,
                "the model may not set a goal {}; only complete, blocked or paused",
                status.as_str()
            ),
            GoalError::ReadOnly => f.write_str("the thread is read-only"),
            GoalError::NothingToCarve => {
                f.write_str("the goal's budget has nothing left to give a sub-agent's goal")
            }
            GoalError::InvalidCriterion { message } => {
                write!(f, "invalid acceptance criterion: {message}")
            }
        }
    }
}

impl std::error::Error for GoalError {}

/// Check an objective against the limits.
pub fn check_objective(objective: &str) -> Result<(), GoalError> {
    let chars = objective.chars().count();
    if objective.trim().is_empty() {
        return Err(GoalError::EmptyObjective);
    }
    if chars > MAX_OBJECTIVE_CHARS {
        return Err(GoalError::ObjectiveTooLong {
            chars,
            max: MAX_OBJECTIVE_CHARS,
        });
    }
    Ok(())
}

/// Criteria the kernel can check: an MCP verifier names its server and tool and has an
/// object (or nothing) for arguments; no verifier is empty.
pub fn check_criteria(criteria: &[Criterion]) -> Result<(), GoalError> {
    let invalid = |message: String| Err(GoalError::InvalidCriterion { message });
    for criterion in criteria {
        match &criterion.verify {
            Some(Verifier::Shell { command }) if command.trim().is_empty() => {
                return invalid("a shell verifier has an empty command".into());
            }
            Some(Verifier::Mcp {
                server,
                tool,
                arguments,
            }) => {
                if server.trim().is_empty() || tool.trim().is_empty() {
                    return invalid("an MCP verifier needs a server and a tool".into());
                }
                if arguments.as_ref().is_some_and(|a| !a.is_object()) {
                    return invalid(format!(
                        "the arguments of the MCP verifier {server}/{tool} are not a JSON object"
                    ));
                }
            }
            Some(Verifier::Evaluator { prompt }) if prompt.trim().is_empty() => {
                return invalid("an evaluator verifier has an empty prompt".into());
            }
            _ => {}
        }
    }
    Ok(())
}
