//! Work a front end does for a tool: read and write files as its editor has them, run a
//! command in a terminal it owns. A front end declares what it can do for a thread
//! ([`ClientCapabilities`], set on the thread's tools by the front end that opened it: `rein
//! acp` from the editor's `clientCapabilities`); a tool that sees a capability may use it,
//! through the same client-request path as approvals (a `ClientRequested` event the front
//! end answers with `Op::Respond`). Front ends that declare nothing (the app-server, exec)
//! are never asked, so their threads read and write the disk themselves, as always.
//!
//! The policy stays rein's: a tool judges (and, if need be, asks the user about) a write or
//! a command before it asks the client to do it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rein_protocol::{ClientRequest, ClientResponse};

use super::{Ask, ToolContext};

/// What the front end of a thread can do for its tools. All off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `ReadTextFile` requests (the editor's view of a file, unsaved changes included).
    pub read_text_file: bool,
    /// `WriteTextFile` requests (the editor writes, and shows the change).
    pub write_text_file: bool,
    /// `Terminal` requests: commands run in a terminal the client owns.
    pub terminal: bool,
}

/// The client did not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientWorkError {
    /// The client answered with an error.
    #[error("{0}")]
    Failed(String),
    /// The turn ended before the client answered.
    #[error("the request to the client was cancelled (the turn ended)")]
    Cancelled,
    /// The client answered something else than what was asked.
    #[error("the client answered {0} with something else")]
    Unexpected(&'static str),
}

/// How a command run in the client's terminal ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalExit {
    /// What the client kept of the output (its end when `truncated`).
    pub output: String,
    pub truncated: bool,
    pub exit_code: Option<u32>,
    /// The signal's name as the client gave it.
    pub signal: Option<String>,
    pub timed_out: bool,
}

/// A command for the client's terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalCommand {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Set on top of the client's environment.
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
    pub output_byte_limit: usize,
}

impl ToolContext {
    /// What this thread's front end can do for its tools.
    pub fn client(&self) -> ClientCapabilities {
        self.thread.client()
    }

    /// The text of `path` as the client has it, lines `line..line+limit` (1-based) when
    /// given. Only when [`ClientCapabilities::read_text_file`].
    pub async fn read_text_file(
        &self,
        path: PathBuf,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientWorkError> {
        match self
            .client_work(ClientRequest::ReadTextFile { path, line, limit })
            .await?
        {
            ClientResponse::Text { content } => Ok(content),
            _ => Err(ClientWorkError::Unexpected("a read")),
        }
    }

    /// Write `content` to `path` through the client. The caller has authorized the write.
    /// Only when [`ClientCapabilities::write_text_file`].
    pub async fn write_text_file(
        &self,
        path: PathBuf,
        content: String,
    ) -> Result<(), ClientWorkError> {
        match self
            .client_work(ClientRequest::WriteTextFile { path, content })
            .await?
        {
            ClientResponse::Written => Ok(()),
            _ => Err(ClientWorkError::Unexpected("a write")),
        }
    }

    /// Run `command` in a terminal of the client and wait for its end (the client kills it
    /// at the timeout, or when the turn ends). The caller has authorized the command as
    /// one that runs outside rein's sandbox. Only when [`ClientCapabilities::terminal`].
    pub async fn run_in_client_terminal(
        &self,
        command: TerminalCommand,
    ) -> Result<TerminalExit, ClientWorkError> {
        let request = ClientRequest::Terminal {
            command: command.argv,
            cwd: command.cwd,
            env: command.env,
            timeout_ms: u64::try_from(command.timeout.as_millis()).unwrap_or(u64::MAX),
            output_byte_limit: u64::try_from(command.output_byte_limit).unwrap_or(u64::MAX),
        };
        match self.client_work(request).await? {
            ClientResponse::TerminalExited {
                output,
                truncated,
                exit_code,
                signal,
                timed_out,
            } => Ok(TerminalExit {
                output,
                truncated,
                exit_code,
                signal,
                timed_out,
            }),
            _ => Err(ClientWorkError::Unexpected("a terminal")),
        }
    }

    async fn client_work(&self, request: ClientRequest) -> Result<ClientResponse, ClientWorkError> {
        let response = self
            .ask(Ask {
                request,
                session_grant: None,
            })
            .await
            .map_err(|_| ClientWorkError::Cancelled)?;
        match response {
            ClientResponse::Failed { message } => Err(ClientWorkError::Failed(message)),
            other => Ok(other),
        }
    }
}
