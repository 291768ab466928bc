use super::*;
use pretty_assertions::assert_eq;
use rein_protocol::{ThreadId, TokenUsage, ToolFacts, ToolOutcome};
use serde_json::{json, Value};

fn event(msg: EventMsg) -> Event {
    Event {
        thread_id: ThreadId::new(),
        turn_id: None,
        seq: 0,
        timestamp_ms: 0,
        msg,
    }
}

fn project(projector: &mut Projector, msgs: Vec<EventMsg>) -> Vec<Value> {
    msgs.into_iter()
        .flat_map(|m| projector.project(&event(m)))
        .map(|u| serde_json::to_value(u).unwrap())
        .collect()
}

fn agent_message(id: &str, text: &str) -> EventMsg {
    EventMsg::ItemCompleted {
        item: Item::AgentMessage {
            id: ItemId(id.into()),
            text: text.into(),
            partial: false,
        },
    }
}

#[test]
fn a_streamed_message_is_its_deltas_and_a_replayed_one_its_whole_text() {
    let mut live = Projector::new(Mode::Live, TerminalDisplay::Text);
    let streamed = project(
        &mut live,
        vec![
            EventMsg::AgentMessageDelta {
                item_id: ItemId("m1".into()),
                delta: "Hel".into(),
            },
            EventMsg::AgentMessageDelta {
                item_id: ItemId("m1".into()),
                delta: "lo".into(),
            },
            agent_message("m1", "Hello"),
            EventMsg::ItemCompleted {
                item: Item::user_text("hi"),
            },
        ],
    );
    let chunk = |text: &str| {
        json!({ "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": text }, "messageId": "m1" })
    };
    assert_eq!(streamed, vec![chunk("Hel"), chunk("lo")]);

    let mut replay = Projector::new(Mode::Replay, TerminalDisplay::Text);
    let user = Item::UserMessage {
        id: ItemId("u1".into()),
        content: vec![InputPart::text("hi")],
    };
    let replayed = project(
        &mut replay,
        vec![
            EventMsg::ItemCompleted { item: user },
            agent_message("m1", "Hello"),
        ],
    );
    assert_eq!(
        replayed,
        vec![
            json!({ "sessionUpdate": "user_message_chunk",
                    "content": { "type": "text", "text": "hi" }, "messageId": "u1" }),
            chunk("Hello"),
        ]
    );
}

#[test]
fn tool_calls_plans_usage_and_titles() {
    let mut p = Projector::new(Mode::Live, TerminalDisplay::Text);
    let action = ToolAction::Read {
        path: "/w/a.txt".into(),
    };
    let updates = project(
        &mut p,
        vec![
            EventMsg::ToolCallBegin {
                call_id: "c".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.txt"}"#.into(),
                action: action.clone(),
            },
            EventMsg::ToolCallEnd {
                call_id: "c".into(),
                success: true,
                duration_ms: 1,
                outcome: ToolOutcome::Returned {
                    text: "x".into(),
                    structured: None,
                    content: Vec::new(),
                },
            },
            EventMsg::PlanUpdated {
                plan: vec![PlanStep {
                    step: "read".into(),
                    status: PlanStepStatus::InProgress,
                }],
            },
            EventMsg::TokenCount {
                last: TokenUsage {
                    input_tokens: 10,
                    output_tokens: 5,
                    ..TokenUsage::default()
                },
                total: TokenUsage::default(),
                context_window: Some(1000),
            },
            EventMsg::ThreadNamed {
                name: "two\nlines".into(),
            },
        ],
    );
    assert_eq!(
        updates,
        vec![
            json!({ "sessionUpdate": "tool_call", "toolCallId": "c", "title": "Read /w/a.txt",
                    "kind": "read", "status": "in_progress", "locations": [{ "path": "/w/a.txt" }],
                    "rawInput": { "path": "a.txt" } }),
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed",
                    "content": [{ "type": "content", "content": { "type": "text", "text": "```\nx\n```" } }],
                    "rawOutput": { "type": "returned", "text": "x" } }),
            json!({ "sessionUpdate": "plan",
                    "entries": [{ "content": "read", "priority": "medium", "status": "in_progress" }] }),
            json!({ "sessionUpdate": "usage_update", "used": 15, "size": 1000 }),
            json!({ "sessionUpdate": "session_info_update", "title": "two lines" }),
        ]
    );
    // The facts kept in history say the same (what a resumed thread knows).
    let facts = ToolFacts {
        action,
        outcome: ToolOutcome::failed("gone"),
        duration_ms: 0,
    };
    assert_eq!(
        serde_json::to_value(tool_calls::closed(
            "c",
            Some(&facts.action),
            &facts.outcome,
            TerminalDisplay::Text
        ))
        .unwrap()["status"],
        "failed"
    );
}

#[test]
fn a_sub_agent_card_follows_its_task_its_answers_and_its_close() {
    let mut live = Projector::new(Mode::Live, TerminalDisplay::Text);
    let child = ThreadId::new();
    let card = format!("agent-{child}");
    let opened = project(
        &mut live,
        vec![EventMsg::AgentSpawned {
            thread_id: child,
            nickname: Some("Ada".into()),
            role: None,
            task: "Count\nthe files.".into(),
        }],
    );
    assert_eq!(
        opened,
        vec![json!({
            "sessionUpdate": "tool_call", "toolCallId": card, "title": "Sub-agent Ada: Count the files.",
            "status": "in_progress",
            "rawInput": { "threadId": child, "nickname": "Ada", "role": null, "task": "Count\nthe files." },
            "_meta": { "rein": { "subagent": { "threadId": child } } }
        })]
    );
    let answer = agent_message("c1", "Three.");
    let followed: Vec<Value> = [answer.clone(), answer]
        .iter()
        .flat_map(|m| live.project_child(child, m))
        .map(|u| serde_json::to_value(u).unwrap())
        .collect();
    assert_eq!(
        followed,
        vec![json!({
            "sessionUpdate": "tool_call_update", "toolCallId": card,
            "content": [{ "type": "content", "content": { "type": "text", "text": "Three." } }]
        })],
        "an answer seen twice (state and stream) shows once"
    );
    let rest = project(
        &mut live,
        vec![
            EventMsg::AgentTasked {
                thread_id: child,
                task: "Again.".into(),
            },
            EventMsg::AgentClosed { thread_id: child },
            EventMsg::AgentTasked {
                thread_id: child,
                task: "Closed already.".into(),
            },
        ],
    );
    assert_eq!(
        rest,
        vec![
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": card,
                    "title": "Sub-agent Ada: Again.", "status": "in_progress" }),
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": card, "status": "completed" }),
        ]
    );
    // A thread that is no child of this one has no card.
    assert_eq!(
        live.project_child(ThreadId::new(), &agent_message("x", "?")),
        Vec::new()
    );
}
