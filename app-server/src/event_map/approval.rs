//! An approval request as Codex clients receive it: a server → client request whose
//! method says what is asked (a command or a file change).

use rein_protocol::app_server::{
    CommandExecutionRequestApprovalParams, FileChangeRequestApprovalParams,
};
use rein_protocol::{ApprovalRequest, TurnId};
use serde_json::Value;

use super::Outgoing;
use crate::tool_items::join_command;

pub(super) fn ask(
    thread_id: &str,
    approval_id: &str,
    call_id: &str,
    turn_id: TurnId,
    request: &ApprovalRequest,
    at: i64,
) -> Outgoing {
    let (method, params) = match request {
        ApprovalRequest::Command {
            command,
            cwd,
            reason,
        } => (
            "item/commandExecution/requestApproval",
            serde_json::to_value(CommandExecutionRequestApprovalParams {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.to_string(),
                item_id: call_id.to_owned(),
                started_at_ms: at,
                reason: Some(reason.clone()),
                command: Some(join_command(command)),
                cwd: Some(cwd.display().to_string()),
            }),
        ),
        ApprovalRequest::Patch { reason, .. } => (
            "item/fileChange/requestApproval",
            serde_json::to_value(FileChangeRequestApprovalParams {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.to_string(),
                item_id: call_id.to_owned(),
                started_at_ms: at,
                reason: Some(reason.clone()),
            }),
        ),
    };
    Outgoing::Ask {
        approval_id: approval_id.to_owned(),
        method,
        params: params.unwrap_or(Value::Null),
    }
}
