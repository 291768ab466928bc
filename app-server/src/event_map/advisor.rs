//! The advisor's reviews as Codex's auto-review notifications: one
//! `item/autoApprovalReview/started` and one `/completed` per reviewed call, its
//! `targetItemId` the call's item (the call id), its status from the verdict (approved,
//! denied, timedOut, aborted for an advisor that failed open).

use std::collections::HashMap;

use rein_app_server_protocol::{
    AutoApprovalReview, AutoApprovalReviewAction, AutoApprovalReviewCompletedNotification,
    AutoApprovalReviewStartedNotification, AutoApprovalReviewStatus, AutoReviewDecisionSource,
    AutoReviewRiskLevel, ServerNotification,
};
use rein_protocol::{
    AdvisorFailure, AdvisorRisk, AdvisorVerdict, ReviewedCall, ToolAction, TurnId,
};

/// A review in progress: what its completion repeats.
pub(super) struct OpenReview {
    turn_id: TurnId,
    started_at_ms: i64,
    risk: AdvisorRisk,
    calls: Vec<(String, AutoApprovalReviewAction)>,
}

#[derive(Default)]
pub(super) struct Reviews {
    open: HashMap<String, OpenReview>,
}

impl Reviews {
    /// `AdvisorReviewStarted` of turn `turn_id` at `at_ms`.
    pub(super) fn started(
        &mut self,
        thread_id: &str,
        (turn_id, at_ms): (TurnId, i64),
        review_id: &str,
        cwd: &str,
        risk: AdvisorRisk,
        calls: &[ReviewedCall],
    ) -> Vec<ServerNotification> {
        let review = OpenReview {
            turn_id,
            started_at_ms: at_ms,
            risk,
            calls: calls
                .iter()
                .map(|c| {
                    (
                        c.call_id.clone(),
                        action(review_id, cwd, &c.tool, &c.action),
                    )
                })
                .collect(),
        };
        let out = review
            .calls
            .iter()
            .map(|(call_id, action)| {
                ServerNotification::AutoApprovalReviewStarted(Box::new(
                    AutoApprovalReviewStartedNotification {
                        thread_id: thread_id.to_owned(),
                        turn_id: turn_id.to_string(),
                        review_id: per_call(review_id, call_id),
                        target_item_id: Some(call_id.clone()),
                        started_at_ms: at_ms,
                        review: AutoApprovalReview {
                            status: AutoApprovalReviewStatus::InProgress,
                            risk_level: Some(risk_level(risk)),
                            rationale: None,
                            user_authorization: None,
                        },
                        action: action.clone(),
                    },
                ))
            })
            .collect();
        self.open.insert(review_id.to_owned(), review);
        out
    }

    pub(super) fn completed(
        &mut self,
        thread_id: &str,
        review_id: &str,
        verdict: &AdvisorVerdict,
        at_ms: i64,
    ) -> Vec<ServerNotification> {
        let Some(review) = self.open.remove(review_id) else {
            return Vec::new();
        };
        let status = match verdict {
            AdvisorVerdict::Approve { .. } | AdvisorVerdict::ApproveWithWarnings { .. } => {
                AutoApprovalReviewStatus::Approved
            }
            AdvisorVerdict::Reject { .. } => AutoApprovalReviewStatus::Denied,
            AdvisorVerdict::FailedOpen {
                failure: AdvisorFailure::Timeout,
                ..
            } => AutoApprovalReviewStatus::TimedOut,
            AdvisorVerdict::FailedOpen { .. } => AutoApprovalReviewStatus::Aborted,
        };
        closing(thread_id, review_id, review, status, verdict.text(), at_ms)
    }

