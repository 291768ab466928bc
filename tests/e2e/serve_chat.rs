//! `/v1/chat/completions` on `rein serve`, over real HTTP on 127.0.0.1 against the scripted
//! mock model: a conversation the server answered continues its thread (after a kill -9
//! too: the key is recorded before the answer), so the model is sent the earlier turn as
//! the thread's history; a history rein did not write starts a new thread told of it in
//! its instructions; a chat's thread is an ordinary one; a failed turn is the API's error.
//! (The official SDKs' view is `serve_openai_py` / `serve_openai_js`.)

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, MockModel, Server};
use serde_json::{json, Value};

/// The rein thread of a completion id (`chatcmpl-` + the thread's and the turn's hex).
fn thread_of(completion: &Value) -> String {
    let id = completion["id"].as_str().unwrap();
    id.strip_prefix("chatcmpl-").unwrap()[..32].to_owned()
}

/// The role and text of each message the model was sent in `request`.
fn sent(request: &Value) -> Vec<(String, String)> {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message")
        .map(|i| {
            let text: Vec<&str> = i["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["text"].as_str())
                .collect();
            (i["role"].as_str().unwrap().to_owned(), text.concat())
        })
        .collect()
}

fn pair(role: &str, text: &str) -> (String, String) {
    (role.to_owned(), text.to_owned())
}

#[test]
fn a_chat_continues_its_thread_after_a_kill_9_and_a_foreign_history_starts_one_told_of_it() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "Hello there.", "deltas": 2 }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let mut messages = vec![
        json!({ "role": "system", "content": "Be brief." }),
        json!({ "role": "user", "content": "hi" }),
    ];
    let first = server
        .post(
            "/v1/chat/completions",
            &json!({ "model": "mock", "messages": messages }),
        )
        .ok();
    let expected = json!({
        "id": first["id"], "object": "chat.completion", "created": first["created"],
        "model": "mock",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant", "content": "Hello there.", "refusal": null,
                "annotations": []
            },
            "logprobs": null, "finish_reason": "stop"
        }],
        "usage": first["usage"], "system_fingerprint": null
    });
    assert_eq!(first, expected);
    assert!(first["usage"]["total_tokens"].is_u64(), "{first:#}");
    // An ordinary thread: the Agent Protocol's view of it is there.
    let thread = thread_of(&first);
    let dashed = format!(
        "{}-{}-{}-{}-{}",
        &thread[..8],
        &thread[8..12],
        &thread[12..16],
        &thread[16..20],
        &thread[20..]
    );
    assert_eq!(server.get(&format!("/threads/{dashed}")).status, 200);
    server.kill9();

    let server = Server::start(home.path(), &[]);
    messages.push(json!({ "role": "assistant", "content": "Hello there." }));
    messages.push(json!({ "role": "user", "content": "and you?" }));
    let second = server
        .post(
            "/v1/chat/completions",
            &json!({ "model": "mock", "messages": messages }),
        )
        .ok();
    assert_eq!(second["choices"][0]["message"]["content"], "echo: and you?");
    assert_eq!(thread_of(&second), thread);
    // The thread's history, not a retelling: the instructions are the system message.
    let requests = model.requests();
    let continued = requests.last().unwrap();
    assert_eq!(
        sent(continued),
        [
            pair("user", "hi"),
            pair("assistant", "Hello there."),
            pair("user", "and you?")
        ]
    );
    assert!(
        !continued["instructions"]
            .as_str()
            .unwrap_or_default()
            .contains("The conversation so far"),
        "{continued:#}"
    );

    // The same history with the assistant's words changed: not rein's, so a new thread.
    messages[2] = json!({ "role": "assistant", "content": "Hi!" });
    let foreign = server
        .post(
            "/v1/chat/completions",
            &json!({ "model": "mock", "messages": messages }),
        )
        .ok();
    assert_ne!(thread_of(&foreign), thread);
    let requests = model.requests();
    let told = requests.last().unwrap();
    assert_eq!(sent(told), [pair("user", "and you?")]);
    let instructions = told["instructions"].as_str().unwrap();
    assert!(
        instructions.ends_with(
            "Be brief.\n\nThe conversation so far, as the client sent it:\n\n[user]\nhi\n\n[assistant]\nHi!"
        ),
        "{instructions}"
    );
}

#[test]
fn a_failed_turn_is_the_apis_error_plain_and_streamed() {
    let model = MockModel::start(json!({
        "replies": [
            { "text": "x", "fault": { "type": "http_error", "status": 400, "message": "no such thing" } },
            { "text": "x", "fault": { "type": "http_error", "status": 400, "message": "no such thing" } }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let body = json!({ "model": "mock", "messages": [{ "role": "user", "content": "hi" }] });
    let failed = server.post("/v1/chat/completions", &body);
    assert_eq!(
        failed.status,
        500,
        "{}",
        String::from_utf8_lossy(&failed.body)
    );
    let error = failed.json();
    assert_eq!(error["error"]["type"], "server_error");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no such thing"),
        "{error:#}"
    );

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let reply = server.post("/v1/chat/completions", &streamed);
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    let datas: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let last = datas.last().unwrap();
    assert_eq!(last["error"]["type"], "server_error", "{text}");
    assert!(!text.contains("[DONE]"), "{text}");
}
