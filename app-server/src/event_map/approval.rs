//! A client request as Codex clients receive it: a server → client request whose method
//! says what is asked (a command or a file change to approve, questions for the user, an MCP server's
//! form).

use rein_app_server_protocol::{
    CommandActionWire, CommandDecision, CommandExecutionRequestApprovalParams, ExecpolicyAmendment,
    FileChangeRequestApprovalParams,
};
use rein_protocol::shell_words::{command_words, display_command, shell_script};
use rein_protocol::{shell_join, ClientRequest, TurnId};
use serde_json::Value;

use super::Outgoing;

/// The method of a command's approval.
pub const COMMAND_APPROVAL_METHOD: &str = "item/commandExecution/requestApproval";
/// The method of Codex's questions for the user.
pub const QUESTION_METHOD: &str = "item/tool/requestUserInput";
/// The method of an MCP server's form for the user.
pub const ELICITATION_METHOD: &str = "mcpServer/elicitation/request";

pub(super) fn ask(
    thread_id: &str,
    approval_id: &str,
    call_id: &str,
    turn_id: TurnId,
    request: &ClientRequest,
    at: i64,
) -> Outgoing {
    let (method, params) = match request {
        ClientRequest::Command {
            command,
            cwd,
            reason,
        } => (
            COMMAND_APPROVAL_METHOD,
            serde_json::to_value(CommandExecutionRequestApprovalParams {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.to_string(),
                item_id: call_id.to_owned(),
                started_at_ms: at,
                reason: Some(reason.clone()),
                command: Some(display_command(command)),
                cwd: Some(cwd.display().to_string()),
                command_actions: Some(vec![CommandActionWire::Unknown {
                    command: shell_script(command)
                        .map_or_else(|| shell_join(command), str::to_owned),
                }]),
                proposed_execpolicy_amendment: rule_for(command),
                available_decisions: Some(decisions(rule_for(command))),
            }),
        ),
        ClientRequest::Question { questions } => (
            QUESTION_METHOD,
            Ok(serde_json::json!({
                "threadId": thread_id,
                "turnId": turn_id.to_string(),
                "itemId": call_id,
                "isBlocking": true,
                "questions": questions.iter().map(|q| serde_json::json!({
                    "id": q.id,
                    "header": q.header,
                    "question": q.question,
                    "isSecret": q.secret,
                    "options": (!q.options.is_empty()).then(|| q.options.iter().map(|o| {
                        serde_json::json!({"label": o.label, "description": o.description})
                    }).collect::<Vec<_>>()),
                })).collect::<Vec<_>>(),
            })),
        ),
        ClientRequest::Elicitation {
            server,
            message,
            requested_schema,
        } => (
            ELICITATION_METHOD,
            Ok(serde_json::json!({
                "threadId": thread_id,
                "turnId": turn_id.to_string(),
                "serverName": server,
                "mode": "form",
                "message": message,
                "requestedSchema": requested_schema,
            })),
        ),
        // Never asked of a Codex client (the caller skips them); should one come, the
        // client hears of it as a question without choices.
        ClientRequest::ReadTextFile { .. }
        | ClientRequest::WriteTextFile { .. }
        | ClientRequest::Terminal { .. } => (QUESTION_METHOD, Ok(Value::Null)),
        ClientRequest::Memory {
            id,
            scope,
            content,
            why,
            redactions,
        } => (
            rein_app_server_protocol::MEMORY_APPROVAL_METHOD,
            serde_json::to_value(rein_app_server_protocol::MemoryRequestApprovalParams {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.to_string(),
                item_id: call_id.to_owned(),
                started_at_ms: at,
                memory_id: id.to_string(),
                scope: crate::handlers::memory::scope_wire(*scope),
                content: content.clone(),
                reason: (!why.is_empty()).then(|| why.clone()),
                redacted: redactions.iter().map(|r| r.label.clone()).collect(),
            }),
        ),
        ClientRequest::Patch { reason, .. } => (
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

/// The rule to propose for `command`: the words of its plain `bash -lc` script, or the
/// argv of a command run directly; none for a script that could do more than one thing.
fn rule_for(command: &[String]) -> Option<Vec<String>> {
    match command_words(command) {
        Some(words) => Some(words),
        None if shell_script(command).is_none() && !command.is_empty() => Some(command.to_vec()),
        None => None,
    }
}

/// The choices Codex offers for a command: approve, approve with the rule (when there is
/// one), or refuse and stop the turn.
fn decisions(rule: Option<Vec<String>>) -> Vec<CommandDecision> {
    let mut offered = vec![CommandDecision::Plain("accept".into())];
    if let Some(words) = rule {
        offered.push(CommandDecision::WithRule {
            accept_with_execpolicy_amendment: ExecpolicyAmendment {
                execpolicy_amendment: words,
            },
        });
    }
    offered.push(CommandDecision::Plain("cancel".into()));
    offered
}
