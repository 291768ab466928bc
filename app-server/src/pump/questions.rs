//! The pump's client questions: an approval (or question, or form) put to every
//! subscriber under a request id of each, and the client's answer read back into the
//! kernel's response; with nobody to ask, the answer is no.

use std::collections::HashMap;

use rein_app_server_protocol::{
    CommandExecutionApprovalDecision as CommandDecision, FileChangeApprovalDecision,
    McpServerElicitationAction, RequestId, ServerAnswer, ServerRequest,
};
use rein_protocol::{ApprovalDecision, ClientResponse, ElicitationAction, Op};
use serde_json::Value;

use super::Pump;
use crate::outbound::Outbound;
use crate::subscribers::Subscriber;

/// One open approval: what was asked, and every subscriber asked, each under its own
/// request id.
pub(super) struct Question {
    pub(super) request: ServerRequest,
    pub(super) askees: Vec<(Subscriber, RequestId)>,
}

/// Open approvals by approval id.
pub(super) type Asked = HashMap<String, Question>;

impl Pump {
    /// Put the question to every subscriber; with nobody to ask (or the thread being
    /// archived, whose asker waits for the archive), the answer is no (a turn never waits
    /// on a question nobody can see, nor runs unapproved).
    pub(super) async fn ask(&self, approval_id: String, request: ServerRequest, asked: &mut Asked) {
        let subscribers = self.thread.subscribers.current();
        if subscribers.is_empty() || self.thread.meta().closing {
            self.respond(approval_id, unanswered(&request)).await;
            return;
        }
        let mut question = Question {
            request,
            askees: Vec::with_capacity(subscribers.len()),
        };
        let mut sending = Vec::with_capacity(subscribers.len());
        for subscriber in subscribers {
            sending.push(self.register_ask(&mut question, subscriber));
        }
        let request = question.request.clone();
        // Recorded before sending, so an answer always finds its question.
        asked.insert(approval_id, question);
        for (out, request_id) in sending {
            out.request(&request_id, &request).await;
        }
    }

    /// Give `subscriber` a request id for `question` and the pump to answer; returns where
    /// and under which id to send it.
    pub(super) fn register_ask(
        &self,
        question: &mut Question,
        subscriber: Subscriber,
    ) -> (Outbound, RequestId) {
        let request_id = subscriber.out.next_request_id();
        subscriber
            .pending
            .insert(request_id.clone(), self.thread.pump.clone());
        let out = subscriber.out.clone();
        question.askees.push((subscriber, request_id.clone()));
        (out, request_id)
    }

    /// Put the questions still open to `from` (just subscribed), unless it was asked.
    pub(super) async fn reask(&self, from: &Subscriber, asked: &mut Asked) {
        for question in asked.values_mut() {
            if question
                .askees
                .iter()
                .any(|(s, _)| s.connection == from.connection)
            {
                continue;
            }
            let (out, request_id) = self.register_ask(question, from.clone());
            out.request(&request_id, &question.request).await;
        }
    }

    /// The client answered `request_id`: the first answer to a question is the kernel's;
    /// the other subscribers asked are told it is resolved.
    pub(super) async fn answer(
        &self,
        from: &Subscriber,
        request_id: RequestId,
        outcome: Result<Value, Value>,
        asked: &mut Asked,
    ) {
        let question = asked.iter().find_map(|(approval, question)| {
            question
                .askees
                .iter()
                .any(|(s, r)| s.connection == from.connection && *r == request_id)
                .then(|| approval.clone())
        });
        // Already answered by another subscriber, or withdrawn.
        let Some(approval_id) = question else { return };
        let Some(question) = asked.remove(&approval_id) else {
            return;
        };
        self.respond(approval_id, response_of(&question.request, outcome))
            .await;
        for (subscriber, request_id) in question.askees {
            subscriber.pending.take(&request_id);
            self.resolved(&subscriber, request_id).await;
        }
    }

