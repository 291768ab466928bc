//! Tool sources and per-thread tool state against the scripted model: a tool that appears
//! while a step runs is offered from the next step on, never half-way through one; grants
//! "for the session" are folded from the thread's events, so a resumed thread keeps them;
//! a tool's question to the client takes the same park-and-wake path as an approval.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use pretty_assertions::assert_eq;
use rein_core::model::scripted::ScriptedModel;
use rein_core::recorder::MemoryRecorder;
use rein_core::tools::{
    builtin_tools, BuiltinConfig, Tool, ToolCall, ToolContext, ToolResult, ToolSlot, ToolSpec,
};
use rein_core::{ThreadManager, ThreadOptions};
use rein_protocol::script::ScriptedReply;
use rein_protocol::{
    ApprovalDecision, ApprovalOutcome, ApprovalPolicy, ClientRequest, ClientResponse, Event,
    EventMsg, Item, Op, OpResult, Question, SandboxPolicy,
};
use serde_json::json;
use support::{catalog, fast_config, is_turn_end, manager, settings, until};

/// A tool that says it ran.
struct LateTool;

impl Tool for LateTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "late".into(),
            description: "appears later".into(),
            parameters: json!({"type": "object"}),
        }
    }

    fn run<'a>(&'a self, _call: ToolCall, _ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async { ToolResult::ok("late ran") }.boxed()
    }
}

fn offered(request: &rein_core::model::ModelRequest) -> Vec<String> {
    request.tools.iter().map(|s| s.name.clone()).collect()
}

fn outputs(history: &[Arc<Item>]) -> Vec<String> {
    history
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tool_source_added_during_a_step_is_offered_from_the_next_step() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("late", json!({})),
        ScriptedReply::tool_call("late", json!({})),
        ScriptedReply::text("done"),
    ]);
    let held = model.hold_reply(0);
    let m = manager(Arc::clone(&model), Vec::new());
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    // The first step froze its tools and is waiting for its reply.
    model.wait_for_requests(1).await;
    let slot = Arc::new(ToolSlot::new());
    slot.set(vec![Arc::new(LateTool)]);
    t.handle.add_tool_source(slot);
    held.open();
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }), "{end:?}");

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(!offered(&requests[0]).contains(&"late".to_owned()));
    assert_eq!(offered(&requests[1]), vec!["late".to_owned()]);
    let state = t.handle.state().await.unwrap();
    let outputs = outputs(&state.history);
    assert!(
        outputs[0].starts_with("unknown tool `late`"),
        "the step that did not offer it does not run it: {outputs:?}"
    );
    assert_eq!(outputs[1], "late ran");
}

#[tokio::test]
async fn a_source_whose_tools_change_is_read_again_at_each_step() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("late", json!({})),
        ScriptedReply::text("done"),
    ]);
    let slot = Arc::new(ToolSlot::new());
    let m = ThreadManager::builder(catalog(
        model.clone() as Arc<dyn rein_core::model::ModelClient>
    ))
    .tool_source(slot.clone())
    .config(fast_config())
    .build();
    let held = model.hold_reply(0);
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    model.wait_for_requests(1).await;
    slot.set(vec![Arc::new(LateTool)]);
    held.open();
    until(&mut t.events, is_turn_end).await;
    let requests = model.requests();
    assert!(offered(&requests[0]).is_empty());
    assert_eq!(offered(&requests[1]), vec!["late".to_owned()]);
}

