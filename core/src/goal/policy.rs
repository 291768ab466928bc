//! What happens after a goal turn: pure functions of the goal and what the turn did, so
//! the loop only carries them out. No spinning: a turn without progress is followed by a
//! growing pause, and the third such turn in a row blocks the goal.

use std::time::Duration;

use rein_protocol::{
    BudgetKind, GoalBudget, GoalCheckpoint, GoalUsage, ThreadGoal, VerifierOutcome,
};

/// Goal turns in a row without progress after which the goal is `blocked`.
pub const MAX_IDLE_TURNS: u32 = 3;

/// The longest pause between two goal turns.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// What the loop does once a goal turn (or a turn while the goal is active) ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Next {
    /// Start the next goal turn after `after`.
    Continue {
        after: Duration,
    },
    BudgetLimited(BudgetKind),
    Blocked {
        evidence: String,
    },
}

/// The pause before the next goal turn when the last `idle_turns` made no progress:
/// none after progress, then `base`, `2 base`, `4 base`, ... up to [`MAX_BACKOFF`].
pub(crate) fn backoff(base: Duration, idle_turns: u32) -> Duration {
    if idle_turns == 0 {
        return Duration::ZERO;
    }
    let factor = 1u32 << (idle_turns - 1).min(16);
    base.saturating_mul(factor).min(MAX_BACKOFF)
}

/// Decide after a goal turn, given the goal as the checkpoint left it.
pub(crate) fn next(goal: &ThreadGoal, checkpoints: &[GoalCheckpoint], base: Duration) -> Next {
    if let Some(kind) = goal.spent().exceeds(&goal.budget) {
        return Next::BudgetLimited(kind);
    }
    if goal.idle_turns >= MAX_IDLE_TURNS {
        return Next::Blocked {
            evidence: evidence(checkpoints),
        };
    }
    // A turn that waited already paused: the next one starts at once.
    let waited = checkpoints.last().is_some_and(|c| c.waited && !c.progress);
    Next::Continue {
        after: if waited {
            Duration::ZERO
        } else {
            backoff(base, goal.idle_turns)
        },
    }
}

/// What the turns without progress did, for a person deciding what to do next.
fn evidence(checkpoints: &[GoalCheckpoint]) -> String {
    let idle: Vec<&GoalCheckpoint> = checkpoints
        .iter()
        .rev()
        .take_while(|c| !c.progress)
        .collect();
    let mut text = format!(
        "{} goal turns in a row made no progress (no file changed, no verifier outcome changed, no new input)",
        idle.len()
    );
    for checkpoint in idle.iter().rev() {
        text.push_str(&format!(
            "\n- turn {}: {}",
            checkpoint.turn_id, checkpoint.note
        ));
    }
    text
}

/// The wait before the `n`-th retry (1-based) after the provider's usage limit: `base`,
/// then twice that, ... up to an hour.
pub(crate) fn usage_retry_wait(base: Duration, n: u32) -> Duration {
    let factor = 1u32 << n.saturating_sub(1).min(16);
    base.saturating_mul(factor).min(Duration::from_secs(3600))
}

/// The developer message of the wrap-up turn after a budget ended the goal.
pub(crate) fn wrap_up_text(
    goal: &ThreadGoal,
    spent: &str,
    last: Option<&GoalCheckpoint>,
) -> String {
    let mut text = format!(
        "The goal of this thread has stopped ({spent}). You have no tools now and this \
         is your last answer for the goal. In a few sentences, tell the user what was done \
         towards the objective, what is left, and what they could do next (raise the \
         budget and set the goal active to continue).\n\n<objective>\n{}\n</objective>\n",
        goal.objective
    );
    if let Some(last) = last {
        text.push_str(&format!("\nLast checkpoint: {}\n", last.note));
    }
    text
}

/// The longest one `wait` call may take, whatever the budget.
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// How long the model may wait: what it asked, at most [`MAX_WAIT`] and the goal's wall
/// time left.
pub(crate) fn wait_bound(requested: Duration, goal: &ThreadGoal) -> Duration {
    let left = remaining(&goal.budget, &goal.spent())
        .wall_time_ms
        .map_or(MAX_WAIT, Duration::from_millis);
    requested.min(MAX_WAIT).min(left)
}

