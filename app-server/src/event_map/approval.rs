//! A client request as Codex clients receive it: a server → client request whose method
//! says what is asked (a command or a file change to approve, questions for the user, an MCP server's
//! form).

use rein_app_server_protocol::{
    CommandActionWire, CommandDecision, CommandExecutionRequestApprovalParams, ExecpolicyAmendment,
    FileChangeRequestApprovalParams, McpServerElicitationRequestParams,
    MemoryRequestApprovalParams, ServerRequest, ToolRequestUserInputOption,
    ToolRequestUserInputParams, ToolRequestUserInputQuestion,
};
use rein_protocol::shell_words::{command_words, display_command, shell_script};
use rein_protocol::{shell_join, ClientRequest, TurnId};

use super::Outgoing;

/// The request that asks the client `request`; none for work a Codex client is never
/// asked (reading files, running terminals: the caller skips those).
///
/// One arm per kind of client request, each building Codex's request for it: long because
/// Codex has that many kinds of question.
pub(super) fn ask(
    thread_id: &str,
    approval_id: &str,
    call_id: &str,
    turn_id: TurnId,
    request: &ClientRequest,
    at: i64,
) -> Option<Outgoing> {
    let thread_id = thread_id.to_owned();
    let turn_id = turn_id.to_string();
    let item_id = call_id.to_owned();
    let request = match request {
        ClientRequest::Command {
            command,
            cwd,
            reason,
        } => {
            ServerRequest::CommandExecutionRequestApproval(CommandExecutionRequestApprovalParams {
                thread_id,
                turn_id,
                item_id,
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
            })
        }
        ClientRequest::Question { questions } => {
            ServerRequest::ToolRequestUserInput(ToolRequestUserInputParams {
                thread_id,
                turn_id,
                item_id,
                is_blocking: true,
                questions: questions
                    .iter()
                    .map(|q| ToolRequestUserInputQuestion {
                        id: q.id.clone(),
                        header: q.header.clone(),
                        question: q.question.clone(),
                        is_secret: q.secret,
                        options: (!q.options.is_empty()).then(|| {
                            q.options
                                .iter()
                                .map(|o| ToolRequestUserInputOption {
                                    label: o.label.clone(),
                                    description: o.description.clone(),
                                })
                                .collect()
                        }),
                    })
                    .collect(),
            })
        }
        ClientRequest::Elicitation {
            server,
            message,
            requested_schema,
        } => ServerRequest::McpServerElicitationRequest(McpServerElicitationRequestParams {
            thread_id,
            turn_id,
            server_name: server.clone(),
            mode: "form".into(),
            message: message.clone(),
            requested_schema: requested_schema.clone(),
        }),
        ClientRequest::ReadTextFile { .. }
        | ClientRequest::WriteTextFile { .. }
        | ClientRequest::Terminal { .. } => return None,
        ClientRequest::Memory {
            id,
            scope,
            content,
            why,
            redactions,
        } => ServerRequest::MemoryRequestApproval(MemoryRequestApprovalParams {
            thread_id,
            turn_id,
            item_id,
            started_at_ms: at,
            memory_id: id.to_string(),
            scope: crate::handlers::memory::scope_wire(*scope),
            content: content.clone(),
            reason: (!why.is_empty()).then(|| why.clone()),
            redacted: redactions.iter().map(|r| r.label.clone()).collect(),
        }),
        ClientRequest::Patch { reason, .. } => {
            ServerRequest::FileChangeRequestApproval(FileChangeRequestApprovalParams {
                thread_id,
                turn_id,
                item_id,
                started_at_ms: at,
                reason: Some(reason.clone()),
            })
        }
    };
    Some(Outgoing::Ask {
        approval_id: approval_id.to_owned(),
        request: Box::new(request),
    })
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
