//! Client requests parked in the loop: a call's request (an approval, a question) waits
//! here for the client's answer Op; ending the turn resolves every request of its run as
//! cancelled. An approval "for the session" records its grant in the answer's event, which
//! the reducer folds into the thread's grants; the calls see them before the asker wakes. A
//! denial "for the session" is folded from the answer's outcome and the request it answers:
//! the loop refuses the same request from then on without asking.

use rein_protocol::shell_words::command_words;
use rein_protocol::{
    ApprovalDecision, ApprovalOutcome, ClientRequest, ClientResponse, EventMsg, OpResult,
    SessionGrant, TurnAbortReason, TurnId,
};

use super::SubmissionLoop;
use crate::turn::sink::RunId;

impl SubmissionLoop {
    pub(super) fn cancel_requests(&mut self, run: RunId, turn_id: TurnId) {
        let ids: Vec<String> = self
            .requests
            .iter()
            .filter(|(_, r)| r.run == run)
            .map(|(id, _)| id.clone())
            .collect();
        for request_id in ids {
            self.requests.remove(&request_id);
            self.emit(
                Some(turn_id),
                EventMsg::ClientRequestResolved {
                    request_id,
                    outcome: ApprovalOutcome::Cancelled,
                    grant: None,
                },
            );
        }
    }

    pub(super) async fn on_response(
        &mut self,
        request_id: &str,
        response: ClientResponse,
    ) -> OpResult {
        let Some(parked) = self.requests.get(request_id) else {
            return OpResult::Refused {
                message: format!("no pending client request with id {request_id}"),
            };
        };
        if !parked.request.answered_by(&response) {
            return OpResult::Refused {
                message: format!(
                    "request {request_id} asks for {}",
                    parked.request.expected_answer()
                ),
            };
        }
        let outcome = outcome_of(&response, &parked.request);
        let Some(parked) = self.requests.remove(request_id) else {
            return OpResult::Accepted;
        };
        let turn_id = self.running.as_ref().map(|t| t.id);
        let grant = match &response {
            ClientResponse::CommandRule { prefix } => Some(SessionGrant::CommandPrefix {
                argv: prefix.clone(),
            }),
            _ => parked.grant,
        }
        .filter(|_| outcome == ApprovalOutcome::ApprovedForSession);
        let granted = grant.is_some();
        self.emit(
            turn_id,
            EventMsg::ClientRequestResolved {
                request_id: request_id.to_owned(),
                outcome,
                grant,
            },
        );
        if granted {
            self.tools.set_grants(self.state.session_grants.clone());
        }
        if outcome == ApprovalOutcome::Aborted {
            // Turn the page before the tool hears the answer: woken first, it could end its
            // call and let the task start another step (a model request) before the abort.
            self.abort_turn(TurnAbortReason::Interrupted).await;
        }
        let _ = parked.reply.send(as_the_tool_hears_it(response));
        OpResult::Accepted
    }
}

/// What the client's answer to `request` is, as the rollout records it.
fn outcome_of(response: &ClientResponse, request: &ClientRequest) -> ApprovalOutcome {
    match response {
        ClientResponse::Decision { decision } => match decision {
            ApprovalDecision::Approve => ApprovalOutcome::Approved,
            ApprovalDecision::ApproveForSession => ApprovalOutcome::ApprovedForSession,
            ApprovalDecision::Deny => ApprovalOutcome::Denied,
            ApprovalDecision::DenyForSession => ApprovalOutcome::DeniedForSession,
            ApprovalDecision::Abort => ApprovalOutcome::Aborted,
        },
        ClientResponse::CommandRule { prefix } => match request {
            ClientRequest::Command { command, .. } if rule_covers(prefix, command) => {
                ApprovalOutcome::ApprovedForSession
            }
            _ => ApprovalOutcome::Approved,
        },
        ClientResponse::Answers { .. }
        | ClientResponse::Elicitation { .. }
        | ClientResponse::Text { .. }
        | ClientResponse::Written
        | ClientResponse::TerminalExited { .. }
        | ClientResponse::Failed { .. } => ApprovalOutcome::Answered,
    }
}

/// The tool hears a plain denial or approval: what the session remembers is the loop's
/// business.
fn as_the_tool_hears_it(response: ClientResponse) -> ClientResponse {
    match response {
        ClientResponse::Decision {
            decision: ApprovalDecision::DenyForSession,
        } => ClientResponse::Decision {
            decision: ApprovalDecision::Deny,
        },
        ClientResponse::CommandRule { .. } => ClientResponse::Decision {
            decision: ApprovalDecision::Approve,
        },
        response => response,
    }
}

/// Whether a rule `prefix` covers the asked `command` (its argv, or its script's words):
/// a rule the user made from one command must at least let that command through.
fn rule_covers(prefix: &[String], command: &[String]) -> bool {
    !prefix.is_empty()
        && (command.starts_with(prefix)
            || command_words(command).is_some_and(|words| words.starts_with(prefix)))
}