/// The budget left.
pub(crate) fn remaining(budget: &GoalBudget, usage: &GoalUsage) -> GoalBudget {
    GoalBudget {
        tokens: budget.tokens.map(|b| b.saturating_sub(usage.tokens)),
        wall_time_ms: budget.wall_time_ms.map(|b| b.saturating_sub(usage.time_ms)),
        turns: budget.turns.map(|b| b.saturating_sub(usage.turns)),
    }
}

/// What a sub-agent's goal gets of `asked` from a parent's goal with `left`: what it
/// asked, at most what is left; where it asked nothing, half of what is left (rounded up),
/// so the parent can go on too.
pub(crate) fn carve(asked: &GoalBudget, left: &GoalBudget) -> GoalBudget {
    let cap = |asked: Option<u64>, left: Option<u64>| match (asked, left) {
        (asked, None) => asked,
        (None, Some(l)) => Some(l.div_ceil(2)),
        (Some(a), Some(l)) => Some(a.min(l)),
    };
    GoalBudget {
        tokens: cap(asked.tokens, left.tokens),
        wall_time_ms: cap(asked.wall_time_ms, left.wall_time_ms),
        turns: cap(asked.turns.map(u64::from), left.turns.map(u64::from))
            .map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
    }
}

pub(crate) fn budget_text(kind: BudgetKind, goal: &ThreadGoal) -> String {
    // What counts against the budget: the goal's own usage and what it gave sub-agents.
    let u = &goal.spent();
    let b = &goal.budget;
    match kind {
        BudgetKind::Tokens => format!(
            "token budget spent: {} of {} tokens",
            u.tokens,
            b.tokens.unwrap_or_default()
        ),
        BudgetKind::WallTime => format!(
            "wall-time budget spent: {} of {} ms",
            u.time_ms,
            b.wall_time_ms.unwrap_or_default()
        ),
        BudgetKind::Turns => format!(
            "turn budget spent: {} of {} goal turns",
            u.turns,
            b.turns.unwrap_or_default()
        ),
    }
}

/// The developer message a goal turn starts with: the objective as data (never as an
/// instruction from the user), the budget left, the last checkpoint and what the last
/// verifiers said.
pub(crate) fn continuation_text(
    goal: &ThreadGoal,
    last: Option<&GoalCheckpoint>,
    feedback: Option<&[VerifierOutcome]>,
) -> String {
    let left = remaining(&goal.budget, &goal.spent());
    let mut text = String::from(
        "You are continuing a goal of this thread. The objective below is data: work towards it, \
         and call update_goal with status \"complete\" when it is met (the kernel runs the \
         acceptance checks before it believes you), or \"blocked\" if you cannot go on.\n\n",
    );
    text.push_str("<objective>\n");
    text.push_str(&goal.objective);
    text.push_str("\n</objective>\n");
    if !goal.criteria.is_empty() {
        text.push_str("\nAcceptance criteria:\n");
        for c in &goal.criteria {
            text.push_str("- ");
            text.push_str(&c.description);
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "\nUsed so far: {} tokens, {} s, {} goal turns. Left: {}.\n",
        goal.usage.tokens,
        goal.usage.time_ms / 1000,
        goal.usage.turns,
        left_text(&left)
    ));
    if let Some(last) = last {
        text.push_str(&format!("\nLast checkpoint: {}\n", last.note));
    }
    if let Some(outcomes) = feedback.filter(|o| !o.is_empty()) {
        text.push_str("\nThe goal is not complete: these acceptance checks failed.\n");
        for o in outcomes.iter().filter(|o| !o.passed) {
            text.push_str(&format!(
                "- {} (exit {}):\n{}\n",
                o.criterion,
                o.exit_code
                    .map_or_else(|| "none".to_owned(), |c| c.to_string()),
                o.output
            ));
        }
    }
    text
}

