//! Every wire type survives JSON and back unchanged.
#![allow(clippy::unwrap_used)]

use rein_protocol::*;

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
        Op::Rollback { turns: 2 },
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