    /// The turn ended: reviews it left open are aborted.
    pub(super) fn end_turn(
        &mut self,
        thread_id: &str,
        turn_id: TurnId,
        at_ms: i64,
    ) -> Vec<ServerNotification> {
        let ended: Vec<String> = self
            .open
            .iter()
            .filter(|(_, r)| r.turn_id == turn_id)
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::new();
        for review_id in ended {
            if let Some(review) = self.open.remove(&review_id) {
                out.extend(closing(
                    thread_id,
                    &review_id,
                    review,
                    AutoApprovalReviewStatus::Aborted,
                    "the turn ended before the advisor answered",
                    at_ms,
                ));
            }
        }
        out
    }
}

/// The `/completed` notifications of every call of `review`.
fn closing(
    thread_id: &str,
    review_id: &str,
    review: OpenReview,
    status: AutoApprovalReviewStatus,
    rationale: &str,
    at_ms: i64,
) -> Vec<ServerNotification> {
    review
        .calls
        .into_iter()
        .map(|(call_id, action)| {
            ServerNotification::AutoApprovalReviewCompleted(Box::new(
                AutoApprovalReviewCompletedNotification {
                    thread_id: thread_id.to_owned(),
                    turn_id: review.turn_id.to_string(),
                    review_id: per_call(review_id, &call_id),
                    target_item_id: Some(call_id),
                    started_at_ms: review.started_at_ms,
                    completed_at_ms: at_ms,
                    decision_source: AutoReviewDecisionSource::Agent,
                    review: AutoApprovalReview {
                        status,
                        risk_level: Some(risk_level(review.risk)),
                        rationale: Some(rationale.to_owned()),
                        user_authorization: None,
                    },
                    action,
                },
            ))
        })
        .collect()
}

/// One review per call on this wire: the batch's id and the call's.
fn per_call(review_id: &str, call_id: &str) -> String {
    format!("{review_id}:{call_id}")
}

fn risk_level(risk: AdvisorRisk) -> AutoReviewRiskLevel {
    match risk {
        AdvisorRisk::Low => AutoReviewRiskLevel::Low,
        AdvisorRisk::High => AutoReviewRiskLevel::High,
    }
}

/// The reviewed action as Codex names it; tools without a Codex counterpart show as the
/// command line a client shows for them, else the tool and its arguments.
fn action(review_id: &str, cwd: &str, tool: &str, action: &ToolAction) -> AutoApprovalReviewAction {
    let command = |command: String, cwd: String| AutoApprovalReviewAction::Command {
        command,
        cwd,
        source: "shell".into(),
    };
    match action {
        ToolAction::Exec {
            command: line, cwd, ..
        } => command(line.clone(), cwd.to_string_lossy().into_owned()),
        ToolAction::Stdin {
            terminal_id,
            chars,
            cwd: terminal_cwd,
            ..
        } => AutoApprovalReviewAction::WriteStdin {
            approval_id: review_id.to_owned(),
            cwd: terminal_cwd
                .as_ref()
                .map_or_else(|| cwd.to_owned(), |c| c.to_string_lossy().into_owned()),
            process_id: terminal_id.clone(),
            stdin: chars.clone(),
        },
        ToolAction::Edit { changes } => AutoApprovalReviewAction::ApplyPatch {
            cwd: cwd.to_owned(),
            files: changes
                .iter()
                .map(|c| c.path.to_string_lossy().into_owned())
                .collect(),
        },
        ToolAction::Mcp { server, tool, .. } => AutoApprovalReviewAction::McpToolCall {
            server: server.clone(),
            tool_name: tool.clone(),
            connector_id: None,
            connector_name: None,
            tool_title: None,
        },
        ToolAction::Read { .. }
        | ToolAction::List { .. }
        | ToolAction::Search { .. }
        | ToolAction::Plan { .. }
        | ToolAction::Agent { .. }
        | ToolAction::Other { .. } => {
            let line = action.command_line(tool).unwrap_or_else(|| match action {
                ToolAction::Other { arguments, .. } => format!("{tool} {arguments}"),
                _ => tool.to_owned(),
            });
            command(line, cwd.to_owned())
        }
    }
}
