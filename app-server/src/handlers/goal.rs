//! `thread/goal/get`, `thread/goal/set`, `thread/goal/clear`: Codex's goal methods, over
//! the kernel's goal ops (`Op::SetGoal`, `Op::ClearGoal`) and the thread's folded state.
//! The notifications (`thread/goal/updated`, `thread/goal/cleared`) come from the goal
//! events through the event map, like every other notification.

use rein_app_server_protocol::{
    ThreadGoal as WireGoal, ThreadGoalClearParams, ThreadGoalClearResponse, ThreadGoalCriterion,
    ThreadGoalGetParams, ThreadGoalGetResponse, ThreadGoalSetParams, ThreadGoalSetResponse,
    ThreadGoalStatus, ThreadGoalVerifier,
};
use rein_protocol::{
    Criterion, GoalBudget, GoalChange, GoalOrigin, GoalStatus, Op, OpResult, ThreadGoal, Verifier,
};

use super::loaded;
use crate::dispatch::ServerState;
use crate::error::RpcError;
use crate::pump::PumpCmd;

pub(crate) fn wire_status(status: GoalStatus) -> ThreadGoalStatus {
    match status {
        GoalStatus::Active => ThreadGoalStatus::Active,
        GoalStatus::Paused => ThreadGoalStatus::Paused,
        GoalStatus::Blocked => ThreadGoalStatus::Blocked,
        GoalStatus::UsageLimited => ThreadGoalStatus::UsageLimited,
        GoalStatus::BudgetLimited => ThreadGoalStatus::BudgetLimited,
        GoalStatus::Complete => ThreadGoalStatus::Complete,
    }
}

fn kernel_status(status: ThreadGoalStatus) -> GoalStatus {
    match status {
        ThreadGoalStatus::Active => GoalStatus::Active,
        ThreadGoalStatus::Paused => GoalStatus::Paused,
        ThreadGoalStatus::Blocked => GoalStatus::Blocked,
        ThreadGoalStatus::UsageLimited => GoalStatus::UsageLimited,
        ThreadGoalStatus::BudgetLimited => GoalStatus::BudgetLimited,
        ThreadGoalStatus::Complete => GoalStatus::Complete,
    }
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The kernel's goal as Codex's `ThreadGoal`.
pub(crate) fn wire_goal(thread_id: &str, goal: &ThreadGoal) -> WireGoal {
    WireGoal {
        thread_id: thread_id.to_owned(),
        objective: goal.objective.clone(),
        status: wire_status(goal.status),
        token_budget: goal.budget.tokens.map(int),
        tokens_used: int(goal.usage.tokens),
        time_used_seconds: int(goal.usage.time_ms / 1000),
        created_at: int(goal.created_ms / 1000),
        updated_at: int(goal.updated_ms / 1000),
    }
}

pub async fn get(
    state: &ServerState,
    p: ThreadGoalGetParams,
) -> Result<ThreadGoalGetResponse, RpcError> {
    let id = crate::dispatch::wire_id(&p.thread_id, "threadId", "thread")?;
    // A thread not loaded here answers from its rollout, as `thread/read` does.
    let snapshot = crate::handlers::history::folded_state(state, id).await?;
    let goal = snapshot
        .goal
        .goal
        .as_ref()
        .map(|g| wire_goal(&p.thread_id, g));
    Ok(ThreadGoalGetResponse { goal })
}

pub async fn set(
    state: &ServerState,
    p: ThreadGoalSetParams,
) -> Result<ThreadGoalSetResponse, RpcError> {
    let thread = loaded(state, &p.thread_id)?;
    let budget = match p.token_budget {
        Some(n) if n <= 0 => {
            return Err(RpcError::invalid_params(
                "tokenBudget: must be positive",
                Some("tokenBudget".into()),
            ))
        }
        Some(n) => Some(GoalBudget {
            tokens: u64::try_from(n).ok(),
            ..GoalBudget::default()
        }),
        None => None,
    };
    let criteria = p.criteria.map(kernel_criteria).transpose()?;
    let change = GoalChange {
        objective: p.objective,
        status: p.status.map(kernel_status),
        budget,
        criteria,
        origin: match p.origin {
            Some(rein_app_server_protocol::ThreadGoalMutationOrigin::Automatic) => {
                GoalOrigin::Automatic
            }
            _ => GoalOrigin::User,
        },
        auto_resume: p.auto_resume,
    };
    match submit(state, &thread, Op::SetGoal { change }).await? {
        Some(goal) => Ok(ThreadGoalSetResponse {
            goal: wire_goal(&p.thread_id, &goal),
        }),
        None => Err(RpcError::internal("the goal was not returned")),
    }
}

/// rein's `criteria` of `thread/goal/set` as the kernel's. A criterion needs a
/// description or a verifier (which then describes it).
fn kernel_criteria(criteria: Vec<ThreadGoalCriterion>) -> Result<Vec<Criterion>, RpcError> {
    criteria
        .into_iter()
        .enumerate()
        .map(|(n, c)| {
            let verify = c.verify.map(|v| match v {
                ThreadGoalVerifier::Shell { command } => Verifier::Shell { command },
                ThreadGoalVerifier::Mcp {
                    server,
                    tool,
                    arguments,
                } => Verifier::Mcp {
                    server,
                    tool,
                    arguments,
                },
                ThreadGoalVerifier::Evaluator { prompt } => Verifier::Evaluator { prompt },
            });
            let description = match (c.description, &verify) {
                (Some(d), _) if !d.trim().is_empty() => d,
                (_, Some(v)) => v.describe(),
                (_, None) => {
                    return Err(RpcError::invalid_params(
                        format!("criteria[{n}]: needs a description or a verifier"),
                        Some(format!("criteria[{n}]")),
                    ))
                }
            };
            Ok(Criterion {
                description,
                verify,
            })
        })
        .collect()
}

pub async fn clear(
    state: &ServerState,
    p: ThreadGoalClearParams,
) -> Result<ThreadGoalClearResponse, RpcError> {
    let thread = loaded(state, &p.thread_id)?;
    let cleared = submit(state, &thread, Op::ClearGoal).await?.is_some();
    Ok(ThreadGoalClearResponse { cleared })
}

/// Submit a goal op through the thread's pump, which answers after forwarding the events
/// the op caused.
async fn submit(
    state: &ServerState,
    thread: &crate::loaded::LoadedThread,
    op: Op,
) -> Result<Option<ThreadGoal>, RpcError> {
    let answer = super::turn::ask_pump(state, thread, |reply| PumpCmd::Goal { reply, op }).await;
    match answer? {
        OpResult::Goal { goal } => Ok(goal),
        OpResult::GoalRefused { error } => Err(RpcError::invalid_request(error.to_string())),
        other => Err(RpcError::internal(format!("unexpected answer: {other:?}"))),
    }
}
