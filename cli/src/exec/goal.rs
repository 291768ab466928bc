//! `rein exec --goal`: set the thread's goal and follow the thread while the kernel
//! continues it, until the goal leaves `active` with no turn running. The exit code is
//! the goal's final status (documented in docs/exec.md and docs/goals.md).

use std::time::Duration;

use anyhow::{bail, Context};
use rein_core::NewThread;
use rein_protocol::{
    Criterion, EventMsg, GoalBudget, GoalChange, GoalOrigin, GoalStatus, Item, Op, OpResult,
    Verifier,
};
use tokio::signal::unix::{signal, SignalKind};

use super::args::GoalArgs;
use super::turn::{Outcome, OutputMode, Printer, StopSignal};

/// Exit codes of `rein exec --goal`, by the goal's final status.
pub const EXIT_COMPLETE: i32 = 0;
pub const EXIT_BLOCKED: i32 = 3;
pub const EXIT_BUDGET_LIMITED: i32 = 4;
pub const EXIT_USAGE_LIMITED: i32 = 5;
/// Paused without a signal (the goal was paused from elsewhere).
pub const EXIT_PAUSED: i32 = 6;

/// How a goal run ended.
pub struct GoalOutcome {
    pub status: Option<GoalStatus>,
    pub outcome: Outcome,
}

impl GoalOutcome {
    pub fn exit_code(&self) -> i32 {
        if let Some(signal) = self.outcome.interrupted_by {
            return signal.exit_code();
        }
        match self.status {
            Some(GoalStatus::Complete) => EXIT_COMPLETE,
            Some(GoalStatus::Blocked) => EXIT_BLOCKED,
            Some(GoalStatus::BudgetLimited) => EXIT_BUDGET_LIMITED,
            Some(GoalStatus::UsageLimited) => EXIT_USAGE_LIMITED,
            Some(GoalStatus::Paused) => EXIT_PAUSED,
            Some(GoalStatus::Active) | None => 1,
        }
    }
}

/// The goal the command line asks for.
pub fn change(args: &GoalArgs, objective: String) -> GoalChange {
    let shell = args.verify.iter().map(|command| Verifier::Shell {
        command: command.clone(),
    });
    let mcp = args.verify_mcp.iter().map(|check| Verifier::Mcp {
        server: check.server.clone(),
        tool: check.tool.clone(),
        arguments: check.arguments.clone(),
    });
    let eval = args.verify_eval.iter().map(|prompt| Verifier::Evaluator {
        prompt: prompt.clone(),
    });
    let criteria = shell
        .chain(mcp)
        .chain(eval)
        .map(|verifier| Criterion {
            description: verifier.describe(),
            verify: Some(verifier),
        })
        .collect();
    GoalChange {
        objective: Some(objective),
        status: Some(GoalStatus::Active),
        budget: Some(GoalBudget {
            tokens: args.goal_tokens,
            // Whole milliseconds; a negative or absurd value is no budget at all.
            wall_time_ms: args
                .goal_minutes
                .filter(|m| m.is_finite() && *m > 0.0)
                .map(|m| Duration::from_secs_f64(m * 60.0).as_millis())
                .map(|ms| u64::try_from(ms).unwrap_or(u64::MAX)),
            turns: args.goal_turns,
        }),
        criteria: Some(criteria),
        origin: GoalOrigin::User,
        // Only when asked: otherwise `[goals] auto_resume` decides, as for any goal.
        auto_resume: args.goal_auto_resume.then_some(true),
    }
}

pub async fn drive_goal(
    thread: NewThread,
    change: GoalChange,
    mode: OutputMode,
) -> anyhow::Result<GoalOutcome> {
    let NewThread {
        handle, mut events, ..
    } = thread;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?;
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut printer = Printer::new(mode);
    let (mut status, mut driven) = match handle.submit(Op::SetGoal { change }).await? {
        OpResult::Goal { goal } => (
            goal.as_ref().map(|g| g.status),
            goal.is_some_and(|g| g.driven()),
        ),
        OpResult::GoalRefused { error } => bail!("the goal was refused: {error}"),
        other => bail!("unexpected answer to the goal: {other:?}"),
    };
    let mut outcome = Outcome::default();
    let mut last_message = None;
    let mut turn_running = false;
    // Driven: active, or waiting for a retry after the provider's usage limit.
    while driven || turn_running {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { break };
                printer.print(&event).context("writing output")?;
                match &event.msg {
                    EventMsg::GoalUpdated { goal } => {
                        status = Some(goal.status);
                        driven = goal.driven();
                    }
                    EventMsg::GoalCleared => (status, driven) = (None, false),
                    EventMsg::TurnStarted { .. } => turn_running = true,
                    EventMsg::TurnCompleted { .. } => {
                        turn_running = false;
                        outcome.completed = true;
                    }
                    EventMsg::TurnFailed { .. } | EventMsg::TurnAborted { .. } => {
                        turn_running = false;
                    }
                    EventMsg::ItemCompleted { item: Item::AgentMessage { text, .. } } => {
                        last_message = Some(text.clone());
                    }
                    EventMsg::ClientRequested { request_id, request, .. } => {
                        handle.submit(Op::Respond {
                            request_id: request_id.clone(),
                            response: request.unanswered(),
                        }).await?;
                    }
                    _ => {}
                }
            }
            stop = async {
                tokio::select! {
                    _ = sigint.recv() => StopSignal::Interrupt,
                    _ = sigterm.recv() => StopSignal::Terminate,
                }
            } => {
                if outcome.interrupted_by.is_some() {
                    break;
                }
                outcome.interrupted_by = Some(stop);
                // Between turns there is nothing to interrupt: pause the goal itself.
                handle.submit(Op::Interrupt).await?;
                handle.submit(Op::SetGoal { change: GoalChange {
                    status: Some(GoalStatus::Paused),
                    ..GoalChange::default()
                }}).await?;
            }
        }
    }
    outcome.final_message = last_message.filter(|m| !m.is_empty());
    outcome.final_message_streamed = printer.streamed(outcome.final_message.as_deref());
    super::turn::shut_down(
        &handle,
        &mut events,
        &mut printer,
        (&mut sigint, &mut sigterm),
    )
    .await?;
    Ok(GoalOutcome { status, outcome })
}
