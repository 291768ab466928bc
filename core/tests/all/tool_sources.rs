//! Tool sources and per-thread tool state against the scripted model: a tool that appears
//! while a step runs is offered from the next step on, never half-way through one; a
//! tool's question to the client takes the same park-and-wake path as an approval. (That
//! a grant "for the session" survives a resume is shown with the built-in shell, in
//! `tools/tests/all/tools_in_turn.rs`.)
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use pretty_assertions::assert_eq;
use rein_core::model::scripted::ScriptedModel;
use rein_core::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSlot, ToolSpec};
use rein_core::{ThreadManager, ThreadOptions};
use rein_protocol::script::ScriptedReply;
use rein_protocol::{
    ApprovalDecision, ApprovalOutcome, ClientRequest, ClientResponse, EventMsg, Item, Op, OpResult,
    Question,
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
