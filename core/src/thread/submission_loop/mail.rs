//! Mail from another thread of the tree (a sub-agent's task, a child's result): the same
//! mailbox as steers, with the phase rule (mail that arrives after the running turn's
//! final answer waits for the next turn, which `start_leftover_turn` opens) and idle
//! wake-up (mail to an idle thread starts a turn by itself, under a random UUIDv4 id).
//! Mail that waits in the mailbox is recorded (`MailQueued`, then `MailTaken` once it is in
//! the history), so the thread's fold knows what a crash left undelivered.

use rein_protocol::{
    EventMsg, InputOutcome, InputPart, OpResult, RejectReason, SubmissionId, TaskKind, ThreadId,
    TurnId,
};

use super::SubmissionLoop;
use crate::turn::pending::PendingEntry;

/// The id of a turn that mail started: random (UUIDv4), as the contract says, so it is
/// never mistaken for a user submission's time-ordered id.
pub(super) fn mail_turn_id() -> TurnId {
    TurnId::from_uuid(uuid::Uuid::new_v4())
}

impl SubmissionLoop {
    pub(super) fn on_mail(
        &mut self,
        id: SubmissionId,
        from: ThreadId,
        items: Vec<InputPart>,
    ) -> InputOutcome {
        if items.iter().all(InputPart::is_blank) {
            return InputOutcome::Rejected {
                reason: RejectReason::EmptyInput,
            };
        }
        tracing::debug!(thread = %self.thread_id, %from, "mail");
        let entry = PendingEntry {
            submission: id,
            items,
            mail: true,
        };
        let running = self.running.as_ref().map(|t| t.id);
        match running {
            Some(turn_id) => {
                let regular = self
                    .state
                    .active_turn
                    .as_ref()
                    .is_some_and(|t| t.kind == TaskKind::Regular);
                // Recorded before it is accepted: a crash before the next step does not
                // lose it (a restore delivers it again).
                self.emit(
                    Some(turn_id),
                    EventMsg::MailQueued {
                        submission_id: id,
                        from,
                        items: entry.items.clone(),
                    },
                );
                self.pending.push(entry);
                if regular {
                    InputOutcome::Steered { turn_id }
                } else {
                    InputOutcome::Queued { behind: turn_id }
                }
            }
            None => {
                let turn_id = mail_turn_id();
                let mut inputs = self.pending.take_all();
                inputs.push(entry);
                match self.start_turn(turn_id, inputs, false, None) {
                    Ok(()) => InputOutcome::Started { turn_id },
                    Err(reason) => InputOutcome::Rejected { reason },
                }
            }
        }
    }

    /// Mail waiting for the tree's capacity: recorded only (the mailbox does not hold it;
    /// it comes as `AgentMail` under the same id once the tree has room).
    pub(super) fn on_hold_mail(
        &mut self,
        id: SubmissionId,
        from: ThreadId,
        items: Vec<InputPart>,
    ) -> OpResult {
        let turn = self.running.as_ref().map(|t| t.id);
        self.emit(
            turn,
            EventMsg::MailQueued {
                submission_id: id,
                from,
                items,
            },
        );
        OpResult::Accepted
    }

    /// Held mail that will never come: taken, so a restore does not send it again. Mail
    /// that reached the mailbox meanwhile is left to its turn.
    pub(super) fn on_drop_mail(&mut self, mut ids: Vec<SubmissionId>) -> OpResult {
        ids.retain(|id| {
            self.state
                .pending_mail
                .iter()
                .any(|m| m.submission_id == *id)
                && !self.pending.has_mail(*id)
        });
        if !ids.is_empty() {
            let turn = self.running.as_ref().map(|t| t.id);
            self.emit(
                turn,
                EventMsg::MailTaken {
                    submission_ids: ids,
                },
            );
        }
        OpResult::Accepted
    }
}
