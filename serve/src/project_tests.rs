//! The projection as a pure fold: a live run (deltas and all) and its replay from what a
//! rollout keeps agree on every event they share, numbers included.

use pretty_assertions::assert_eq;
use rein_protocol::{
    Event, EventMsg, Item, ItemId, ItemKind, TaskKind, ThreadId, ThreadSettings, TurnId,
};
use serde_json::json;

use crate::ids::ResponseId;
use crate::project::{Projector, Status, StreamEvent};

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

/// A turn's events as the thread emits them, starting at `seq` 40.
fn turn(id: ResponseId) -> Vec<Event> {
    let item = ItemId::new();
    let msgs = vec![
        EventMsg::TurnStarted {
            kind: TaskKind::Regular,
            settings: settings(),
            recovered: false,
            output_schema: None,
        },
        EventMsg::ItemCompleted {
            item: Item::user_text("hi"),
        },
        EventMsg::ItemStarted {
            item_id: item.clone(),
            kind: ItemKind::AgentMessage,
        },
        EventMsg::AgentMessageDelta {
            item_id: item.clone(),
            delta: "Hel".into(),
        },
        EventMsg::AgentMessageDelta {
            item_id: item.clone(),
            delta: "lo".into(),
        },
        EventMsg::ItemCompleted {
            item: Item::AgentMessage {
                id: item,
                text: "Hello".into(),
                partial: false,
            },
        },
        EventMsg::TurnCompleted {
            last_agent_message: Some("Hello".into()),
        },
    ];
    msgs.into_iter()
        .zip(40..)
        .map(|(msg, seq)| Event {
            thread_id: id.thread,
            turn_id: Some(id.turn),
            seq,
            timestamp_ms: 1_000_000,
            msg,
        })
        .collect()
}

fn fold(id: ResponseId, events: &[Event]) -> (Projector, Vec<StreamEvent>) {
    let mut projector = Projector::new(id, None);
    let out = events.iter().flat_map(|e| projector.push(e)).collect();
    (projector, out)
}

#[test]
fn live_and_replayed_agree_but_for_the_deltas() {
    let id = ResponseId {
        thread: ThreadId::new(),
        turn: TurnId::new(),
    };
    let events = turn(id);
    let (live, live_out) = fold(id, &events);
    let stored: Vec<Event> = events.into_iter().filter(|e| !e.msg.is_delta()).collect();
    let (replayed, replayed_out) = fold(id, &stored);
    assert_eq!(live.status(), Status::Completed);
    assert_eq!(live.response(), replayed.response());
    let without_deltas: Vec<StreamEvent> = live_out
        .iter()
        .filter(|e| e.kind() != "response.output_text.delta")
        .cloned()
        .collect();
    assert_eq!(without_deltas, replayed_out);
    assert_eq!(live_out[0].sequence_number, 0);
    let deltas: Vec<u64> = live_out
        .iter()
        .filter(|e| e.kind() == "response.output_text.delta")
        .map(|e| e.sequence_number)
        .collect();
    // The deltas were the turn's 4th and 5th events.
    assert_eq!(deltas, [3 * 8, 4 * 8]);
    assert_eq!(live.response()["output"][0]["content"][0]["text"], "Hello");
    assert_eq!(
        live.input_items(),
        [
            json!({ "type": "message", "id": live.input_items()[0]["id"], "role": "user",
            "status": "completed", "content": [{ "type": "input_text", "text": "hi" }] })
        ]
    );
}

#[test]
fn a_turn_nothing_runs_any_more_ends_incomplete_after_its_last_event() {
    let id = ResponseId {
        thread: ThreadId::new(),
        turn: TurnId::new(),
    };
    let events: Vec<Event> = turn(id).into_iter().take(3).collect();
    let (mut cut, _) = fold(id, &events);
    assert_eq!(cut.status(), Status::InProgress);
    let last = cut.interrupted().unwrap();
    assert_eq!(last.kind(), "response.incomplete");
    assert_eq!(last.sequence_number, 3 * 8);
    assert_eq!(
        cut.response()["incomplete_details"],
        json!({ "reason": "interrupted" })
    );
    assert!(cut.interrupted().is_none());
    // Events of other turns are not this response's.
    let other = ResponseId {
        thread: id.thread,
        turn: TurnId::new(),
    };
    assert!(fold(other, &turn(id)).1.is_empty());
}
