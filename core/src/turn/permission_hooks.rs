//! The user's hooks at an approval: `PermissionRequest` hooks may answer a call's
//! approval request for the user, and a `PreToolUse` hook that says `ask` makes a call
//! wait for the user's approval even where the policy would not have asked.
//!
//! Neither widens what the policy allows: a `PermissionRequest` hook only ever answers a
//! question the policy already put to the user (a call the policy refuses or the sandbox
//! blocks is never asked about), and `ask` only adds a question. A hook that fails answers
//! "deny" unless it says `on_error = "allow"`, as at `PreToolUse`.

use std::path::PathBuf;

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_protocol::{
    ApprovalDecision, ClientRequest, Decliner, EventMsg, HookEventName, ToolAction,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sink::TurnSink;
use super::tool_hooks::{hook_tool, run_all, HookScope, HookTool};
use crate::hooks::{HookVerdict, OnError};
use crate::tools::{ApprovalGate, ToolCall, ToolContext, ToolResult};

/// The `PermissionRequest` hooks of one call, consulted before its approval requests
/// reach the user.
pub(crate) struct HookGate {
    scope: HookScope,
    tool: HookTool,
    call_id: String,
    sink: TurnSink,
    cancel: CancellationToken,
}

impl HookGate {
    pub(crate) fn new(
        scope: HookScope,
        call: &ToolCall,
        action: &ToolAction,
        sink: TurnSink,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            scope,
            tool: hook_tool(call, action),
            call_id: call.call_id.clone(),
            sink,
            cancel,
        }
    }

    async fn decide_now(&self, request: ClientRequest) -> Option<ApprovalDecision> {
        let event = HookEventName::PermissionRequest;
        let subjects: Vec<&str> = self.tool.subjects.iter().map(String::as_str).collect();
        let found = self
            .scope
            .hooks
            .matching(&self.scope.cwd, event, &subjects)
            .await;
        if found.is_empty() {
            return None;
        }
        let input = self.scope.input(
            event,
            json!({
                "tool_name": self.tool.name,
                "tool_input": self.tool.input,
                "tool_use_id": self.call_id,
                "request": request,
            }),
        );
        let runs = run_all(
            found,
            input,
            event,
            Some(&self.call_id),
            &self.sink,
            &self.cancel,
        );
        let mut denials = Vec::new();
        let mut allowed = false;
        for (hook, response) in runs.await {
            match response.verdict {
                HookVerdict::Block { reason } => denials.push(reason),
                HookVerdict::Failed { message } if hook.on_error == OnError::Block => {
                    denials.push(format!("the hook `{}` failed: {message}", hook.command));
                }
                HookVerdict::Failed { .. } => {}
                HookVerdict::Proceed(output) => {
                    allowed |= output.decision.as_deref() == Some("allow");
                }
            }
        }
        if !denials.is_empty() {
            self.sink.emit(EventMsg::Warning {
                message: format!(
                    "a PermissionRequest hook denied the call: {}",
                    denials.join("; ")
                ),
            });
            return Some(ApprovalDecision::Deny);
        }
        allowed.then_some(ApprovalDecision::Approve)
    }
}

impl ApprovalGate for HookGate {
    fn decide(&self, request: &ClientRequest) -> BoxFuture<'_, Option<ApprovalDecision>> {
        self.decide_now(request.clone()).boxed()
    }
}

/// The approval request a `PreToolUse` hook's `ask` puts to the user for `call`: a
/// command's or a patch's, as the tools themselves ask; any other call as its name and
/// arguments.
fn ask_request(
    call: &ToolCall,
    action: &ToolAction,
    cwd: PathBuf,
    reason: String,
) -> ClientRequest {
    let reason = format!("a PreToolUse hook asks for your approval: {reason}");
    match action {
        ToolAction::Exec { argv, cwd, .. } => ClientRequest::Command {
            command: argv.clone(),
            cwd: cwd.clone(),
            reason,
        },
        ToolAction::Edit { changes } => ClientRequest::Patch {
            files: changes.iter().map(|c| c.path.clone()).collect(),
            reason,
        },
        _ => ClientRequest::Command {
            command: vec![call.name.clone(), call.arguments.clone()],
            cwd,
            reason,
        },
    }
}

/// Ask the user about `call` because a hook said `ask`: `Err` is the declined result the
/// model reads instead of running it.
pub(crate) async fn ask_first(
    call: &ToolCall,
    action: &ToolAction,
    reason: String,
    ctx: &ToolContext,
) -> Result<(), ToolResult> {
    let request = ask_request(call, action, ctx.settings.cwd.clone(), reason);
    match ctx.request_approval(request, None).await {
        Ok(ApprovalDecision::Approve | ApprovalDecision::ApproveForSession) => Ok(()),
        Ok(_) => Err(ToolResult::declined(
            Decliner::User,
            "the user declined this call (a PreToolUse hook asked for approval)",
        )),
        Err(_) => Err(ToolResult::declined(
            Decliner::User,
            "the approval a PreToolUse hook asked for was not given before the turn ended",
        )),
    }
}
