//! A WebSocket client that stops reading is cut off instead of holding back the other
//! subscribers of its thread: they get every notification, in order, and it can come back
//! with `thread/resume`.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::ws_client;

use std::io::ErrorKind;
use std::time::Duration;

use serde_json::{json, Value};
use support::{home_for, method, CodexSchema, MockModel};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::Message;
use ws_client::{serve, Client};

/// Deltas in the turn, each `SEGMENT` characters long: 12 MB, far more than a small
/// outbound queue and the loopback socket buffers of a client that does not read can hold
/// (Linux lets a socket's send buffer grow to 4 MB by default).
const DELTAS: usize = 3000;
const SEGMENT: usize = 4096;

/// How long any one read may wait before the test fails: the reads wait on the server's
/// frames (never on time), and a debug server streaming and then resuming 12 MB on a loaded
/// machine can go quiet for longer than the other tests' patience. A failure guard only.
const GUARD: Duration = Duration::from_secs(300);

/// Delta `i`: its number, then filler, so order and completeness can be checked.
fn segment(i: usize) -> String {
    let mut s = format!("<{i:06}>");
    s.push_str(&"x".repeat(SEGMENT - s.len()));
    s
}

#[test]
fn a_client_that_stops_reading_is_disconnected_and_the_others_miss_nothing() {
    let text: String = (0..DELTAS).map(segment).collect();
    let model = MockModel::start(json!({
        "replies": [{ "text": text, "deltas": DELTAS, "delay_ms": 1 }]
    }));
    let home = home_for(&model);
    let (_server, url) = serve(home.path(), &["--outbound-queue", "64"]);
    let schema = CodexSchema::load();
    let mut reading = Client::connect(&url, None).unwrap();
    let mut stalled = Client::connect_with_small_buffer(&url, 4096);
    reading.set_patience(GUARD);
    stalled.set_patience(GUARD);
    reading.initialize(schema);
    stalled.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let started = reading.call(schema, "thread/start", json!({ "cwd": cwd.path() }));
    let thread = started["result"]["thread"]["id"].clone();
    let joined = stalled.call(schema, "thread/resume", json!({ "threadId": thread }));
    assert_eq!(joined["result"]["thread"]["id"], thread, "{joined:#}");

    // From here on `stalled` reads nothing until the turn is over. `reading` reads as fast
    // as it can, and checks the messages against the schema only once the turn is over, so
    // that a slow check on a loaded machine cannot make it fall behind and be cut off too.
    let turn_request = reading.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "stream a lot" }] }),
    );
    let mut seen = Vec::new();
    loop {
        let m = reading.recv_unchecked();
        let last = method(&m) == "turn/completed";
        seen.push(m);
        if last {
            break;
        }
    }
    for m in &seen {
        reading.check(schema, m);
    }
    let turn = seen.iter().find(|m| m["id"] == turn_request).unwrap();
    assert!(turn.get("result").is_some(), "{turn:#}");
    let deltas: Vec<&str> = seen
        .iter()
        .filter(|m| method(m) == "item/agentMessage/delta")
        .map(|m| m["params"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        deltas.len(),
        DELTAS,
        "every delta reaches the reading client"
    );
    for (i, delta) in deltas.iter().enumerate() {
        assert!(*delta == segment(i), "delta {i} is out of order or altered");
    }
    let done = seen.last().unwrap();
    assert_eq!(done["params"]["turn"]["status"], "completed");

    // The stalled client finds what was buffered for it, then the server's close: a close
    // frame saying why if it reads within the server's grace, else the end of the stream.
    let mut received = Vec::new();
    let ended = loop {
        match stalled.ws.read() {
            Ok(Message::Text(text)) => {
                received.push(serde_json::from_str::<Value>(text.as_str()).unwrap());
            }
            Ok(Message::Close(frame)) => break frame.ok_or("a close frame without a reason"),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                panic!("the server never closed the stalled connection")
            }
            Err(e) => break Err(if_reset(e)),
        }
    };
    if let Ok(close) = &ended {
        assert_eq!(close.code, CloseCode::Policy);
        assert_eq!(close.reason.as_str(), "client fell behind");
    } else {
        eprintln!("the stalled client missed its close frame: {ended:?}");
    }
    assert!(
        received.len() < DELTAS,
        "the stalled client was cut off mid-turn, after {} messages",
        received.len()
    );
    assert!(!received.iter().any(|m| method(m) == "turn/completed"));

    // Nothing durable was lost: a new connection resumes the thread and sees the whole turn.
    let mut back = Client::connect(&url, None).unwrap();
    back.set_patience(GUARD);
    back.initialize(schema);
    let resumed = back.call(schema, "thread/resume", json!({ "threadId": thread }));
    let turns = &resumed["result"]["thread"]["turns"];
    assert_eq!(turns[0]["status"], "completed", "{turns:#}");
    assert_eq!(turns[0]["items"][1]["text"].as_str(), Some(text.as_str()));
}

/// A connection the server dropped before its close frame could be written.
fn if_reset(e: tungstenite::Error) -> &'static str {
    match e {
        tungstenite::Error::Protocol(_)
        | tungstenite::Error::ConnectionClosed
        | tungstenite::Error::AlreadyClosed
        | tungstenite::Error::Io(_) => "the stream ended without a close frame",
        other => panic!("unexpected error on the stalled connection: {other}"),
    }
}
