//! The Agent Protocol's fold, pure: a run's stream live and replayed from what the rollout
//! keeps agree on every event they share, ids included, whatever modes were asked; tool
//! calls become LangChain's `ai` and `tool` messages with the output as recorded; a
//! rollback drops its run from the thread.

use pretty_assertions::assert_eq;
use rein_protocol::{
    Event, EventMsg, Item, ItemId, ItemKind, TaskKind, ThreadId, ThreadSettings, TurnId,
};
use serde_json::json;

use super::fold::{Modes, RunStream, ThreadFold};
use crate::ids::ResponseId;

fn settings() -> ThreadSettings {
    ThreadSettings {
        model: "m".into(),
        cwd: "/tmp".into(),
        approval_policy: Default::default(),
        sandbox_policy: Default::default(),
        sandbox_options: None,
        reasoning_effort: None,
        budget: Default::default(),
        instructions: String::new(),
    }
}

/// One turn with a tool call and an answer, from `seq`.
fn turn(id: ResponseId, seq: u64, text: &str) -> Vec<Event> {
    let item = ItemId::new();
    let msgs = vec![
        EventMsg::TurnStarted {
            kind: TaskKind::Regular,
            settings: settings(),
            recovered: false,
            output_schema: None,
        },
        EventMsg::ItemCompleted {
            item: Item::user_text(text),
        },
        EventMsg::ItemCompleted {
            item: Item::ToolCall {
                id: ItemId::new(),
                call_id: "call_1".into(),
                name: "shell".into(),
                arguments: r#"{"command":["ls"]}"#.into(),
            },
        },
        EventMsg::ItemCompleted {
            item: Item::ToolOutput {
                id: ItemId::new(),
                call_id: "call_1".into(),
                output: "a.txt\n".into(),
                success: true,
                facts: None,
            },
        },
        EventMsg::ItemStarted {
            item_id: item.clone(),
            kind: ItemKind::AgentMessage,
        },
        EventMsg::AgentMessageDelta {
            item_id: item.clone(),
            delta: "Done".into(),
        },
        EventMsg::ItemCompleted {
            item: Item::AgentMessage {
                id: item,
                text: "Done".into(),
                partial: false,
            },
        },
        EventMsg::TurnCompleted {
            last_agent_message: Some("Done".into()),
        },
    ];
    msgs.into_iter()
        .zip(seq..)
        .map(|(msg, seq)| Event {
            thread_id: id.thread,
            turn_id: Some(id.turn),
            seq,
            timestamp_ms: 1_000_000 + seq,
            msg,
        })
        .collect()
}

fn ids() -> ResponseId {
    ResponseId {
        thread: ThreadId::new(),
        turn: TurnId::new(),
    }
}

fn all_modes() -> Modes {
    Modes {
        values: true,
        updates: true,
        messages: true,
    }
}

#[test]
fn live_and_replayed_streams_agree_but_for_the_deltas_ids_included() {
    let id = ids();
    let events = turn(id, 10, "list");
    let mut live = RunStream::new(id, None, Vec::new(), all_modes(), None);
    let live_out: Vec<_> = events.iter().flat_map(|e| live.step(e)).collect();
    let stored: Vec<&Event> = events.iter().filter(|e| !e.msg.is_delta()).collect();
    let mut replay = RunStream::new(id, None, Vec::new(), all_modes(), None);
    let replay_out: Vec<_> = stored.iter().flat_map(|e| replay.step(e)).collect();
    let kinds: Vec<&str> = live_out.iter().map(|e| e.event).collect();
    assert_eq!(
        kinds,
        [
            "metadata", "values", "updates", "values", "updates", "values", "updates", "messages",
            "messages", "values", "updates", "end"
        ]
    );
    let without_deltas: Vec<_> = live_out
        .iter()
        .filter(|e| !(e.event == "messages" && e.data[0]["content"] != ""))
        .cloned()
        .collect();
    assert_eq!(without_deltas, replay_out);
    assert!(live_out.windows(2).all(|w| w[0].id < w[1].id));
    let values = &live_out[9].data;
    assert_eq!(
        values["messages"][1],
        json!({
            "type": "ai", "id": values["messages"][1]["id"], "content": "",
            "tool_calls": [{ "type": "tool_call", "id": "call_1", "name": "shell",
                             "args": { "command": ["ls"] } }],
        })
    );
    assert_eq!(values["messages"][2]["type"], "tool");
    assert_eq!(values["messages"][2]["content"], "a.txt\n");
    assert_eq!(values["messages"][2]["status"], "success");
    assert_eq!(values["messages"][3]["content"], "Done");
    assert_eq!(
        live_out[6].data,
        json!({ "tools": { "messages": [values["messages"][2]] } })
    );

    // Values only, after an id: the same events with the same ids, the rest left out.
    let after = live_out[3].id;
    let values_only = Modes {
        values: true,
        ..Modes::default()
    };
    let mut resumed = RunStream::new(id, None, Vec::new(), values_only, Some(after));
    let resumed_out: Vec<_> = stored.iter().flat_map(|e| resumed.step(e)).collect();
    let expected: Vec<_> = replay_out
        .iter()
        .filter(|e| e.id > after && !matches!(e.event, "updates" | "messages"))
        .cloned()
        .collect();
    assert_eq!(resumed_out, expected);
}

#[test]
fn a_rollback_drops_its_run_and_a_cut_off_run_ends_interrupted() {
    let first = ids();
    let second = ResponseId {
        thread: first.thread,
        turn: TurnId::new(),
    };
    let mut events = turn(first, 0, "one");
    events.extend(turn(second, 20, "two"));
    events.push(Event {
        thread_id: first.thread,
        turn_id: None,
        seq: 40,
        timestamp_ms: 2_000_000,
        msg: EventMsg::RolledBack { turns: 1 },
    });
    let fold = ThreadFold::new(first.thread, &events);
    assert!(fold.run(second.turn).is_none());
    assert_eq!(fold.last().map(|r| r.turn), Some(first.turn));
    let humans: Vec<_> = fold.values()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "human")
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(humans, [json!("one")]);

    let cut: Vec<Event> = turn(first, 0, "one").into_iter().take(2).collect();
    let mut stream = RunStream::new(first, None, Vec::new(), all_modes(), None);
    for event in &cut {
        stream.step(event);
    }
    let last: Vec<_> = stream.interrupted().iter().map(|e| e.event).collect();
    assert_eq!(last, ["end"]);
    assert!(stream.status().is_final());
}
