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
    /// Read a text file as the client has it (an editor: with its unsaved changes). Asked
    /// only of a front end that declared it can (`ClientCapabilities`); the answer is a
    /// `text` response, or `failed`.
    ReadTextFile {
        /// Absolute.
        path: PathBuf,
        /// The first line to read (1-based); the whole file when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line: Option<u32>,
        /// At most this many lines.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// Write a text file through the client (an editor shows the change in its buffer).
    /// The policy has allowed the write before it is asked; the answer is `written`, or
    /// `failed`.
    WriteTextFile {
        /// Absolute.
        path: PathBuf,
        content: String,
    },
    /// Run a command in a terminal the client owns (and shows), outside rein's sandbox:
    /// the policy has judged it as such before it is asked. The client kills it after
    /// `timeout_ms`, or when the request is cancelled (the turn ended); the answer is
    /// `terminal_exited`, or `failed`.
    Terminal {
        command: Vec<String>,
        cwd: PathBuf,
        /// Variables set on top of the client's environment.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        timeout_ms: u64,
        /// Bytes of output kept (the client drops the beginning of longer output).
        output_byte_limit: u64,
    },
    /// May the agent remember this (a `remember` call at `repo` or `user` scope, with
    /// `[memory] consent = "ask"`)? The answer is a decision: approve keeps the memory.
    Memory {
        id: crate::ids::MemoryId,
        scope: crate::memory::MemoryScope,
        /// The content as it would be stored (secrets already redacted).
        content: String,
        /// Why the model wants to keep it.
        why: String,
        /// What was redacted from it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        redactions: Vec<crate::memory::Redaction>,
    },
}

impl ClientRequest {
    /// Whether the request asks for permission (answered with a decision).
    pub fn is_approval(&self) -> bool {
        matches!(
            self,
            ClientRequest::Command { .. }
                | ClientRequest::Patch { .. }
                | ClientRequest::Memory { .. }
        )
    }

    /// Whether the request asks the client to do something for a tool (read or write a
    /// file, run a terminal) rather than ask its user. Only a front end that declared the
    /// capability is asked.
    pub fn is_client_work(&self) -> bool {
        matches!(
            self,
            ClientRequest::ReadTextFile { .. }
                | ClientRequest::WriteTextFile { .. }
                | ClientRequest::Terminal { .. }
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
        if self.is_client_work() && matches!(response, ClientResponse::Failed { .. }) {
            return true;
        }
        matches!(
            (self, response),
            (
                ClientRequest::ReadTextFile { .. },
                ClientResponse::Text { .. }
            ) | (ClientRequest::WriteTextFile { .. }, ClientResponse::Written)
                | (
                    ClientRequest::Terminal { .. },
                    ClientResponse::TerminalExited { .. }
                )
                | (
                    ClientRequest::Command { .. }
                        | ClientRequest::Patch { .. }
                        | ClientRequest::Memory { .. },
                    ClientResponse::Decision { .. }
                )
                | (
                    ClientRequest::Command { .. },
                    ClientResponse::CommandRule { .. }
                )
                | (
                    ClientRequest::Question { .. },
                    ClientResponse::Answers { .. }
                )
                | (
                    ClientRequest::Elicitation { .. },
                    ClientResponse::Elicitation { .. }
                )
        )
    }

    /// The answer when nobody can give one (headless, no client attached): no approval,
    /// no answers, the form declined, the work not done.
    pub fn unanswered(&self) -> ClientResponse {
        match self {
            ClientRequest::Command { .. }
            | ClientRequest::Patch { .. }
            | ClientRequest::Memory { .. } => ClientResponse::Decision {
                decision: ApprovalDecision::Deny,
            },
            ClientRequest::Question { .. } => ClientResponse::Answers {
                answers: BTreeMap::new(),
            },
            ClientRequest::Elicitation { .. } => ClientResponse::Elicitation {
                action: ElicitationAction::Decline,
                content: None,
            },
            ClientRequest::ReadTextFile { .. }
            | ClientRequest::WriteTextFile { .. }
            | ClientRequest::Terminal { .. } => ClientResponse::Failed {
                message: "the client cannot do this".to_owned(),
            },
        }
    }

    /// What the request asks for, for an error message ("a decision", "answers", ...).
    pub fn expected_answer(&self) -> &'static str {
        match self {
            ClientRequest::Command { .. }
            | ClientRequest::Patch { .. }
            | ClientRequest::Memory { .. } => "a decision",
            ClientRequest::Question { .. } => "answers",
            ClientRequest::Elicitation { .. } => "an elicitation answer",
            ClientRequest::ReadTextFile { .. } => "a file's text",
            ClientRequest::WriteTextFile { .. } => "a written answer",
            ClientRequest::Terminal { .. } => "a terminal's exit",
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
    /// A command approved, with a rule for the rest of the thread: approve every command
    /// whose words start with `prefix` (Codex's "don't ask again for commands that start
    /// with …", its exec policy amendment). Only a prefix of the asked command's words
    /// makes a rule; another is an approval of this command alone.
    CommandRule { prefix: Vec<String> },
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
    /// The answer to `read_text_file`: the text (of the lines asked for).
    Text { content: String },
    /// The answer to `write_text_file`: the file is written.
    Written,
    /// The answer to `terminal`: how the command ended and what it printed.
    TerminalExited {
        /// The output the client kept (its end, when `truncated`).
        output: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        /// Absent when a signal ended the command.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<u32>,
        /// The signal's name as the client reports it (`SIGKILL`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        /// The client killed it after `timeout_ms`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        timed_out: bool,
    },
    /// The client could not do what a file or terminal request asked; `message` says why.
    Failed { message: String },
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn client_work_is_answered_by_its_result_or_a_failure_and_nothing_else() {
        let read = ClientRequest::ReadTextFile {
            path: PathBuf::from("/w/a.txt"),
            line: None,
            limit: None,
        };
        let write = ClientRequest::WriteTextFile {
            path: PathBuf::from("/w/a.txt"),
            content: String::new(),
        };
        let terminal = ClientRequest::Terminal {
            command: vec!["ls".to_owned()],
            cwd: PathBuf::from("/w"),
            env: BTreeMap::new(),
            timeout_ms: 1,
            output_byte_limit: 1,
        };
        let text = ClientResponse::Text {
            content: String::new(),
        };
        let exited = ClientResponse::TerminalExited {
            output: String::new(),
            truncated: false,
            exit_code: Some(0),
            signal: None,
            timed_out: false,
        };
        let failed = ClientResponse::Failed {
            message: "no".to_owned(),
        };
        let decision = ClientResponse::Decision {
            decision: ApprovalDecision::Approve,
        };
        let answers = [&text, &ClientResponse::Written, &exited, &failed, &decision];
        let matrix: Vec<Vec<bool>> = [&read, &write, &terminal]
            .iter()
            .map(|request| answers.iter().map(|a| request.answered_by(a)).collect())
            .collect();
        assert_eq!(
            matrix,
            vec![
                vec![true, false, false, true, false],
                vec![false, true, false, true, false],
                vec![false, false, true, true, false],
            ]
        );
        // Nor does a failure answer an approval.
        let command = ClientRequest::Command {
            command: vec!["ls".to_owned()],
            cwd: PathBuf::from("/w"),
            reason: String::new(),
        };
        assert!(!command.answered_by(&failed));
        assert!(!command.is_client_work() && read.is_client_work());
        assert!(matches!(
            terminal.unanswered(),
            ClientResponse::Failed { .. }
        ));
    }
}