#[tokio::test]
async fn a_grant_for_the_session_survives_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let touch = json!({ "command": ["touch", "granted.txt"] });
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("shell", touch.clone()),
        ScriptedReply::text("first done"),
        ScriptedReply::tool_call("shell", touch),
        ScriptedReply::text("second done"),
    ]);
    let m = ThreadManager::builder(catalog(
        model.clone() as Arc<dyn rein_core::model::ModelClient>
    ))
    .tools(builtin_tools(BuiltinConfig::default()))
    .config(fast_config())
    .build();
    let mut s = settings();
    s.cwd = dir.path().canonicalize().unwrap();
    s.approval_policy = ApprovalPolicy::Untrusted;
    s.sandbox_policy = SandboxPolicy::DangerFullAccess;
    let recorder = MemoryRecorder::default();
    let mut t = m
        .create_thread(ThreadOptions::new(s).with_recorder(Box::new(recorder.clone())))
        .unwrap();
    t.handle.submit(Op::user_text("touch it")).await.unwrap();
    let asked = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ClientRequested { .. })
    })
    .await;
    let EventMsg::ClientRequested { request_id, .. } = &asked.msg else {
        unreachable!()
    };
    t.handle
        .submit(Op::ApprovalAnswer {
            approval_id: request_id.clone(),
            decision: ApprovalDecision::ApproveForSession,
        })
        .await
        .unwrap();
    let mut events = t.events.collect_until(is_turn_end).await;
    events.insert(0, asked);
    assert!(events.iter().any(|e| matches!(
        &e.msg,
        EventMsg::ClientRequestResolved {
            outcome: ApprovalOutcome::ApprovedForSession,
            grant: Some(_),
            ..
        }
    )));
    assert!(dir.path().join("granted.txt").exists());

    // A new life of the thread, from its events alone.
    let all = t.handle.state().await.unwrap();
    assert!(all
        .session_grants
        .covers_command(&["touch".into(), "granted.txt".into()]));
    t.handle.shutdown().await.unwrap();
    let history: Vec<Event> = recorder.events();
    drop(t);
    let resumed = m
        .create_thread(ThreadOptions::resume(
            history,
            Box::new(rein_core::recorder::NullRecorder),
        ))
        .unwrap();
    let mut r = resumed;
    r.handle.submit(Op::user_text("again")).await.unwrap();
    let events = r.events.collect_until(is_turn_end).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::ClientRequested { .. })),
        "the resumed thread did not ask again: {events:?}"
    );
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
}

/// A tool that asks the user a question and returns the answer.
struct QuizTool;

impl Tool for QuizTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "quiz".into(),
            description: "asks".into(),
            parameters: json!({"type": "object"}),
        }
    }

    fn run<'a>(&'a self, _call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let ask = rein_core::tools::Ask {
                request: ClientRequest::Question {
                    questions: vec![Question {
                        id: "color".into(),
                        header: "Color".into(),
                        question: "Which color?".into(),
                        options: Vec::new(),
                        secret: false,
                    }],
                },
                session_grant: None,
            };
            match ctx.ask(ask).await {
                Ok(ClientResponse::Answers { answers }) => {
                    ToolResult::ok(format!("answers: {answers:?}"))
                }
                Ok(other) => ToolResult::err(format!("unexpected: {other:?}")),
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        .boxed()
    }
}

#[tokio::test]
async fn a_question_is_asked_and_answered_through_the_same_path_as_approvals() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("quiz", json!({})),
        ScriptedReply::text("thanks"),
    ]);
    let m = manager(Arc::clone(&model), vec![Arc::new(QuizTool)]);
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("ask me")).await.unwrap();
    let asked = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ClientRequested { .. })
    })
    .await;
    let EventMsg::ClientRequested { request_id, .. } = &asked.msg else {
        unreachable!()
    };
    // An approval decision is not an answer to a question.
    let wrong = t
        .handle
        .submit(Op::ApprovalAnswer {
            approval_id: request_id.clone(),
            decision: ApprovalDecision::Approve,
        })
        .await
        .unwrap();
    assert!(matches!(wrong, OpResult::Refused { .. }), "{wrong:?}");
    let answered = t
        .handle
        .submit(Op::Respond {
            request_id: request_id.clone(),
            response: ClientResponse::Answers {
                answers: [("color".to_owned(), vec!["blue".to_owned()])].into(),
            },
        })
        .await
        .unwrap();
    assert_eq!(answered, OpResult::Accepted);
    let events = t.events.collect_until(is_turn_end).await;
    assert!(events.iter().any(|e| matches!(
        e.msg,
        EventMsg::ClientRequestResolved {
            outcome: ApprovalOutcome::Answered,
            ..
        }
    )));
    let second = &model.requests()[1];
    assert!(second.input.iter().any(|i| matches!(
        i.as_ref(),
        Item::ToolOutput { output, .. } if output == r#"answers: {"color": ["blue"]}"#
    )));
}