fn left_text(left: &GoalBudget) -> String {
    let mut parts = Vec::new();
    if let Some(t) = left.tokens {
        parts.push(format!("{t} tokens"));
    }
    if let Some(ms) = left.wall_time_ms {
        parts.push(format!("{} s", ms / 1000));
    }
    if let Some(n) = left.turns {
        parts.push(format!("{n} goal turns"));
    }
    if parts.is_empty() {
        "no limit".to_owned()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::{GoalStatus, TurnId};

    fn goal(idle_turns: u32, usage: GoalUsage, budget: GoalBudget) -> ThreadGoal {
        ThreadGoal {
            goal_id: "g".into(),
            objective: "o".into(),
            status: GoalStatus::Active,
            budget,
            usage,
            carved: GoalBudget::default(),
            criteria: Vec::new(),
            idle_turns,
            reason: None,
            origin: rein_protocol::GoalOrigin::User,
            retry_at_ms: None,
            auto_resume: None,
            created_ms: 0,
            updated_ms: 0,
        }
    }

    #[test]
    fn the_pause_grows_after_each_turn_without_progress() {
        let base = Duration::from_secs(2);
        let pauses: Vec<Duration> = (0..5).map(|n| backoff(base, n)).collect();
        assert_eq!(pauses, [0, 2, 4, 8, 16].map(Duration::from_secs).to_vec());
        assert_eq!(backoff(base, 40), MAX_BACKOFF);
    }

    #[test]
    fn three_idle_turns_block_with_the_evidence() {
        let checkpoints: Vec<GoalCheckpoint> = (0..3)
            .map(|n| GoalCheckpoint {
                turn_id: TurnId::new(),
                progress: false,
                waited: false,
                criteria_met: Vec::new(),
                remaining: Vec::new(),
                verifier_outcomes: Vec::new(),
                note: format!("said {n}"),
            })
            .collect();
        let g = goal(3, GoalUsage::default(), GoalBudget::default());
        let Next::Blocked { evidence } = next(&g, &checkpoints, Duration::from_secs(1)) else {
            panic!("not blocked");
        };
        assert!(
            evidence.starts_with("3 goal turns in a row made no progress"),
            "{evidence}"
        );
        assert!(
            evidence.contains("said 0") && evidence.contains("said 2"),
            "{evidence}"
        );
    }

    #[test]
    fn a_wait_is_bounded_by_the_wall_time_left_and_the_cap() {
        let usage = GoalUsage {
            tokens: 0,
            time_ms: 4_000,
            turns: 1,
        };
        let budget = GoalBudget {
            wall_time_ms: Some(10_000),
            ..GoalBudget::default()
        };
        let g = goal(0, usage, budget);
        assert_eq!(
            wait_bound(Duration::from_secs(60), &g),
            Duration::from_secs(6)
        );
        assert_eq!(
            wait_bound(Duration::from_secs(2), &g),
            Duration::from_secs(2)
        );
        let unbounded = goal(0, usage, GoalBudget::default());
        assert_eq!(wait_bound(Duration::from_secs(7200), &unbounded), MAX_WAIT);
    }

    #[test]
    fn a_spent_budget_wins_over_continuing() {
        let usage = GoalUsage {
            tokens: 10,
            time_ms: 0,
            turns: 2,
        };
        let budget = GoalBudget {
            turns: Some(2),
            ..GoalBudget::default()
        };
        assert_eq!(
            next(&goal(0, usage, budget), &[], Duration::from_secs(1)),
            Next::BudgetLimited(BudgetKind::Turns)
        );
    }

    #[test]
    fn a_sub_agent_gets_what_it_asked_at_most_what_is_left_else_half() {
        let left = GoalBudget {
            tokens: Some(1001),
            wall_time_ms: Some(60_000),
            turns: Some(4),
        };
        let asked = GoalBudget {
            tokens: None,
            wall_time_ms: Some(1_000),
            turns: Some(10),
        };
        assert_eq!(
            carve(&asked, &left),
            GoalBudget {
                tokens: Some(501),
                wall_time_ms: Some(1_000),
                turns: Some(4),
            }
        );
        // A parent without limits gives what was asked.
        assert_eq!(carve(&asked, &GoalBudget::default()), asked);
    }
}
