//! Interrupts turn the page: partial output kept, marker appended, nothing rolled back.
//! Also recover, budgets and approvals, which all end or resume turns.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{
    AgentStatus, ApprovalDecision, ApprovalOutcome, EventMsg, InputOutcome, InterruptOutcome, Item,
    Op, OpResult, RejectReason, SettingsChange, TurnAbortReason, TurnBudget, INTERRUPTION_MARKER,
};
use serde_json::json;
use support::*;

fn started(res: OpResult) -> rein_protocol::TurnId {
    match res {
        OpResult::Input(InputOutcome::Started { turn_id }) => turn_id,
        other => panic!("expected Started, got {other:?}"),
    }
}

/// Wait for the running turn's first delta, interrupt it, and wait for it to end.
async fn interrupt_once_streaming(t: &mut rein_core::NewThread) {
    until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::AgentMessageDelta { .. })
    })
    .await;
    t.handle.submit(Op::Interrupt).await.unwrap();
    until(&mut t.events, is_turn_end).await;
}

#[tokio::test]
async fn interrupt_mid_stream_keeps_partial_output_and_appends_the_marker() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("I was saying")
        .with_deltas(3)
        .with_fault(Fault::Hang)]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let turn = started(t.handle.submit(Op::user_text("talk")).await.unwrap());
    // Wait until all three deltas have streamed.
    let mut seen = 0;
    until(&mut t.events, |e| {
        if matches!(e.msg, EventMsg::AgentMessageDelta { .. }) {
            seen += 1;
        }
        seen == 3
    })
    .await;
    let res = t.handle.submit(Op::Interrupt).await.unwrap();
    assert_eq!(
        res,
        OpResult::Interrupt(InterruptOutcome::Interrupting { turn_id: turn })
    );
    let end = until(&mut t.events, is_turn_end).await;
    assert_eq!(
        end.msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted
        }
    );
    assert_eq!(end.turn_id, Some(turn));

    let state = t.handle.state().await.unwrap();
    assert_eq!(state.status, AgentStatus::Interrupted);
    let tail: Vec<&Item> = state
        .history
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(std::convert::AsRef::as_ref)
        .collect();
    assert!(
        matches!(tail[0], Item::AgentMessage { text, partial: true, .. } if text == "I was saying")
    );
    assert!(matches!(tail[1], Item::Interruption { text, .. } if text == INTERRUPTION_MARKER));
}

#[tokio::test]
async fn interrupting_an_idle_thread_answers_at_once() {
    let m = manager(ScriptedModel::echo(), vec![]);
    let mut t = start(&m);
    assert_eq!(
        t.handle.submit(Op::Interrupt).await.unwrap(),
        OpResult::Interrupt(InterruptOutcome::Idle)
    );
    // ...and after a turn has ended, too.
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    until(&mut t.events, is_turn_end).await;
    assert_eq!(
        t.handle.submit(Op::Interrupt).await.unwrap(),
        OpResult::Interrupt(InterruptOutcome::Idle)
    );
    assert_eq!(
        t.handle.state().await.unwrap().status,
        AgentStatus::Completed
    );
}

#[tokio::test]
async fn a_tool_that_ignores_cancellation_is_hard_aborted_after_the_grace() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("stubborn", json!({})),
        ScriptedReply::text("never reached"),
    ]);
    let tool = Arc::new(StubbornTool::default());
    let m = manager(Arc::clone(&model), vec![tool.clone()]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    tool.started.notified().await;
    let asked = tokio::time::Instant::now();
    t.handle.submit(Op::Interrupt).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted
        }
    );
    assert!(
        asked.elapsed() >= fast_config().interrupt_grace,
        "the grace was given"
    );
    assert!(
        tool.dropped.load(Ordering::SeqCst),
        "the stubborn call was aborted"
    );
    // The open call got a synthetic output so the next request is valid.
    let state = t.handle.state().await.unwrap();
    let call_ids: Vec<&str> = state
        .history
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolCall { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let output_ids: Vec<&str> = state
        .history
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput {
                call_id,
                success: false,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(call_ids, output_ids);
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn recover_asks_again_for_the_interrupted_turns_output_schema() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("{\"ok\"").with_fault(Fault::Hang),
        ScriptedReply::text("{\"ok\":true}"),
    ]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let turn = started(
        t.handle
            .submit(Op::UserInput {
                items: vec![rein_protocol::InputPart::text("answer as JSON")],
                mode: rein_protocol::InputMode::StartOrSteer,
                settings: SettingsChange::default(),
                output_schema: Some(schema.clone()),
            })
            .await
            .unwrap(),
    );
    // The schema is part of the recorded turn, so a resumed thread knows it too.
    let opened = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::TurnStarted { .. })
    })
    .await;
    assert!(matches!(
        &opened.msg,
        EventMsg::TurnStarted { output_schema: Some(s), .. } if *s == schema
    ));
    interrupt_once_streaming(&mut t).await;

    let res = t.handle.submit(Op::Recover).await.unwrap();
    assert_eq!(
        res,
        OpResult::Input(InputOutcome::Started { turn_id: turn })
    );
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }));
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1].output_schema.as_deref(),
        Some(&schema),
        "the recovered turn still asks for structured output"
    );
}

