//! A turn through the whole kernel: text, tools, retries, errors, stop hooks.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::turn::stop_hook::{StopContext, StopDecision, StopHook};
use rein_core::ThreadManager;
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{AgentStatus, ErrorCode, EventMsg, InputOutcome, Item, Op, OpResult};
use serde_json::json;
use support::*;

#[tokio::test]
async fn plain_turn_streams_deltas_and_completes_with_the_answer() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("Hello there").with_deltas(3)]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    let res = t.handle.submit(Op::user_text("hi")).await.unwrap();
    let OpResult::Input(InputOutcome::Started { turn_id }) = res else {
        panic!("expected a started turn, got {res:?}");
    };
    let events = t.events.collect_until(is_turn_end).await;
    let deltas: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::AgentMessageDelta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.concat(), "Hello there");
    assert_eq!(deltas.len(), 3);
    let last = events.last().unwrap();
    assert_eq!(last.turn_id, Some(turn_id));
    assert_eq!(
        last.msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("Hello there".into())
        }
    );
    // seq is gapless and increasing from the first event of the thread.
    for pair in events.windows(2) {
        assert_eq!(pair[1].seq, pair[0].seq + 1);
    }
    let state = t.handle.state().await.unwrap();
    assert_eq!(state.status, AgentStatus::Completed);
    assert_eq!(user_texts(&state.history), vec!["hi"]);
    assert_eq!(state.last_agent_message(), Some("Hello there"));
}

#[tokio::test]
async fn parallel_tool_results_enter_history_in_call_order() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("order", json!({"name": "a", "wait_for": "b"}))
            .with_tool_call("order", json!({"name": "b"})),
        ScriptedReply::text("both done"),
    ]);
    let tool = Arc::new(OrderTool::default());
    let m = manager(Arc::clone(&model), vec![tool.clone()]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }));
    // b finished first (a waited for it)...
    assert_eq!(*tool.completion_log.lock().unwrap(), vec!["b", "a"]);
    // ...but the outputs are in the order the model issued the calls.
    let state = t.handle.state().await.unwrap();
    let outputs: Vec<&str> = state
        .history
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput { output, .. } => Some(output.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, vec!["done a", "done b"]);
    // The second request carried both calls and both outputs.
    let second = &model.requests()[1];
    let kinds: Vec<&str> = second
        .input
        .iter()
        .map(|i| match i.as_ref() {
            Item::UserMessage { .. } => "user",
            Item::ToolCall { .. } => "call",
            Item::ToolOutput { .. } => "output",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, vec!["user", "call", "call", "output", "output"]);
}

#[tokio::test]
async fn the_tools_offered_are_the_tools_that_run() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("not_offered", json!({})),
        ScriptedReply::text("ok"),
    ]);
    let m = manager(Arc::clone(&model), vec![Arc::new(OrderTool::default())]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    until(&mut t.events, is_turn_end).await;
    let first = &model.requests()[0];
    let offered: Vec<&str> = first.tools.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(offered, vec!["order"]);
    let state = t.handle.state().await.unwrap();
    let output = state.history.iter().find_map(|i| match i.as_ref() {
        Item::ToolOutput {
            output, success, ..
        } => Some((output.clone(), *success)),
        _ => None,
    });
    let (output, success) = output.unwrap();
    assert!(!success);
    assert!(output.contains("unknown tool `not_offered`"), "{output}");
}

#[tokio::test]
async fn a_cut_stream_is_retried_without_duplicating_items() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("partial answer")
            .with_deltas(4)
            .with_fault(Fault::CutAfter { events: 2 }),
        ScriptedReply::text("full answer"),
    ]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(events
        .iter()
        .any(|e| matches!(e.msg, EventMsg::StreamRetry { attempt: 1, .. })));
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
    let state = t.handle.state().await.unwrap();
    let agent: Vec<String> = state
        .history
        .iter()
        .filter(|i| matches!(i.as_ref(), Item::AgentMessage { .. }))
        .filter_map(|i| i.message_text())
        .collect();
    assert_eq!(agent, vec!["full answer"]);
    // The retry was rebuilt from the same history.
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].input, reqs[1].input);
}

#[tokio::test]
async fn a_bad_request_fails_the_turn_with_a_code_and_is_not_retried() {
    let model = ScriptedModel::replies(vec![ScriptedReply::default().with_fault(
        Fault::HttpError {
            status: 400,
            message: Some("bad schema".into()),
        },
    )]);
    let m = manager(Arc::clone(&model), vec![]);
    let mut t = start(&m);
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    let end = events.last().unwrap();
    assert!(
        matches!(&end.msg, EventMsg::TurnFailed { code: ErrorCode::ModelBadRequest, message } if message.contains("bad schema"))
    );
    assert_eq!(model.request_count(), 1);
    assert_eq!(t.handle.state().await.unwrap().status, AgentStatus::Errored);
    // The thread keeps serving after a failed turn.
    let res = t.handle.submit(Op::user_text("again")).await.unwrap();
    assert!(matches!(res, OpResult::Input(InputOutcome::Started { .. })));
}

struct VetoOnce;
impl StopHook for VetoOnce {
    fn on_stop(&self, ctx: &StopContext<'_>) -> StopDecision {
        if ctx.vetoes_so_far == 0 {
            StopDecision::Continue {
                instruction: "Run the tests before you stop.".into(),
            }
        } else {
            StopDecision::Stop
        }
    }
}

