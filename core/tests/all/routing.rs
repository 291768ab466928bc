//! Input routing: start / steer / reject, and steers landing at step boundaries.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_protocol::script::ScriptedReply;
use rein_protocol::{
    EventMsg, InputMode, InputOutcome, InputPart, Op, OpResult, RejectReason, SettingsChange,
    TurnId,
};
use serde_json::json;
use support::*;

fn input(text: &str, mode: InputMode) -> Op {
    Op::UserInput {
        items: vec![InputPart::text(text)],
        mode,
        settings: SettingsChange::default(),
        output_schema: None,
    }
}

fn started(res: OpResult) -> TurnId {
    match res {
        OpResult::Input(InputOutcome::Started { turn_id }) => turn_id,
        other => panic!("expected Started, got {other:?}"),
    }
}

#[tokio::test]
async fn steer_lands_in_next_request_not_inflight() {
    // Reply 0 is a tool call held open at a gate: the request is in flight until we say.
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("looking").with_tool_call("order", json!({"name": "a"})),
        ScriptedReply::text("done"),
    ]);
    let gate = model.hold_reply(0);
    let m = manager(Arc::clone(&model), vec![Arc::new(OrderTool::default())]);
    let mut t = start(&m);
    let turn = started(t.handle.submit(Op::user_text("first")).await.unwrap());
    until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::AgentMessageDelta { .. })
    })
    .await;

    let res = t
        .handle
        .submit(input("also this", InputMode::StartOrSteer))
        .await
        .unwrap();
    assert_eq!(
        res,
        OpResult::Input(InputOutcome::Steered { turn_id: turn })
    );
    gate.open();
    let end = until(&mut t.events, is_turn_end).await;
    assert_eq!(end.turn_id, Some(turn));

    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(request_user_texts(&reqs[0]), vec!["first"]);
    assert_eq!(request_user_texts(&reqs[1]), vec!["first", "also this"]);
}

#[tokio::test]
async fn start_if_idle_while_busy_is_rejected_and_records_nothing() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("slow")]);
    let gate = model.hold_reply(0);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let turn = started(t.handle.submit(Op::user_text("first")).await.unwrap());
    until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::AgentMessageDelta { .. })
    })
    .await;
    let before = t.handle.state().await.unwrap();

    let res = t
        .handle
        .submit(input("second", InputMode::StartIfIdle))
        .await
        .unwrap();
    assert_eq!(
        res,
        OpResult::Input(InputOutcome::Rejected {
            reason: RejectReason::Busy { active_turn: turn }
        })
    );
    assert_eq!(
        t.handle.state().await.unwrap(),
        before,
        "a rejection changes nothing"
    );
    gate.open();
    until(&mut t.events, is_turn_end).await;
    let state = t.handle.state().await.unwrap();
    assert_eq!(user_texts(&state.history), vec!["first"]);
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn steer_with_a_wrong_turn_id_is_rejected() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("slow")]);
    let gate = model.hold_reply(0);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let turn = started(t.handle.submit(Op::user_text("first")).await.unwrap());
    until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::AgentMessageDelta { .. })
    })
    .await;
    let wrong = TurnId::new();
    let res = t
        .handle
        .submit(input("x", InputMode::Steer(wrong)))
        .await
        .unwrap();
    assert_eq!(
        res,
        OpResult::Input(InputOutcome::Rejected {
            reason: RejectReason::TurnMismatch {
                expected: wrong,
                active: Some(turn)
            }
        })
    );
    gate.open();
    until(&mut t.events, is_turn_end).await;
    // Steering a turn that has ended is rejected too.
    let res = t
        .handle
        .submit(input("late", InputMode::Steer(turn)))
        .await
        .unwrap();
    assert!(matches!(
        res,
        OpResult::Input(InputOutcome::Rejected {
            reason: RejectReason::TurnMismatch { active: None, .. }
        })
    ));
}

#[tokio::test]
async fn empty_input_is_rejected() {
    let m = manager(ScriptedModel::echo(), vec![]);
    let t = start(&m);
    for items in [vec![], vec![InputPart::text("   ")]] {
        let res = t
            .handle
            .submit(Op::UserInput {
                items,
                mode: InputMode::StartOrSteer,
                settings: SettingsChange::default(),
                output_schema: None,
            })
            .await
            .unwrap();
        assert_eq!(
            res,
            OpResult::Input(InputOutcome::Rejected {
                reason: RejectReason::EmptyInput
            })
        );
    }
    assert!(t.handle.state().await.unwrap().turns.is_empty());
}

#[tokio::test]
async fn a_rejected_inputs_settings_change_is_not_applied() {
    let m = manager(ScriptedModel::echo(), vec![]);
    let t = start(&m);
    let bad = Op::UserInput {
        items: vec![InputPart::text("hi")],
        mode: InputMode::StartOrSteer,
        settings: SettingsChange {
            model: Some("no-such-model".into()),
            approval_policy: Some(rein_protocol::ApprovalPolicy::Never),
            ..SettingsChange::default()
        },
        output_schema: None,
    };
    let res = t.handle.submit(bad).await.unwrap();
    assert!(matches!(
        res,
        OpResult::Input(InputOutcome::Rejected { reason: RejectReason::InvalidSettings { ref message } }) if message.contains("no-such-model")
    ));
    let state = t.handle.state().await.unwrap();
    assert_eq!(
        state.settings.unwrap(),
        settings(),
        "nothing of the change was applied"
    );

    // A valid change carried by an accepted input is applied, and the turn runs with it.
    let mut events = t.handle.subscribe();
    let good = Op::UserInput {
        items: vec![InputPart::text("hi")],
        mode: InputMode::StartOrSteer,
        settings: SettingsChange {
            model: Some("scripted-small".into()),
            ..SettingsChange::default()
        },
        output_schema: None,
    };
    started(t.handle.submit(good).await.unwrap());
    let ev = until(&mut events, |e| {
        matches!(e.msg, EventMsg::TurnStarted { .. })
    })
    .await;
    assert!(
        matches!(&ev.msg, EventMsg::TurnStarted { settings, .. } if settings.model == "scripted-small")
    );
}

#[tokio::test]
async fn a_steer_during_the_final_answer_is_answered_not_dropped() {
    // The steer arrives while the final answer is held; the task has no step boundary left
    // to drain it, so the loop must carry it into a new turn rather than drop it.
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("answer one"),
        ScriptedReply::text("answer two"),
    ]);
    let gate = model.hold_reply(0);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    started(t.handle.submit(Op::user_text("one")).await.unwrap());
    until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::AgentMessageDelta { .. })
    })
    .await;
    let steer_sub = rein_protocol::SubmissionId::new();
    let res = t
        .handle
        .submit_with_id(steer_sub, input("two", InputMode::StartOrSteer))
        .await
        .unwrap();
    assert!(matches!(res, OpResult::Input(InputOutcome::Steered { .. })));
    gate.open();
    // Either the task saw the steer before finishing (one turn, two requests) or a second
    // turn starts with it; in both cases the model answers it.
    loop {
        let state = t.handle.state().await.unwrap();
        if state.is_idle() && model.request_count() == 2 {
            assert_eq!(user_texts(&state.history), vec!["one", "two"]);
            break;
        }
        until(&mut t.events, is_turn_end).await;
    }
    let reqs = model.requests();
    assert_eq!(request_user_texts(&reqs[1]), vec!["one", "two"]);
}
