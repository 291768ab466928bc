//! Every wire type survives JSON and back unchanged.
#![allow(clippy::unwrap_used)]

use crate::*;

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
    v: T,
) {
    let json = serde_json::to_string(&v).unwrap();
    let back: T = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v, "{json}");
}

#[test]
fn ops_round_trip() {
    let turn = TurnId::new();
    for op in [
        Op::user_text("hi"),
        Op::UserInput {
            items: vec![InputPart::Image {
                url: "data:image/png;base64,AA".into(),
            }],
            mode: InputMode::Steer(turn),
            settings: SettingsChange {
                model: Some("m".into()),
                ..Default::default()
            },
            output_schema: None,
        },
        Op::Recover,
        Op::Interrupt,
        Op::Shutdown,
        Op::CleanBackgroundTerminals,
        Op::ApprovalAnswer {
            approval_id: "a".into(),
            decision: ApprovalDecision::ApproveForSession,
        },
        Op::Respond {
            request_id: "q".into(),
            response: ClientResponse::Answers {
                answers: [("color".to_owned(), vec!["blue".to_owned()])].into(),
            },
        },
        Op::Rollback { turns: 2 },
        Op::HoldMail {
            from: ThreadId::new(),
            items: vec![InputPart::text("a task")],
        },
        Op::DropMail {
            submission_ids: vec![SubmissionId::new()],
        },
    ] {
        round_trip(Submission {
            id: SubmissionId::new(),
            op,
        });
    }
}

#[test]
fn input_mode_has_a_readable_wire_form() {
    let turn = TurnId::new();
    assert_eq!(
        serde_json::to_value(InputMode::StartIfIdle).unwrap(),
        serde_json::json!({"mode": "start_if_idle"})
    );
    assert_eq!(
        serde_json::to_value(InputMode::Steer(turn)).unwrap(),
        serde_json::json!({"mode": "steer", "turn_id": turn.to_string()})
    );
}

#[test]
fn outcomes_round_trip() {
    round_trip(OpResult::Input(InputOutcome::Rejected {
        reason: RejectReason::TurnMismatch {
            expected: TurnId::new(),
            active: None,
        },
    }));
    round_trip(OpResult::Interrupt(InterruptOutcome::Idle));
}

#[test]
fn approvals_written_before_client_requests_still_decode() {
    let asked: EventMsg = serde_json::from_value(serde_json::json!({
        "type": "approval_requested", "approval_id": "a1", "call_id": "c1",
        "request": {"type": "command", "command": ["rm", "x"], "cwd": "/w", "reason": "why"}
    }))
    .unwrap();
    assert_eq!(
        asked,
        EventMsg::ClientRequested {
            request_id: "a1".into(),
            call_id: "c1".into(),
            request: ClientRequest::Command {
                command: vec!["rm".into(), "x".into()],
                cwd: "/w".into(),
                reason: "why".into(),
            },
        }
    );
    let resolved: EventMsg = serde_json::from_value(serde_json::json!({
        "type": "approval_resolved", "approval_id": "a1", "outcome": "approved_for_session"
    }))
    .unwrap();
    assert_eq!(
        resolved,
        EventMsg::ClientRequestResolved {
            request_id: "a1".into(),
            outcome: ApprovalOutcome::ApprovedForSession,
            grant: None,
        }
    );
}