struct VetoForever;
impl StopHook for VetoForever {
    fn on_stop(&self, _ctx: &StopContext<'_>) -> StopDecision {
        StopDecision::Continue {
            instruction: "keep going".into(),
        }
    }
}

#[tokio::test]
async fn a_stop_hook_veto_injects_its_instruction_and_continues() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("done?"),
        ScriptedReply::text("tests pass"),
    ]);
    let m = ThreadManager::builder(catalog(model.clone()))
        .stop_hook(Arc::new(VetoOnce))
        .config(fast_config())
        .build();
    let mut t = start(&m);
    t.handle.submit(Op::user_text("work")).await.unwrap();
    let end = until(&mut t.events, is_turn_end).await;
    assert_eq!(
        end.msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("tests pass".into())
        }
    );
    let second = &model.requests()[1];
    assert!(second.input.iter().any(|i| matches!(i.as_ref(),
        Item::DeveloperMessage { text, .. } if text == "Run the tests before you stop.")));
}

#[tokio::test]
async fn endless_vetoes_are_stopped_by_the_guard() {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("again")]);
    let m = ThreadManager::builder(catalog(model.clone()))
        .stop_hook(Arc::new(VetoForever))
        .config(fast_config())
        .build();
    let mut t = start(&m);
    t.handle.submit(Op::user_text("work")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
    assert!(events
        .iter()
        .any(|e| matches!(&e.msg, EventMsg::Warning { message } if message.contains("stop hook"))));
    // One first answer plus one per allowed veto.
    assert_eq!(
        model.request_count(),
        1 + fast_config().max_stop_hook_vetoes as usize
    );
}

fn catalog_with_fallback(
    main: Arc<ScriptedModel>,
    backup: Arc<ScriptedModel>,
) -> Arc<rein_core::model::StaticCatalog> {
    use rein_core::model::{ModelInfo, StaticCatalog};
    let info = |id: &str| ModelInfo {
        id: id.into(),
        provider: "scripted".into(),
        context_window: None,
        traits: Default::default(),
    };
    Arc::new(
        StaticCatalog::new()
            .with(info(MODEL), main)
            .with(info("backup"), backup)
            .with_fallback(MODEL, "backup"),
    )
}

#[tokio::test]
async fn a_recoverable_failure_past_its_retries_falls_back_once() {
    let down = ScriptedReply::default().with_fault(Fault::HttpError {
        status: 503,
        message: None,
    });
    let main = ScriptedModel::replies(vec![down]);
    let backup = ScriptedModel::replies(vec![ScriptedReply::text("from the backup")]);
    let m = ThreadManager::builder(catalog_with_fallback(main.clone(), backup.clone()))
        .config(fast_config())
        .build();
    let mut t = start(&m);
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    let reroutes: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::ModelRerouted { .. }))
        .collect();
    assert_eq!(reroutes.len(), 1);
    assert!(
        matches!(&reroutes[0].msg, EventMsg::ModelRerouted { from, to, .. } if from == MODEL && to == "backup")
    );
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("from the backup".into())
        }
    );
    // The scripted model retries 3 times before giving up; the backup is asked once.
    assert_eq!(main.request_count(), 4);
    assert_eq!(backup.request_count(), 1);
    assert_eq!(backup.requests()[0].model, "backup");
}

#[tokio::test]
async fn a_bad_request_never_falls_back() {
    let main = ScriptedModel::replies(vec![ScriptedReply::default().with_fault(
        Fault::HttpError {
            status: 400,
            message: None,
        },
    )]);
    let backup = ScriptedModel::replies(vec![ScriptedReply::text("unused")]);
    let m = ThreadManager::builder(catalog_with_fallback(main.clone(), backup.clone()))
        .config(fast_config())
        .build();
    let mut t = start(&m);
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(!events
        .iter()
        .any(|e| matches!(e.msg, EventMsg::ModelRerouted { .. })));
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnFailed { .. }
    ));
    assert_eq!(backup.request_count(), 0);
}

#[tokio::test]
async fn an_output_schema_rides_on_every_request_of_its_turn_only() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("order", json!({"name": "a"})),
        ScriptedReply::text("{\"ok\":true}"),
        ScriptedReply::text("free text"),
    ]);
    let m = manager(Arc::clone(&model), vec![Arc::new(OrderTool::default())]);
    let mut t = start(&m);
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    t.handle
        .submit(Op::UserInput {
            items: vec![rein_protocol::InputPart::text("answer as JSON")],
            mode: rein_protocol::InputMode::StartOrSteer,
            settings: rein_protocol::SettingsChange::default(),
            output_schema: Some(schema.clone()),
        })
        .await
        .unwrap();
    until(&mut t.events, is_turn_end).await;
    t.handle
        .submit(Op::user_text("now free text"))
        .await
        .unwrap();
    until(&mut t.events, is_turn_end).await;
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].output_schema.as_deref(), Some(&schema));
    assert_eq!(
        reqs[1].output_schema.as_deref(),
        Some(&schema),
        "the follow-up step keeps it"
    );
    assert_eq!(reqs[2].output_schema, None, "the next turn asked for none");
}
