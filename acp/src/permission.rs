//! Approvals as `session/request_permission`: a tool call that asks the client (a
//! `ClientRequested` event) becomes a permission request attached to the call's card, and
//! the option the user picks becomes rein's decision (`Op::Respond`).
//!
//! Four options are offered, each meaning exactly one of rein's decisions: allow once
//! (approve), allow always (approve for the session: the grant is recorded with the answer,
//! so it survives a resume), reject (deny; the model is told and goes on), reject always
//! (deny for the session: recorded the same way, and the same request is refused from then
//! on without asking). A `cancelled` outcome (the client cancels the turn) aborts the turn;
//! an answer rein cannot read denies.

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionId, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use rein_protocol::{ApprovalDecision, ClientRequest, ClientResponse, ToolAction};

use crate::tool_calls;

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// The permission request for `request` of the call `call_id` (whose action, when the call
/// is open, gives the card its title and kind), or `None` for what is not a permission
/// (a question).
pub fn request_for(
    session: &SessionId,
    call_id: &str,
    action: Option<&ToolAction>,
    request: &ClientRequest,
) -> Option<RequestPermissionRequest> {
    let (title, reason) = match request {
        ClientRequest::Command {
            command,
            cwd,
            reason,
        } => (
            format!(
                "Run {} in {}",
                rein_protocol::shell_join(command),
                cwd.display()
            ),
            reason,
        ),
        ClientRequest::Patch { files, reason } => {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            (format!("Write {}", files.join(", ")), reason)
        }
        ClientRequest::Memory {
            scope,
            content,
            why,
            ..
        } => (format!("Remember ({}): {content}", scope.as_str()), why),
        ClientRequest::Question { .. }
        | ClientRequest::Elicitation { .. }
        | ClientRequest::ReadTextFile { .. }
        | ClientRequest::WriteTextFile { .. }
        | ClientRequest::Terminal { .. } => return None,
    };
    // A `remember` call's own title says nothing of what it keeps: the proposal's does.
    let action = action.filter(|_| !matches!(request, ClientRequest::Memory { .. }));
    let mut fields = ToolCallUpdateFields::new()
        .status(ToolCallStatus::Pending)
        .title(crate::project::one_line(&title));
    if let Some(action) = action {
        fields = fields
            .kind(tool_calls::kind(action))
            .title(tool_calls::title("", action));
    }
    if !reason.is_empty() {
        fields = fields.content(vec![ToolCallContent::Content(Content::new(
            ContentBlock::from(reason.clone()),
        ))]);
    }
    Some(RequestPermissionRequest::new(
        session.clone(),
        ToolCallUpdate::new(call_id.to_owned(), fields),
        options(),
    ))
}

pub fn options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(
            REJECT_ALWAYS,
            "Reject for this session",
            PermissionOptionKind::RejectAlways,
        ),
    ]
}

/// rein's decision for the client's answer; `None` (the request failed) denies.
pub fn decision_of(answer: Option<&RequestPermissionResponse>) -> ApprovalDecision {
    match answer.map(|a| &a.outcome) {
        Some(RequestPermissionOutcome::Cancelled) => ApprovalDecision::Abort,
        Some(RequestPermissionOutcome::Selected(selected)) => {
            match selected.option_id.0.as_ref() {
                ALLOW_ONCE => ApprovalDecision::Approve,
                ALLOW_ALWAYS => ApprovalDecision::ApproveForSession,
                REJECT_ALWAYS => ApprovalDecision::DenyForSession,
                // Anything rein did not offer is a refusal: never run unapproved.
                _ => ApprovalDecision::Deny,
            }
        }
        // Outcomes a later protocol version may add, or no answer: refuse.
        Some(_) | None => ApprovalDecision::Deny,
    }
}

pub fn response(decision: ApprovalDecision) -> ClientResponse {
    ClientResponse::Decision { decision }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{PermissionOptionId, SelectedPermissionOutcome};
    use pretty_assertions::assert_eq;

    fn option_id(id: &str) -> PermissionOptionId {
        PermissionOptionId::new(id.to_owned())
    }

    #[test]
    fn each_option_is_one_decision_and_anything_else_refuses() {
        let pick = |id: &str| {
            decision_of(Some(&RequestPermissionResponse::new(
                RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option_id(id))),
            )))
        };
        assert_eq!(pick(ALLOW_ONCE), ApprovalDecision::Approve);
        assert_eq!(pick(ALLOW_ALWAYS), ApprovalDecision::ApproveForSession);
        assert_eq!(pick(REJECT_ONCE), ApprovalDecision::Deny);
        assert_eq!(pick(REJECT_ALWAYS), ApprovalDecision::DenyForSession);
        assert_eq!(pick("reject_forever"), ApprovalDecision::Deny);
        assert_eq!(
            decision_of(Some(&RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled
            ))),
            ApprovalDecision::Abort
        );
        assert_eq!(decision_of(None), ApprovalDecision::Deny);
    }
}
