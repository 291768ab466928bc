//! Context management: manual and automatic compaction, recovery from "context window
//! exceeded", steers during compaction, resume after compaction, and switching to a model
//! with a smaller window.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::recorder::MemoryRecorder;
use rein_core::thread::state::ThreadState;
use rein_core::{KernelConfig, ThreadManager, ThreadOptions};
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{
    CompactionTrigger, Event, EventMsg, InputOutcome, Item, Op, OpResult, TaskKind, TokenUsage,
};
use serde_json::json;
use support::*;

fn usage(input: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        output_tokens: 10,
        total_tokens: input + 10,
        ..Default::default()
    }
}

fn text_with_usage(text: &str, input: u64) -> ScriptedReply {
    let mut r = ScriptedReply::text(text);
    r.usage = Some(usage(input));
    r
}

fn manager_with(model: Arc<ScriptedModel>, config: KernelConfig) -> ThreadManager {
    ThreadManager::builder(catalog(model))
        .tool(Arc::new(OrderTool::default()))
        .config(config)
        .build()
}

fn small_limit() -> KernelConfig {
    KernelConfig {
        auto_compact_token_limit: Some(200),
        ..fast_config()
    }
}

fn is_summary(item: &Item) -> bool {
    item.message_text()
        .is_some_and(|t| t.starts_with("<summary of the earlier conversation>"))
}

async fn turn(t: &mut rein_core::NewThread, text: &str) -> Vec<Arc<Event>> {
    t.handle.submit(Op::user_text(text)).await.unwrap();
    t.events.collect_until(is_turn_end).await
}

#[tokio::test]
async fn manual_compaction_keeps_recent_user_messages_and_the_summary() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("a1"),
        ScriptedReply::text("a2"),
        ScriptedReply::text("the summary"),
        ScriptedReply::text("a3"),
    ]);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    turn(&mut t, "first").await;
    turn(&mut t, "second").await;
    assert_eq!(
        t.handle.submit(Op::Compact).await.unwrap(),
        OpResult::Accepted
    );
    let events = t.events.collect_until(is_turn_end).await;
    assert!(matches!(
        &events[0].msg,
        EventMsg::TurnStarted {
            kind: TaskKind::Compact,
            ..
        }
    ));
    assert!(events.iter().any(|e| matches!(
        e.msg,
        EventMsg::CompactionStarted {
            trigger: CompactionTrigger::Manual,
            ..
        }
    )));
    assert!(
        events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::Warning { .. })),
        "accuracy warning"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::AgentMessageDelta { .. })),
        "the summary is not streamed as an answer"
    );
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));

    let state = t.handle.state().await.unwrap();
    assert_eq!(state.history.len(), 3);
    assert_eq!(user_texts(&state.history[..2]), vec!["first", "second"]);
    assert!(is_summary(&state.history[2]));
    assert!(state.history[2]
        .message_text()
        .unwrap()
        .ends_with("the summary"));
    // The summarising request offered no tools.
    assert!(model.requests()[2].tools.is_empty());

    turn(&mut t, "third").await;
    let next = model.requests().pop().unwrap();
    assert_eq!(next.input.len(), 4, "kept messages, summary, new input");
    assert!(is_summary(&next.input[2]));
    // Only the turn after the compaction can be rolled back; the refusal says why.
    match t.handle.submit(Op::Rollback { turns: 2 }).await.unwrap() {
        OpResult::Refused { message } => assert!(
            message.contains("has 1 since its last compaction"),
            "{message}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        t.handle.submit(Op::Rollback { turns: 1 }).await.unwrap(),
        OpResult::Accepted
    );
}

#[tokio::test]
async fn auto_compaction_runs_before_a_turn_over_the_limit() {
    let model = ScriptedModel::replies(vec![
        text_with_usage("big answer", 500),
        ScriptedReply::text("summary"),
        ScriptedReply::text("fits now"),
    ]);
    let m = manager_with(model.clone(), small_limit());
    let mut t = start(&m);
    turn(&mut t, "one").await;
    let events = turn(&mut t, "two").await;
    let trigger = events.iter().find_map(|e| match e.msg {
        EventMsg::CompactionStarted {
            trigger,
            tokens_before,
        } => Some((trigger, tokens_before)),
        _ => None,
    });
    let (trigger, before) = trigger.unwrap();
    assert_eq!(trigger, CompactionTrigger::Auto);
    assert!(before > 200);
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("fits now".into())
        }
    );
    let last = model.requests().pop().unwrap();
    assert!(last.input.iter().any(|i| is_summary(i)));
    assert_eq!(
        request_user_texts(&last).last().unwrap(),
        "two",
        "the new input survives"
    );
}

#[tokio::test]
async fn auto_compaction_runs_mid_turn_between_steps() {
    let mut call = ScriptedReply::tool_call("order", json!({"name": "a"}));
    call.usage = Some(usage(500));
    let model = ScriptedModel::replies(vec![
        call,
        ScriptedReply::text("summary of the tool work"),
        ScriptedReply::text("done after compaction"),
    ]);
    let m = manager_with(model.clone(), small_limit());
    let mut t = start(&m);
    let events = turn(&mut t, "do the work").await;
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ToolCallEnd { .. } => Some("tool_end"),
            EventMsg::CompactionStarted { .. } => Some("compaction"),
            EventMsg::TurnCompleted { .. } => Some("completed"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec!["tool_end", "compaction", "completed"]);
    let last = model.requests().pop().unwrap();
    assert_eq!(
        request_user_texts(&last)[0],
        "do the work",
        "the task is kept verbatim"
    );
}

