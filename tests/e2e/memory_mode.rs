//! `thread/memoryMode/set` through a real `rein app-server`: a thread with memory disabled
//! is given no memories and offered no `remember`, also after a restart and
//! `thread/resume` (the mode is a rollout event the reducer folds); enabling it again brings
//! both back. The params are checked against Codex's `ThreadMemoryMode`.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::app_server::{with_codex_definitions, AppServer, MockModel};
use rein_test_support::exec::rein_ok;
use rein_test_support::memory::{memory_home, memory_items};
use rein_test_support::mock_model::tool_names;
use serde_json::{json, Value};

/// `thread/memoryMode/set` with `params` checked against codex-rs's
/// `ThreadMemoryModeSetParams` (its fields, and Codex's published `ThreadMemoryMode`).
fn set_mode(server: &mut AppServer, thread: &str, mode: &str) -> Value {
    let params = json!({ "threadId": thread, "mode": mode });
    let shape = with_codex_definitions(json!({
        "type": "object",
        "required": ["threadId", "mode"],
        "additionalProperties": false,
        "properties": {
            "threadId": { "type": "string" },
            "mode": { "$ref": "#/definitions/ThreadMemoryMode" }
        }
    }));
    assert!(shape.is_valid(&params), "not Codex's params: {params}");
    server.call("thread/memoryMode/set", params)
}

#[test]
fn a_thread_with_memory_disabled_neither_recalls_nor_offers_remember_also_after_resume() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = memory_home(&model, "auto");
    rein_ok(
        home.path(),
        &[
            "memory",
            "add",
            "--scope",
            "user",
            "Indent with tabs, never spaces",
        ],
    );
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let answer = set_mode(&mut server, &thread, "disabled");
    assert_eq!(answer["result"], json!({}), "{answer}");
    server.turn(&thread, "How should I indent? Tabs?");
    assert!(server.finish().success());

    // A new process: the mode comes back from the rollout.
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let resumed = server.call("thread/resume", json!({ "threadId": thread }));
    assert!(resumed.get("error").is_none(), "{resumed}");
    server.turn(&thread, "Tabs for indent, really?");
    let answer = set_mode(&mut server, &thread, "enabled");
    assert_eq!(answer["result"], json!({}), "{answer}");
    server.turn(&thread, "And how do I indent now? Tabs?");
    assert!(server.finish().success());

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for (n, request) in requests[..2].iter().enumerate() {
        assert!(memory_items(request).is_empty(), "request {n}: {request:#}");
        assert!(
            !tool_names(request).contains(&"remember".to_owned()),
            "request {n} offers remember: {:?}",
            tool_names(request)
        );
    }
    let items = memory_items(&requests[2]);
    assert_eq!(items.len(), 1, "{:#}", requests[2]);
    assert!(
        items[0].contains("Indent with tabs, never spaces"),
        "{items:?}"
    );
    assert!(tool_names(&requests[2]).contains(&"remember".to_owned()));
    // The rollout says when the mode changed, in order, for a person reading it.
    let shown =
        String::from_utf8(rein_ok(home.path(), &["sessions", "show", &thread]).stdout).unwrap();
    let modes: Vec<&str> = shown
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("memory: "))
        .collect();
    assert_eq!(
        modes,
        vec!["memory: disabled", "memory: enabled"],
        "{shown}"
    );
}

#[test]
fn a_bad_mode_or_an_unknown_thread_is_a_clear_error() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = memory_home(&model, "auto");
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({}));
    let bad = server.call(
        "thread/memoryMode/set",
        json!({ "threadId": thread, "mode": "off" }),
    );
    assert_eq!(bad["error"]["code"], json!(-32602), "{bad}");
    let unknown = server.call(
        "thread/memoryMode/set",
        json!({ "threadId": "0193a5b2-0000-7000-8000-000000000000", "mode": "disabled" }),
    );
    assert_eq!(unknown["error"]["code"], json!(-32600), "{unknown}");
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(message.contains("thread not found"), "{unknown}");
    assert!(server.finish().success());
}
