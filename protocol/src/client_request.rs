//! Asking the client: a running tool call emits a [`ClientRequest`] (through the thread's
//! loop, as a `ClientRequest` event), parks, and proceeds once the client's
//! [`ClientResponse`] arrives as an Op (or the turn ends first). Approvals and questions for
//! the user take this one path; a front end that can do more for a tool (read a file in its
//! editor, run a terminal, answer an MCP elicitation) gets a variant here, not new plumbing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::op::ApprovalDecision;

/// What the kernel asks the client on behalf of a running tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientRequest {
    /// May this command run?
    Command {
        command: Vec<String>,
        cwd: PathBuf,
        reason: String,
    },
    /// May this patch write these files (relative to the turn's cwd)?
    Patch { files: Vec<PathBuf>, reason: String },
    /// Questions for the user; the answer is an `answers` response.
    Question { questions: Vec<Question> },
    /// An MCP server asks the user to fill in a form (`elicitation/create`) while one of
    /// its tools runs; the answer is an `elicitation` response.
    Elicitation {
        server: String,
        message: String,
        /// The form: a JSON schema of an object with primitive-typed properties.
        requested_schema: serde_json::Value,
    },
}

impl ClientRequest {
    /// Whether the request asks for permission (answered with a decision).
    pub fn is_approval(&self) -> bool {
        matches!(
            self,
            ClientRequest::Command { .. } | ClientRequest::Patch { .. }
        )
    }

    /// Whether `other` asks for the same permission, whatever reason it gives: the same
    /// command in the same directory, or a patch of the same files. What a "deny for this
    /// session" refuses from then on without asking.
    pub fn same_ask(&self, other: &ClientRequest) -> bool {
        match (self, other) {
            (
                ClientRequest::Command { command, cwd, .. },
                ClientRequest::Command {
                    command: other_command,
                    cwd: other_cwd,
                    ..
                },
            ) => command == other_command && cwd == other_cwd,
            (
                ClientRequest::Patch { files, .. },
                ClientRequest::Patch {
                    files: other_files, ..
                },
            ) => {
                let mut a: Vec<&PathBuf> = files.iter().collect();
                let mut b: Vec<&PathBuf> = other_files.iter().collect();
                a.sort();
                a.dedup();
                b.sort();
                b.dedup();
                a == b
            }
            _ => false,
        }
    }

    /// Whether `response` is the kind of answer this request asks for.
    pub fn answered_by(&self, response: &ClientResponse) -> bool {
        matches!(
            (self, response),
            (
                ClientRequest::Command { .. } | ClientRequest::Patch { .. },
                ClientResponse::Decision { .. }
            ) | (
                ClientRequest::Question { .. },
                ClientResponse::Answers { .. }
            ) | (
                ClientRequest::Elicitation { .. },
                ClientResponse::Elicitation { .. }
            )
        )
    }

    /// The answer when nobody can give one (headless, no client attached): no approval,
    /// no answers, the form declined.
    pub fn unanswered(&self) -> ClientResponse {
        match self {
            ClientRequest::Command { .. } | ClientRequest::Patch { .. } => {
                ClientResponse::Decision {
                    decision: ApprovalDecision::Deny,
                }
            }
            ClientRequest::Question { .. } => ClientResponse::Answers {
                answers: BTreeMap::new(),
            },
            ClientRequest::Elicitation { .. } => ClientResponse::Elicitation {
                action: ElicitationAction::Decline,
                content: None,
            },
        }
    }
}

/// One question for the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Question {
    /// Names the answer in the response.
    pub id: String,
    /// A short title.
    pub header: String,
    pub question: String,
    /// Choices; empty for free text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    /// The answer must not be shown or logged as typed (a password).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    pub label: String,
    pub description: String,
}

/// The client's answer to a [`ClientRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientResponse {
    /// The answer to an approval.
    Decision { decision: ApprovalDecision },
    /// The answers to questions, by question id.
    Answers {
        answers: BTreeMap<String, Vec<String>>,
    },
    /// The answer to an elicitation: the form's values when accepted.
    Elicitation {
        action: ElicitationAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Value>,
    },
}

/// What the user did with an MCP server's form (MCP's own three answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    /// Filled in and sent.
    Accept,
    /// Refused to give the information; the tool goes on without it.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// What "approve for this session" let through, recorded with the answer so that the
/// thread's grants are a fold of its events (and survive a resume).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionGrant {
    /// Any later command whose argv starts with this one.
    CommandPrefix { argv: Vec<String> },
    /// Writes to these paths (resolved when granted, so a link cannot alias them) and
    /// everything under them.
    Paths { paths: Vec<PathBuf> },
}