#[tokio::test]
async fn context_window_exceeded_compacts_and_retries_once() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("warm up"),
        ScriptedReply::default().with_fault(Fault::ContextWindowExceeded),
        ScriptedReply::text("summary"),
        ScriptedReply::text("answered after compaction"),
    ]);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    turn(&mut t, "one").await;
    let events = turn(&mut t, "two").await;
    assert!(events.iter().any(|e| matches!(
        e.msg,
        EventMsg::CompactionStarted {
            trigger: CompactionTrigger::ContextExceeded,
            ..
        }
    )));
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("answered after compaction".into())
        }
    );
}

#[tokio::test]
async fn a_compaction_that_overflows_drops_the_oldest_items() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("a1"),
        ScriptedReply::text("a2"),
        ScriptedReply::default().with_fault(Fault::ContextWindowExceeded),
        ScriptedReply::text("summary of the recent part"),
    ]);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    turn(&mut t, "old").await;
    turn(&mut t, "recent").await;
    t.handle.submit(Op::Compact).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
    let reqs = model.requests();
    assert!(
        reqs[3].input.len() < reqs[2].input.len(),
        "the retry sent less history"
    );
    assert_eq!(request_user_texts(&reqs[3])[0], "recent");
}

#[tokio::test]
async fn input_during_compaction_is_queued_not_steered_and_runs_next() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("a1"),
        ScriptedReply::text("summary"),
        ScriptedReply::text("answer to the queued input"),
    ]);
    let gate = model.hold_reply(1);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    turn(&mut t, "one").await;
    t.handle.submit(Op::Compact).await.unwrap();
    let started = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::TurnStarted { .. })
    })
    .await;
    model.wait_for_requests(2).await;
    let res = t
        .handle
        .submit(Op::user_text("while compacting"))
        .await
        .unwrap();
    assert_eq!(
        res,
        OpResult::Input(InputOutcome::Queued {
            behind: started.turn_id.unwrap()
        })
    );
    gate.open();
    until(&mut t.events, is_turn_end).await; // the compaction
    let end = until(&mut t.events, is_turn_end).await; // the queued input's turn
    assert_eq!(
        end.msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("answer to the queued input".into())
        }
    );
    assert!(!model.requests()[1]
        .input
        .iter()
        .any(|i| i.message_text().as_deref() == Some("while compacting")));
    assert_eq!(
        request_user_texts(&model.requests()[2]).last().unwrap(),
        "while compacting"
    );
}

#[tokio::test]
async fn resume_after_compaction_rebuilds_the_compacted_history() {
    let model = ScriptedModel::echo();
    let m = manager_with(model.clone(), fast_config());
    let recorder = MemoryRecorder::default();
    let mut t = m
        .create_thread(ThreadOptions::new(settings()).with_recorder(Box::new(recorder.clone())))
        .unwrap();
    turn(&mut t, "one").await;
    turn(&mut t, "two").await;
    t.handle.submit(Op::Compact).await.unwrap();
    until(&mut t.events, is_turn_end).await;
    let live = t.handle.state().await.unwrap();
    t.handle.shutdown().await.unwrap();

    let events = recorder.events();
    let events: Vec<Event> = events
        .into_iter()
        .filter(|e| e.msg != EventMsg::ShutdownComplete)
        .collect();
    assert_eq!(ThreadState::from_events(&events).history, live.history);
    let m2 = manager_with(model.clone(), fast_config());
    let mut resumed = m2
        .create_thread(ThreadOptions::resume(
            events,
            Box::new(rein_core::recorder::NullRecorder),
        ))
        .unwrap();
    assert_eq!(resumed.handle.state().await.unwrap().history, live.history);
    turn(&mut resumed, "three").await;
    let next = model.requests().pop().unwrap();
    assert_eq!(next.input.len(), live.history.len() + 1);
}

#[tokio::test]
async fn switching_to_a_smaller_window_compacts_first_with_the_old_model() {
    let model = ScriptedModel::replies(vec![
        text_with_usage("long answer", 50_000),
        ScriptedReply::text("summary"),
        ScriptedReply::text("small model answer"),
    ]);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    turn(&mut t, "lots of context").await;
    let res = t
        .handle
        .submit(Op::SwitchModel {
            model: "scripted-small".into(),
        })
        .await
        .unwrap();
    assert_eq!(res, OpResult::Accepted);
    let events = t
        .events
        .collect_until(|e| matches!(e.msg, EventMsg::ModelSwitched { .. }))
        .await;
    assert!(events.iter().any(|e| matches!(
        e.msg,
        EventMsg::CompactionStarted {
            trigger: CompactionTrigger::ModelSwitch,
            ..
        }
    )));
    assert_eq!(
        model.requests()[1].model,
        "scripted",
        "compacted with the old model"
    );
    let events = turn(&mut t, "continue").await;
    assert!(
        matches!(&events[0].msg, EventMsg::TurnStarted { settings, .. } if settings.model == "scripted-small")
    );
    let next = model.requests().pop().unwrap();
    assert_eq!(next.model, "scripted-small");
    let size: usize = next
        .input
        .iter()
        .map(|i| serde_json::to_string(i.as_ref()).unwrap().len())
        .sum();
    assert!(size / 4 < 8_000, "the next request fits the 8k window");
}

