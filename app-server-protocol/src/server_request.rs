//! Server → client requests, typed both ways: [`ServerRequest`] is what rein asks (the
//! method and its params in one enum), and [`ServerRequest::read_answer`] reads the
//! client's `result` into the typed answer of that very request ([`ServerAnswer`]), so no
//! caller matches method strings or picks fields out of JSON.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    CommandExecutionRequestApprovalParams, FileChangeRequestApprovalParams,
    MemoryRequestApprovalParams,
};

/// A request rein sends a client. Serialized as `{"method": …, "params": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum ServerRequest {
    #[serde(rename = "item/commandExecution/requestApproval")]
    CommandExecutionRequestApproval(CommandExecutionRequestApprovalParams),
    #[serde(rename = "item/fileChange/requestApproval")]
    FileChangeRequestApproval(FileChangeRequestApprovalParams),
    #[serde(rename = "item/tool/requestUserInput")]
    ToolRequestUserInput(ToolRequestUserInputParams),
    #[serde(rename = "mcpServer/elicitation/request")]
    McpServerElicitationRequest(McpServerElicitationRequestParams),
    /// rein's own (see [`crate::memory`]).
    #[serde(rename = "rein/memory/requestApproval")]
    MemoryRequestApproval(MemoryRequestApprovalParams),
}

/// The client's answer to a [`ServerRequest`], of the request's own type.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerAnswer {
    CommandExecutionRequestApproval(CommandExecutionRequestApprovalResponse),
    FileChangeRequestApproval(FileChangeRequestApprovalResponse),
    ToolRequestUserInput(ToolRequestUserInputResponse),
    McpServerElicitationRequest(McpServerElicitationRequestResponse),
    /// Answered like a file change's approval.
    MemoryRequestApproval(FileChangeRequestApprovalResponse),
}

impl ServerRequest {
    pub fn method(&self) -> &'static str {
        match self {
            Self::CommandExecutionRequestApproval(_) => "item/commandExecution/requestApproval",
            Self::FileChangeRequestApproval(_) => "item/fileChange/requestApproval",
            Self::ToolRequestUserInput(_) => "item/tool/requestUserInput",
            Self::McpServerElicitationRequest(_) => "mcpServer/elicitation/request",
            Self::MemoryRequestApproval(_) => crate::MEMORY_APPROVAL_METHOD,
        }
    }

    /// Read the client's `result` as the answer to this request.
    pub fn read_answer(
        &self,
        result: serde_json::Value,
    ) -> Result<ServerAnswer, serde_json::Error> {
        use serde_json::from_value;
        Ok(match self {
            Self::CommandExecutionRequestApproval(_) => {
                ServerAnswer::CommandExecutionRequestApproval(from_value(result)?)
            }
            Self::FileChangeRequestApproval(_) => {
                ServerAnswer::FileChangeRequestApproval(from_value(result)?)
            }
            Self::ToolRequestUserInput(_) => {
                ServerAnswer::ToolRequestUserInput(from_value(result)?)
            }
            Self::McpServerElicitationRequest(_) => {
                ServerAnswer::McpServerElicitationRequest(from_value(result)?)
            }
            Self::MemoryRequestApproval(_) => {
                ServerAnswer::MemoryRequestApproval(from_value(result)?)
            }
        })
    }
}

/// A command's approval decision: a string, or a one-key object for the decisions that
/// carry an amendment. The older names (`approved`, `denied`, `abort`) are read too.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionApprovalDecision {
    #[serde(alias = "approved")]
    Accept,
    #[serde(alias = "approved_for_session")]
    AcceptForSession,
    /// Approve, and make the words a rule of the thread.
    AcceptWithExecpolicyAmendment { execpolicy_amendment: Vec<String> },
    /// rein has no network policy: read as a refusal.
    ApplyNetworkPolicyAmendment {
        network_policy_amendment: serde_json::Value,
    },
    #[serde(alias = "denied")]
    Decline,
    #[serde(alias = "abort")]
    Cancel,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandExecutionRequestApprovalResponse {
    pub decision: CommandExecutionApprovalDecision,
}

/// A file change's (or memory's) approval decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileChangeApprovalDecision {
    #[serde(alias = "approved")]
    Accept,
    #[serde(alias = "approved_for_session")]
    AcceptForSession,
    #[serde(alias = "denied")]
    Decline,
    #[serde(alias = "abort")]
    Cancel,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChangeRequestApprovalResponse {
    pub decision: FileChangeApprovalDecision,
}

/// Questions for the user (`item/tool/requestUserInput`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub is_blocking: bool,
    pub questions: Vec<ToolRequestUserInputQuestion>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputQuestion {
    pub id: String,
    pub header: String,
    pub question: String,
    pub is_secret: bool,
    pub options: Option<Vec<ToolRequestUserInputOption>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolRequestUserInputOption {
    pub label: String,
    pub description: String,
}

/// The answers, by question id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolRequestUserInputResponse {
    pub answers: BTreeMap<String, ToolRequestUserInputAnswer>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolRequestUserInputAnswer {
    pub answers: Vec<String>,
}

/// An MCP server's form for the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestParams {
    pub thread_id: String,
    pub turn_id: String,
    pub server_name: String,
    /// Always `form`.
    pub mode: String,
    pub message: String,
    pub requested_schema: serde_json::Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerElicitationAction {
    Accept,
    Decline,
    Cancel,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerElicitationRequestResponse {
    pub action: McpServerElicitationAction,
    /// What the user filled in, for `accept`.
    #[serde(default)]
    pub content: Option<serde_json::Value>,
}
