//! Approvals parked in the loop: a tool's request waits here for the client's answer Op;
//! ending the turn resolves every request of its run as cancelled.

use rein_protocol::{
    ApprovalDecision, ApprovalOutcome, EventMsg, OpResult, TurnAbortReason, TurnId,
};

use super::SubmissionLoop;
use crate::turn::sink::RunId;

impl SubmissionLoop {
    pub(super) fn cancel_approvals(&mut self, run: RunId, turn_id: TurnId) {
        let ids: Vec<String> = self
            .approvals
            .iter()
            .filter(|(_, a)| a.run == run)
            .map(|(id, _)| id.clone())
            .collect();
        for approval_id in ids {
            self.approvals.remove(&approval_id);
            self.emit(
                Some(turn_id),
                EventMsg::ApprovalResolved {
                    approval_id,
                    outcome: ApprovalOutcome::Cancelled,
                },
            );
        }
    }

    pub(super) async fn on_approval_answer(
        &mut self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> OpResult {
        let Some(parked) = self.approvals.remove(approval_id) else {
            return OpResult::Refused {
                message: format!("no pending approval with id {approval_id}"),
            };
        };
        let turn_id = self.running.as_ref().map(|t| t.id);
        let outcome = match decision {
            ApprovalDecision::Approve => ApprovalOutcome::Approved,
            ApprovalDecision::ApproveForSession => ApprovalOutcome::ApprovedForSession,
            ApprovalDecision::Deny => ApprovalOutcome::Denied,
            ApprovalDecision::Abort => ApprovalOutcome::Aborted,
        };
        self.emit(
            turn_id,
            EventMsg::ApprovalResolved {
                approval_id: approval_id.to_owned(),
                outcome,
            },
        );
        let _ = parked.reply.send(decision);
        if decision == ApprovalDecision::Abort {
            self.abort_turn(TurnAbortReason::Interrupted).await;
        }
        OpResult::Accepted
    }
}