#[tokio::test]
async fn a_switch_to_a_window_that_fits_needs_no_compaction() {
    let model = ScriptedModel::echo();
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    turn(&mut t, "short").await;
    assert_eq!(
        t.handle
            .submit(Op::SwitchModel {
                model: "scripted-small".into()
            })
            .await
            .unwrap(),
        OpResult::Accepted
    );
    let ev = until(&mut t.events, |e| {
        matches!(
            e.msg,
            EventMsg::ModelSwitched { .. } | EventMsg::CompactionStarted { .. }
        )
    })
    .await;
    assert!(matches!(ev.msg, EventMsg::ModelSwitched { .. }));
    assert!(matches!(
        t.handle
            .submit(Op::SwitchModel {
                model: "nope".into()
            })
            .await
            .unwrap(),
        OpResult::Refused { .. }
    ));
}

#[tokio::test]
async fn a_switch_during_a_turn_waits_for_it() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("slow"),
        ScriptedReply::text("next"),
    ]);
    let gate = model.hold_reply(0);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    model.wait_for_requests(1).await;
    let h = t.handle.clone();
    let switch = tokio::spawn(async move {
        h.submit(Op::SwitchModel {
            model: "scripted-small".into(),
        })
        .await
    });
    gate.open();
    let events = t
        .events
        .collect_until(|e| matches!(e.msg, EventMsg::ModelSwitched { .. }))
        .await;
    let completed = events
        .iter()
        .position(|e| matches!(e.msg, EventMsg::TurnCompleted { .. }))
        .unwrap();
    assert_eq!(
        completed,
        events.len() - 2,
        "the switch came after the turn"
    );
    assert_eq!(switch.await.unwrap().unwrap(), OpResult::Accepted);
}

#[tokio::test]
async fn rollout_bytes_per_compaction_are_o_summary_not_o_history() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("ok")]);
    let m = manager_with(model.clone(), fast_config());
    let recorder = MemoryRecorder::default();
    let mut t = m
        .create_thread(ThreadOptions::new(settings()).with_recorder(Box::new(recorder.clone())))
        .unwrap();
    let big = "x".repeat(10_000);
    for _ in 0..10 {
        turn(&mut t, &big).await;
    }
    let history_bytes: usize = t
        .handle
        .state()
        .await
        .unwrap()
        .history
        .iter()
        .map(|i| serde_json::to_string(i.as_ref()).unwrap().len())
        .sum();
    let before = recorder.events().len();
    t.handle.submit(Op::Compact).await.unwrap();
    until(&mut t.events, is_turn_end).await;
    let written: usize = recorder.events()[before..]
        .iter()
        .map(|e| serde_json::to_string(e).unwrap().len())
        .sum();
    assert!(history_bytes > 100_000);
    assert!(
        written < 4_000,
        "a compaction wrote {written} bytes for {history_bytes} bytes of history"
    );
}

#[tokio::test]
async fn a_review_never_compacts_and_leaves_the_threads_context_count_alone() {
    let model = ScriptedModel::replies(vec![
        text_with_usage("a1", 150),
        // The review's own context is small, but over the limit it must not compact.
        text_with_usage("review: fine", 900),
    ]);
    let m = manager_with(model.clone(), small_limit());
    let mut t = start(&m);
    turn(&mut t, "first").await;
    t.handle
        .submit(Op::Review {
            target: rein_protocol::ReviewTarget::UncommittedChanges,
        })
        .await
        .unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::CompactionStarted { .. })),
        "a review does not compact"
    );
    let state = t.handle.state().await.unwrap();
    assert_eq!(user_texts(&state.history[..1]), vec!["first"]);
    assert_eq!(
        state.context_tokens, 160,
        "the thread's context size is still its own"
    );
}

#[tokio::test]
async fn a_queued_maintenance_op_that_cannot_run_reports_an_error() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("slow")]);
    let gate = model.hold_reply(0);
    let m = manager_with(model.clone(), fast_config());
    let mut t = start(&m);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    model.wait_for_requests(1).await;
    // Nobody waits for this answer: it is queued behind the turn.
    t.handle
        .enqueue(Op::SwitchModel {
            model: "no-such-model".into(),
        })
        .await
        .unwrap();
    gate.open();
    let error = until(&mut t.events, |e| matches!(e.msg, EventMsg::Error { .. })).await;
    match &error.msg {
        EventMsg::Error { code, message } => {
            assert_eq!(*code, rein_protocol::ErrorCode::OpRefused);
            assert!(message.contains("no-such-model"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
}