#[tokio::test]
async fn recover_restarts_the_interrupted_turn_with_the_same_id() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("half").with_fault(Fault::Hang),
        ScriptedReply::text("finished after recovery"),
    ]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let turn = started(t.handle.submit(Op::user_text("work")).await.unwrap());
    interrupt_once_streaming(&mut t).await;

    let res = t.handle.submit(Op::Recover).await.unwrap();
    assert_eq!(
        res,
        OpResult::Input(InputOutcome::Started { turn_id: turn })
    );
    let started_ev = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::TurnStarted { .. })
    })
    .await;
    assert!(matches!(
        started_ev.msg,
        EventMsg::TurnStarted {
            recovered: true,
            ..
        }
    ));
    assert_eq!(started_ev.turn_id, Some(turn));
    let end = until(&mut t.events, is_turn_end).await;
    assert_eq!(end.turn_id, Some(turn));
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }));
    // No new user input; the model saw the marker.
    let second = &model.requests()[1];
    assert_eq!(request_user_texts(second), vec!["work"]);
    assert!(matches!(
        second.input.last().unwrap().as_ref(),
        Item::Interruption { .. }
    ));
    // Recovering again has nothing to recover.
    assert_eq!(
        t.handle.submit(Op::Recover).await.unwrap(),
        OpResult::Input(InputOutcome::Rejected {
            reason: RejectReason::NothingToRecover
        })
    );
}

#[tokio::test]
async fn a_turn_over_its_wall_time_budget_is_aborted_budget_limited() {
    let model =
        ScriptedModel::replies(vec![ScriptedReply::text("forever").with_fault(Fault::Hang)]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let op = Op::UserInput {
        items: vec![rein_protocol::InputPart::text("go")],
        mode: rein_protocol::InputMode::StartOrSteer,
        settings: SettingsChange {
            budget: Some(TurnBudget {
                max_wall_time_ms: Some(30),
                max_tokens: None,
            }),
            ..SettingsChange::default()
        },
        output_schema: None,
    };
    t.handle.submit(op).await.unwrap();
    let end = until(&mut t.events, is_turn_end).await;
    assert_eq!(
        end.msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::BudgetLimited
        }
    );
    assert_eq!(
        t.handle.state().await.unwrap().status,
        AgentStatus::Interrupted
    );
}

#[tokio::test]
async fn a_turn_over_its_token_budget_is_aborted_budget_limited() {
    let usage = rein_protocol::TokenUsage {
        input_tokens: 600,
        output_tokens: 10,
        total_tokens: 610,
        ..Default::default()
    };
    let mut reply = ScriptedReply::tool_call("order", json!({"name": "a"}));
    reply.usage = Some(usage);
    let model = ScriptedModel::replies(vec![reply]);
    let m = manager(Arc::clone(&model), vec![Arc::new(OrderTool::default())]);
    let mut t = start(&m);
    let op = Op::UserInput {
        items: vec![rein_protocol::InputPart::text("loop")],
        mode: rein_protocol::InputMode::StartOrSteer,
        settings: SettingsChange {
            budget: Some(TurnBudget {
                max_wall_time_ms: None,
                max_tokens: Some(1000),
            }),
            ..SettingsChange::default()
        },
        output_schema: None,
    };
    t.handle.submit(op).await.unwrap();
    let end = until(&mut t.events, is_turn_end).await;
    assert_eq!(
        end.msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::BudgetLimited
        }
    );
    // The second response pushed the turn over 1000 tokens; no third request was made.
    assert_eq!(model.request_count(), 2);
}

