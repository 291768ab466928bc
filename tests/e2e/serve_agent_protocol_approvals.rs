//! The Agent Protocol's runs under `--approvals http`: a run that asks for an approval
//! shows it as the thread's interrupt (status `interrupted`, `interrupts`, the stream's
//! `__interrupt__`), and is answered at the approval endpoint of `/v1/responses` (the
//! protocol has none of its own), after which it goes on.

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, MockModel, Server};
use serde_json::json;

#[test]
fn an_approval_a_run_waits_for_is_the_threads_interrupt_until_answered() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell", "arguments": {
                "command": ["touch", "approved.txt"], "with_escalated_permissions": true,
                "justification": "outside the sandbox"
            } }] },
            { "text": "Done." }
        ]
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().to_str().unwrap();
    let server = Server::start(
        home.path(),
        &[
            "--cd",
            dir,
            "--approvals",
            "http",
            "-c",
            "approval_policy=\"on-request\"",
        ],
    );
    let thread = server.post("/threads", &json!({})).json()["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = server
        .post(
            &format!("/threads/{thread}/runs"),
            &json!({ "assistant_id": "rein", "input": { "messages": [{ "role": "user", "content": "touch it" }] } }),
        )
        .json();
    let run = run["run_id"].as_str().unwrap().to_owned();
    let mut events = server.stream(
        "GET",
        &format!("/threads/{thread}/runs/{run}/stream?stream_mode=updates"),
        None,
    );
    let asked = loop {
        let event = events
            .next_event()
            .expect("the stream ended before the approval");
        if event.data.get("__interrupt__").is_some() {
            break event.data["__interrupt__"][0].clone();
        }
    };
    assert_eq!(
        asked["value"]["command"],
        json!(["touch", "approved.txt"]),
        "{asked:#}"
    );
    let request = asked["id"].as_str().unwrap().to_owned();
    let waiting = server.get(&format!("/threads/{thread}")).json();
    assert_eq!(waiting["status"], "interrupted", "{waiting:#}");
    assert_eq!(waiting["interrupts"][&run][0]["id"], request.as_str());
    let state = server.get(&format!("/threads/{thread}/state")).json();
    assert_eq!(state["interrupts"][0]["id"], request.as_str());

    let response = format!("resp_{}{}", thread.replace('-', ""), run.replace('-', ""));
    let answered = server.post(
        &format!("/v1/responses/{response}/approvals/{request}"),
        &json!({ "decision": "approve" }),
    );
    assert_eq!(
        answered.status,
        200,
        "{}",
        String::from_utf8_lossy(&answered.body)
    );
    let joined = server
        .get(&format!("/threads/{thread}/runs/{run}/join"))
        .json();
    let last = joined["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "Done.", "{joined:#}");
    assert!(cwd.path().join("approved.txt").exists());
    let after = server.get(&format!("/threads/{thread}")).json();
    assert_eq!(after["status"], "idle");
    assert_eq!(after["interrupts"], json!({}));
}
