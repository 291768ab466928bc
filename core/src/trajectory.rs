//! The trajectory of a session, projected from its rollout's events: per turn, the steps
//! in the order they were taken (tool calls in the order they were announced, runtime
//! actions where they happened) and the turn's outcome. Nothing is stored: the rollout is
//! the truth, and this is one more way of reading it.

use std::collections::HashMap;

use rein_protocol::trajectory::{StepStatus, TrajectoryStep, TurnOutcome, TurnTrajectory};
use rein_protocol::{
    AdvisorVerdict, Event, EventMsg, Item, ToolAction, ToolOutcome, TurnAbortReason,
};
use serde_json::json;

/// How much of an observation, an input or a message a trajectory keeps.
pub const PREVIEW_CHARS: usize = 400;

struct OpenTurn {
    trajectory: TurnTrajectory,
    started_ms: u64,
    /// Index into `steps` of each announced call that has not ended, by call id.
    calls: HashMap<String, usize>,
    compaction_started_ms: Option<u64>,
}

/// The trajectory of every turn in `events`, in order.
pub fn project(events: &[Event]) -> Vec<TurnTrajectory> {
    let mut done: Vec<TurnTrajectory> = Vec::new();
    let mut open: Option<OpenTurn> = None;
    for event in events {
        if let EventMsg::TurnStarted { kind, .. } = &event.msg {
            done.extend(open.take().map(close_unfinished));
            let Some(turn_id) = event.turn_id else {
                continue;
            };
            open = Some(OpenTurn {
                trajectory: TurnTrajectory {
                    turn_id,
                    kind: *kind,
                    input: None,
                    steps: Vec::new(),
                    outcome: TurnOutcome::Unfinished,
                    last_agent_message: None,
                    duration_ms: None,
                },
                started_ms: event.timestamp_ms,
                calls: HashMap::new(),
                compaction_started_ms: None,
            });
            continue;
        }
        let Some(turn) = open.as_mut() else {
            continue;
        };
        if event.turn_id != Some(turn.trajectory.turn_id) {
            continue;
        }
        let outcome = match &event.msg {
            EventMsg::TurnCompleted { .. } => Some(TurnOutcome::Success),
            EventMsg::TurnFailed { message, .. } => Some(TurnOutcome::Failed {
                message: message.clone(),
            }),
            EventMsg::TurnAborted { reason } => Some(TurnOutcome::Cancelled {
                reason: abort_reason(*reason).into(),
            }),
            msg => {
                step(turn, msg, event.timestamp_ms);
                None
            }
        };
        if let Some(outcome) = outcome {
            if let Some(mut turn) = open.take() {
                turn.trajectory.outcome = outcome;
                turn.trajectory.duration_ms =
                    Some(event.timestamp_ms.saturating_sub(turn.started_ms));
                done.push(close_unfinished(turn));
            }
        }
    }
    done.extend(open.map(close_unfinished));
    done
}

/// Calls that never ended are interrupted.
fn close_unfinished(turn: OpenTurn) -> TurnTrajectory {
    let mut trajectory = turn.trajectory;
    for index in turn.calls.into_values() {
        if let Some(step) = trajectory.steps.get_mut(index) {
            step.status = StepStatus::Interrupted;
        }
    }
    trajectory
}

fn step(turn: &mut OpenTurn, msg: &EventMsg, at_ms: u64) {
    let steps = &mut turn.trajectory.steps;
    match msg {
        EventMsg::ItemCompleted { item } => match item {
            Item::UserMessage { .. } if turn.trajectory.input.is_none() => {
                turn.trajectory.input = item.message_text().map(|t| preview(&t));
            }
            Item::AgentMessage { text, .. } => {
                turn.trajectory.last_agent_message = Some(preview(text));
            }
            _ => {}
        },
        EventMsg::ToolCallBegin {
            call_id,
            name,
            action,
            ..
        } => {
            turn.calls.insert(call_id.clone(), steps.len());
            steps.push(call_step(name, action));
        }
        EventMsg::ToolCallEnd {
            call_id,
            duration_ms,
            outcome,
            ..
        } => {
            let Some(step) = turn.calls.remove(call_id).and_then(|i| steps.get_mut(i)) else {
                return;
            };
            step.duration_ms = *duration_ms;
            step.status = call_status(outcome);
            step.observation = observation(outcome);
        }
        EventMsg::AdvisorReviewCompleted {
            review_id,
            verdict,
            duration_ms,
        } => steps.push(TrajectoryStep {
            action: "advisor_review".into(),
            action_input: json!({ "review_id": review_id }),
            observation: Some(preview(verdict.text())),
            duration_ms: *duration_ms,
            screenshot_id: None,
            status: match verdict {
                AdvisorVerdict::Approve { .. } | AdvisorVerdict::ApproveWithWarnings { .. } => {
                    StepStatus::Succeeded
                }
                AdvisorVerdict::Reject { .. } => StepStatus::Declined,
                AdvisorVerdict::FailedOpen { .. } => StepStatus::Failed,
            },
        }),
        EventMsg::CompactionStarted { .. } => turn.compaction_started_ms = Some(at_ms),
        EventMsg::Compacted {
            tokens_before,
            tokens_after,
            ..
        } => steps.push(TrajectoryStep {
            action: "compaction".into(),
            action_input: json!({ "tokens_before": tokens_before }),
            observation: Some(format!("{tokens_before} → {tokens_after} tokens")),
            duration_ms: turn
                .compaction_started_ms
                .take()
                .map_or(0, |start| at_ms.saturating_sub(start)),
            screenshot_id: None,
            status: StepStatus::Succeeded,
        }),
        EventMsg::ModelRerouted { from, to, reason } => steps.push(TrajectoryStep {
            action: "model_rerouted".into(),
            action_input: json!({ "from": from, "to": to }),
            observation: Some(preview(reason)),
            duration_ms: 0,
            screenshot_id: None,
            status: StepStatus::Succeeded,
        }),
        _ => {}
    }
}

