//! A thread whose rollout cannot be written (a full disk) is read-only: the turn that was
//! running fails with `RolloutWrite`, and input, mail and maintenance are refused with
//! [`RejectReason::ReadOnly`] until a write succeeds again, so nothing the thread accepts
//! exists only in memory. The loop asks the store to retry every [`RETRY_EVERY`] and on
//! each refused submission; the first report past the failure makes the thread writable.

use std::time::Duration;

use rein_protocol::{ErrorCode, EventMsg, InputOutcome, Op, OpResult, RejectReason};
use tokio::time::Instant;

use super::SubmissionLoop;

/// How often a read-only thread asks the store to write what it holds again.
pub(super) const RETRY_EVERY: Duration = Duration::from_secs(2);

pub(super) struct ReadOnly {
    /// What failed, as the refusals say it.
    pub message: String,
    pub retry_at: Instant,
}

impl SubmissionLoop {
    /// The store's state changed: report its failures, then go read-only or writable.
    pub(super) async fn on_store_changed(&mut self) {
        let failure = self.emitter.report_failures(&mut self.state);
        match (self.emitter.read_only(), self.read_only.is_some()) {
            (true, false) => {
                let message =
                    failure.unwrap_or_else(|| "the rollout could not be written".to_owned());
                self.read_only = Some(ReadOnly {
                    message: message.clone(),
                    retry_at: Instant::now() + RETRY_EVERY,
                });
                self.fail_running(message).await;
            }
            (false, true) => {
                self.read_only = None;
                self.emit(
                    None,
                    EventMsg::Warning {
                        message: "the rollout is written again: the thread takes new input".into(),
                    },
                );
            }
            _ => {}
        }
    }

    /// When the next retry is due, while read-only.
    pub(super) fn retry_at(&self) -> Option<Instant> {
        self.read_only.as_ref().map(|r| r.retry_at)
    }

    pub(super) fn retry_store(&mut self) {
        if let Some(read_only) = &mut self.read_only {
            read_only.retry_at = Instant::now() + RETRY_EVERY;
            self.emitter.retry();
        }
    }

    /// The answer to `op` while read-only, or `None` if the op may go on (interrupts,
    /// answers to requests, shutdown: nothing that starts new work).
    pub(super) fn refuse_read_only(&mut self, op: &Op) -> Option<OpResult> {
        let message = self.read_only.as_ref()?.message.clone();
        let reason = RejectReason::ReadOnly { message };
        let refusal = match op {
            Op::UserInput { .. } | Op::AgentMail { .. } | Op::Recover => {
                OpResult::Input(InputOutcome::Rejected { reason })
            }
            Op::HoldMail { .. }
            | Op::RecordTaskGraph { .. }
            | Op::SetName { .. }
            | Op::SetMemoryMode { .. }
            | Op::Rollback { .. }
            | Op::Compact
            | Op::SwitchModel { .. }
            | Op::Review { .. }
            | Op::UserShell { .. } => OpResult::Refused {
                message: reason.to_string(),
            },
            Op::SetGoal { .. } | Op::ClearGoal => OpResult::GoalRefused {
                error: rein_protocol::GoalError::ReadOnly,
            },
            Op::Interrupt
            | Op::InterruptTurn { .. }
            | Op::BudgetStop
            | Op::Shutdown
            | Op::CleanBackgroundTerminals
            | Op::ApprovalAnswer { .. }
            | Op::Respond { .. }
            | Op::DropMail { .. } => return None,
        };
        // Someone wants to go on: perhaps there is space again.
        self.retry_store();
        Some(refusal)
    }

    /// Stop the running turn (as an interrupt would) and end it as failed: its events
    /// are not durable, so it must not look completed.
    async fn fail_running(&mut self, message: String) {
        let Some(turn) = self.stop_running().await else {
            return;
        };
        let turn_id = turn.id;
        self.cancel_requests(turn.run, turn_id);
        for msg in turn.open.closing_events() {
            self.emit(Some(turn_id), msg);
        }
        self.emit(
            Some(turn_id),
            EventMsg::TurnFailed {
                code: ErrorCode::RolloutWrite,
                message,
            },
        );
    }
}
