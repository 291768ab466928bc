//! The pump's client questions: an approval (or question, or form) put to every
//! subscriber under a request id of each, and the client's answer read back into the
//! kernel's response; with nobody to ask, the answer is no.

use std::collections::HashMap;

use rein_app_server_protocol::{RequestId, ReviewDecision};
use rein_protocol::{ApprovalDecision, ClientResponse, ElicitationAction, Op};
use serde_json::Value;

use super::Pump;
use crate::event_map::{COMMAND_APPROVAL_METHOD, ELICITATION_METHOD, QUESTION_METHOD};
use crate::outbound::Outbound;
use crate::subscribers::Subscriber;

/// One open approval: what was asked, and every subscriber asked, each under its own
/// request id.
pub(super) struct Question {
    pub(super) method: &'static str,
    pub(super) params: Value,
    pub(super) askees: Vec<(Subscriber, RequestId)>,
}

/// Open approvals by approval id.
pub(super) type Asked = HashMap<String, Question>;

impl Pump {
    /// Put the question to every subscriber; with nobody to ask, the answer is no (a turn
    /// never waits on a question nobody can see, nor runs unapproved).
    pub(super) async fn ask(
        &self,
        approval_id: String,
        method: &'static str,
        params: Value,
        asked: &mut Asked,
    ) {
        let subscribers = self.thread.subscribers.current();
        if subscribers.is_empty() {
            self.respond(approval_id, unanswered(method)).await;
            return;
        }
        let mut question = Question {
            method,
            params,
            askees: Vec::with_capacity(subscribers.len()),
        };
        let mut sending = Vec::with_capacity(subscribers.len());
        for subscriber in subscribers {
            sending.push(self.register_ask(&mut question, subscriber));
        }
        let (method, params) = (question.method, question.params.clone());
        // Recorded before sending, so an answer always finds its question.
        asked.insert(approval_id, question);
        for (out, request_id) in sending {
            out.request(&request_id, method, params.clone()).await;
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

/// The kernel's answer for a client's answer to `method`.
pub(super) fn response_of(method: &str, outcome: &Result<Value, Value>) -> ClientResponse {
    if method == ELICITATION_METHOD {
        // An error or an answer rein cannot read declines the form.
        let action = match outcome {
            Ok(result) => serde_json::from_value(result["action"].clone()).ok(),
            Err(_) => None,
        };
        return match (action, outcome) {
            (Some(action), Ok(result)) => ClientResponse::Elicitation {
                action,
                content: result
                    .get("content")
                    .filter(|c| !c.is_null() && action == ElicitationAction::Accept)
                    .cloned(),
            },
            _ => ClientResponse::Elicitation {
                action: ElicitationAction::Decline,
                content: None,
            },
        };
    }
    if method == QUESTION_METHOD {
        let answers = match outcome {
            Ok(result) => result["answers"]
                .as_object()
                .map(|answers| {
                    answers
                        .iter()
                        .map(|(id, a)| {
                            let texts = a["answers"]
                                .as_array()
                                .map(|v| v.iter().filter_map(|t| t.as_str().map(str::to_owned)))
                                .into_iter()
                                .flatten()
                                .collect();
                            (id.clone(), texts)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Err(_) => Default::default(),
        };
        return ClientResponse::Answers { answers };
    }
    // Only a command's approval can carry a rule (a file change's would be refused).
    if let Some(prefix) = outcome
        .as_ref()
        .ok()
        .filter(|_| method == COMMAND_APPROVAL_METHOD)
        .and_then(|result| result.get("decision"))
        .and_then(ReviewDecision::rule_of)
    {
        return ClientResponse::CommandRule { prefix };
    }
    ClientResponse::Decision {
        decision: decision_of(outcome),
    }
}

/// What a request nobody can answer gets: no approval, no answers, the form declined.
pub(super) fn unanswered(method: &str) -> ClientResponse {
    if method == ELICITATION_METHOD {
        return ClientResponse::Elicitation {
            action: ElicitationAction::Decline,
            content: None,
        };
    }
    if method == QUESTION_METHOD {
        ClientResponse::Answers {
            answers: Default::default(),
        }
    } else {
        ClientResponse::Decision {
            decision: ApprovalDecision::Deny,
        }
    }
}

fn decision_of(outcome: &Result<Value, Value>) -> ApprovalDecision {
    let decision = match outcome {
        Ok(result) => result.get("decision").and_then(ReviewDecision::from_value),
        Err(_) => None,
    };
    match decision {
        Some(ReviewDecision::Accept) => ApprovalDecision::Approve,
        Some(ReviewDecision::AcceptForSession) => ApprovalDecision::ApproveForSession,
        Some(ReviewDecision::Cancel) => ApprovalDecision::Abort,
        // An error or an answer rein cannot read is a refusal: never run unapproved.
        Some(ReviewDecision::Decline) | None => ApprovalDecision::Deny,
    }
}