async fn approval_round(
    decision: ApprovalDecision,
) -> (Vec<Arc<rein_protocol::Event>>, Arc<ScriptedModel>) {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("ask", json!({})),
        ScriptedReply::text("after approval"),
    ]);
    let m = manager(Arc::clone(&model), vec![Arc::new(AskTool)]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("clean up")).await.unwrap();
    let req = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ClientRequested { .. })
    })
    .await;
    let EventMsg::ClientRequested {
        request_id: approval_id,
        ..
    } = &req.msg
    else {
        unreachable!()
    };
    let res = t
        .handle
        .submit(Op::ApprovalAnswer {
            approval_id: approval_id.clone(),
            decision,
        })
        .await
        .unwrap();
    assert_eq!(res, OpResult::Accepted);
    let events = t.events.collect_until(is_turn_end).await;
    (events, model)
}

#[tokio::test]
async fn an_approved_call_proceeds_with_the_decision() {
    let (events, model) = approval_round(ApprovalDecision::Approve).await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
    assert!(events.iter().any(|e| matches!(
        e.msg,
        EventMsg::ClientRequestResolved {
            outcome: ApprovalOutcome::Approved,
            ..
        }
    )));
    let second = &model.requests()[1];
    assert!(second.input.iter().any(
        |i| matches!(i.as_ref(), Item::ToolOutput { output, .. } if output == "decision: Approve")
    ));
}

#[tokio::test]
async fn a_denied_call_reports_the_denial_to_the_model() {
    let (events, model) = approval_round(ApprovalDecision::Deny).await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
    let second = &model.requests()[1];
    assert!(second.input.iter().any(
        |i| matches!(i.as_ref(), Item::ToolOutput { output, .. } if output == "decision: Deny")
    ));
}

#[tokio::test]
async fn abort_from_an_approval_interrupts_the_turn() {
    let (events, model) = approval_round(ApprovalDecision::Abort).await;
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted
        }
    );
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn an_interrupt_while_waiting_for_approval_cancels_the_request() {
    let model = ScriptedModel::replies(vec![ScriptedReply::tool_call("ask", json!({}))]);
    let m = manager(Arc::clone(&model), vec![Arc::new(AskTool)]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("clean up")).await.unwrap();
    let req = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ClientRequested { .. })
    })
    .await;
    let EventMsg::ClientRequested {
        request_id: approval_id,
        ..
    } = req.msg.clone()
    else {
        unreachable!()
    };
    t.handle.submit(Op::Interrupt).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(events.iter().any(|e| e.msg
        == EventMsg::ClientRequestResolved {
            request_id: approval_id.clone(),
            outcome: ApprovalOutcome::Cancelled,
            grant: None,
        }));
    // A late answer is refused clearly, not lost silently.
    let late = t
        .handle
        .submit(Op::ApprovalAnswer {
            approval_id,
            decision: ApprovalDecision::Approve,
        })
        .await
        .unwrap();
    assert!(matches!(late, OpResult::Refused { .. }));
}

#[tokio::test]
async fn an_interrupted_review_is_not_recovered_as_a_regular_turn() {
    let model =
        ScriptedModel::replies(vec![ScriptedReply::text("looking").with_fault(Fault::Hang)]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    t.handle
        .submit(Op::Review {
            target: rein_protocol::ReviewTarget::UncommittedChanges,
        })
        .await
        .unwrap();
    interrupt_once_streaming(&mut t).await;
    assert_eq!(
        t.handle.submit(Op::Recover).await.unwrap(),
        OpResult::Input(InputOutcome::Rejected {
            reason: RejectReason::NothingToRecover
        })
    );
}

#[tokio::test]
async fn interrupting_a_named_turn_never_hits_another() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("one").with_fault(Fault::Hang),
        ScriptedReply::text("unused"),
    ]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let turn = started(t.handle.submit(Op::user_text("work")).await.unwrap());
    model.wait_for_requests(1).await;
    // A turn that is not the running one (e.g. one that already ended): nothing happens.
    let stale = rein_protocol::TurnId::new();
    assert_eq!(
        t.handle
            .submit(Op::InterruptTurn { turn_id: stale })
            .await
            .unwrap(),
        OpResult::Interrupt(InterruptOutcome::Idle)
    );
    assert_eq!(
        t.handle.state().await.unwrap().active_turn.map(|a| a.id),
        Some(turn),
        "the running turn goes on"
    );
    assert_eq!(
        t.handle
            .submit(Op::InterruptTurn { turn_id: turn })
            .await
            .unwrap(),
        OpResult::Interrupt(InterruptOutcome::Interrupting { turn_id: turn })
    );
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(
        end.msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted
        }
    ));
}