/// A call's step as it begins: its input is the action rein recorded, else its arguments.
/// A call's step; its input is what the tool said it would do, or for a tool the kernel
/// knows nothing more about, the arguments it was called with.
fn call_step(name: &str, action: &ToolAction) -> TrajectoryStep {
    let action_input = match action {
        ToolAction::Other { arguments, .. } => arguments.clone(),
        known => serde_json::to_value(known).unwrap_or_default(),
    };
    TrajectoryStep {
        action: name.to_owned(),
        action_input,
        observation: None,
        duration_ms: 0,
        screenshot_id: None,
        // Until it ends: a call that never does was interrupted.
        status: StepStatus::Interrupted,
    }
}

/// How a call ended, from its outcome.
fn call_status(outcome: &ToolOutcome) -> StepStatus {
    match outcome {
        ToolOutcome::Declined { .. } => StepStatus::Declined,
        ToolOutcome::Interrupted { .. } => StepStatus::Interrupted,
        o if o.succeeded() => StepStatus::Succeeded,
        _ => StepStatus::Failed,
    }
}

/// What a call's outcome shows, previewed; a patch lists the files it changed.
fn observation(outcome: &ToolOutcome) -> Option<String> {
    match outcome {
        ToolOutcome::Patched { changes } => Some(
            changes
                .iter()
                .map(|c| c.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ToolOutcome::Interrupted { .. } => None,
        other => other.shown_text().map(preview),
    }
}

fn abort_reason(reason: TurnAbortReason) -> &'static str {
    match reason {
        TurnAbortReason::Interrupted => "interrupted",
        TurnAbortReason::BudgetLimited => "budget_limited",
        TurnAbortReason::Replaced => "replaced",
        TurnAbortReason::ReviewEnded => "review_ended",
    }
}

/// At most [`PREVIEW_CHARS`] characters of `text`, marked when cut.
pub fn preview(text: &str) -> String {
    let mut cut: String = text.chars().take(PREVIEW_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rein_protocol::{TaskKind, ThreadId, ThreadSettings, TurnId};

    fn event(turn: TurnId, seq: u64, msg: EventMsg) -> Event {
        Event {
            thread_id: ThreadId::new(),
            turn_id: Some(turn),
            seq,
            timestamp_ms: 1_000 + seq * 10,
            msg,
        }
    }

    fn settings() -> ThreadSettings {
        serde_json::from_value(json!({
            "model": "m", "cwd": "/w", "approval_policy": "never",
            "sandbox_policy": "read-only", "budget": {}, "instructions": ""
        }))
        .unwrap()
    }

    #[test]
    fn an_interrupted_turn_is_cancelled_and_its_open_call_interrupted() {
        let turn = TurnId::new();
        let events = vec![
            event(
                turn,
                0,
                EventMsg::TurnStarted {
                    kind: TaskKind::Regular,
                    settings: settings(),
                    recovered: false,
                    output_schema: None,
                },
            ),
            event(
                turn,
                1,
                EventMsg::AdvisorReviewCompleted {
                    review_id: "r".into(),
                    verdict: AdvisorVerdict::FailedOpen {
                        failure: rein_protocol::AdvisorFailure::Timeout,
                        message: "no answer within 5 ms".into(),
                    },
                    duration_ms: 5,
                },
            ),
            event(
                turn,
                2,
                EventMsg::ToolCallBegin {
                    call_id: "c".into(),
                    name: "custom".into(),
                    arguments: "not json".into(),
                    action: rein_protocol::ToolAction::other("custom", "not json"),
                },
            ),
            event(
                turn,
                3,
                EventMsg::TurnAborted {
                    reason: TurnAbortReason::Interrupted,
                },
            ),
        ];
        let turns = project(&events);
        assert_eq!(turns.len(), 1);
        assert_eq!(
            turns[0].outcome,
            TurnOutcome::Cancelled {
                reason: "interrupted".into()
            }
        );
        assert_eq!(turns[0].duration_ms, Some(30));
        let steps: Vec<_> = turns[0]
            .steps
            .iter()
            .map(|s| (s.action.as_str(), s.action_input.clone(), s.status))
            .collect();
        assert_eq!(
            steps,
            vec![
                (
                    "advisor_review",
                    json!({"review_id": "r"}),
                    StepStatus::Failed
                ),
                ("custom", json!("not json"), StepStatus::Interrupted),
            ]
        );
    }
}