    /// `from` stopped listening: its questions are no longer its to answer; one nobody
    /// else was asked is declined, so the turn does not wait forever.
    pub(super) async fn left(&self, from: &Subscriber, asked: &mut Asked) {
        let mut unanswerable = Vec::new();
        for (approval_id, question) in asked.iter_mut() {
            let askees = &mut question.askees;
            let mut kept = Vec::with_capacity(askees.len());
            for (subscriber, request_id) in askees.drain(..) {
                if subscriber.connection == from.connection {
                    subscriber.pending.take(&request_id);
                    self.resolved(&subscriber, request_id).await;
                } else {
                    kept.push((subscriber, request_id));
                }
            }
            *askees = kept;
            if askees.is_empty() {
                unanswerable.push(approval_id.clone());
            }
        }
        for approval_id in unanswerable {
            if let Some(question) = asked.remove(&approval_id) {
                self.respond(approval_id, unanswered(&question.request))
                    .await;
            }
        }
    }

    pub(super) async fn respond(&self, request_id: String, response: ClientResponse) {
        let op = Op::Respond {
            request_id,
            response,
        };
        if let Err(e) = self.thread.handle.submit(op).await {
            tracing::debug!("client response: {e}");
        }
    }
}

/// The kernel's answer for a client's answer to `request`: the answer read as the
/// request's own answer type; an error, or an answer of the wrong shape, is no (a refusal,
/// no answers, the form declined).
pub(super) fn response_of(
    request: &ServerRequest,
    outcome: Result<Value, Value>,
) -> ClientResponse {
    let answer = match outcome {
        Ok(result) => request.read_answer(result).ok(),
        Err(_) => None,
    };
    let Some(answer) = answer else {
        return unanswered(request);
    };
    match answer {
        ServerAnswer::CommandExecutionRequestApproval(a) => match a.decision {
            // Only a command's approval can carry a rule (a file change's would be refused).
            CommandDecision::AcceptWithExecpolicyAmendment {
                execpolicy_amendment,
            } => ClientResponse::CommandRule {
                prefix: execpolicy_amendment,
            },
            CommandDecision::Accept => decision(ApprovalDecision::Approve),
            CommandDecision::AcceptForSession => decision(ApprovalDecision::ApproveForSession),
            CommandDecision::Cancel => decision(ApprovalDecision::Abort),
            // rein has no network policy: an amendment of one approves nothing.
            CommandDecision::Decline | CommandDecision::ApplyNetworkPolicyAmendment { .. } => {
                decision(ApprovalDecision::Deny)
            }
        },
        ServerAnswer::FileChangeRequestApproval(a) | ServerAnswer::MemoryRequestApproval(a) => {
            decision(match a.decision {
                FileChangeApprovalDecision::Accept => ApprovalDecision::Approve,
                FileChangeApprovalDecision::AcceptForSession => ApprovalDecision::ApproveForSession,
                FileChangeApprovalDecision::Cancel => ApprovalDecision::Abort,
                FileChangeApprovalDecision::Decline => ApprovalDecision::Deny,
            })
        }
        ServerAnswer::ToolRequestUserInput(a) => ClientResponse::Answers {
            answers: a
                .answers
                .into_iter()
                .map(|(id, answer)| (id, answer.answers))
                .collect(),
        },
        ServerAnswer::McpServerElicitationRequest(a) => {
            let action = match a.action {
                McpServerElicitationAction::Accept => ElicitationAction::Accept,
                McpServerElicitationAction::Decline => ElicitationAction::Decline,
                McpServerElicitationAction::Cancel => ElicitationAction::Cancel,
            };
            ClientResponse::Elicitation {
                action,
                content: a
                    .content
                    .filter(|c| !c.is_null() && action == ElicitationAction::Accept),
            }
        }
    }
}

fn decision(decision: ApprovalDecision) -> ClientResponse {
    ClientResponse::Decision { decision }
}

/// What a request nobody can answer gets: no approval, no answers, the form declined.
pub(super) fn unanswered(request: &ServerRequest) -> ClientResponse {
    match request {
        ServerRequest::McpServerElicitationRequest(_) => ClientResponse::Elicitation {
            action: ElicitationAction::Decline,
            content: None,
        },
        ServerRequest::ToolRequestUserInput(_) => ClientResponse::Answers {
            answers: Default::default(),
        },
        ServerRequest::CommandExecutionRequestApproval(_)
        | ServerRequest::FileChangeRequestApproval(_)
        | ServerRequest::MemoryRequestApproval(_) => decision(ApprovalDecision::Deny),
    }
}
