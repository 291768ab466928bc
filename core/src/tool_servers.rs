//! The port's vocabulary for external tool servers (MCP): what a front end is told about
//! them and gets back from calling one itself. The supervisor that runs them (`rein-mcp`)
//! speaks it; front ends read it through bootstrap's wiring and never name the supervisor.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

/// Where a server is in its life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerStatus {
    Starting,
    Ready,
    Failed { error: String },
    Stopped { reason: String },
}

impl ServerStatus {
    pub fn settled(&self) -> bool {
        !matches!(self, ServerStatus::Starting)
    }
}

/// A change of a server's status, as front ends are told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusUpdate {
    pub server: String,
    pub cwd: PathBuf,
    pub status: ServerStatus,
}

/// One configured server as a status listing shows it: of its instances (one per working
/// directory), the most advanced one.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerReport {
    pub name: String,
    pub enabled: bool,
    /// Its configuration names a bearer-token variable.
    pub bearer_token: bool,
    /// `None`: no instance has been started.
    pub status: Option<ServerStatus>,
    /// The tools it offers (its configuration's filters applied), by name, as it listed them.
    pub tools: Vec<(String, Value)>,
    /// What the server said of itself at `initialize`.
    pub server_info: Option<Value>,
    /// What rein's limits left out of its listing.
    pub listing_warnings: Vec<String>,
}

/// A tool's answer to a call a client made itself, in MCP's shape (a tool's own failure is
/// an answer with `is_error`, not a [`CallError`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DirectCallResult {
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: Option<bool>,
    pub meta: Option<Value>,
}

/// Why a direct call got no tool result.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CallError {
    /// The call was wrong: no such server or tool, a disabled one, arguments that are no
    /// object.
    #[error("{0}")]
    Invalid(String),
    /// The server could not answer: not running, timed out, gone during the call.
    #[error("{0}")]
    Failed(String),
}
