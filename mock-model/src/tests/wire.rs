//! The mock model server seen by a plain HTTP client: the exact event sequences of both
//! wire formats, the fault responses, the models list and the request log.
#![allow(clippy::unwrap_used)]

use crate::{load_script, serve, MockServer};
use pretty_assertions::assert_eq;
use rein_protocol::script::{Fault, Script, ScriptedReply, WhenExhausted};
use serde_json::{json, Value};

async fn start(replies: Vec<ScriptedReply>, when_exhausted: WhenExhausted) -> MockServer {
    serve(
        Script {
            replies,
            when_exhausted,
            asides: Vec::new(),
        },
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .unwrap()
}

async fn post(server: &MockServer, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{path}", server.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// (event name, data) pairs of a complete SSE body, which this server always writes as
/// optional `event:` line, one `data:` line, blank line.
fn events(body: &str) -> Vec<(String, String)> {
    body.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = v.into();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = v.into();
                }
            }
            (name, data)
        })
        .collect()
}

#[tokio::test]
async fn responses_stream_has_the_openai_event_sequence() {
    let mut reply = ScriptedReply::text("Hi there")
        .with_deltas(2)
        .with_tool_call("shell", json!({"command": ["ls"]}));
    reply.reasoning = Some("hmm".into());
    let server = start(vec![reply], WhenExhausted::Error).await;
    let response = post(&server, "/responses", json!({"model": "m", "input": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let evs = events(&response.text().await.unwrap());
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let data: Vec<Value> = evs
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    for (i, (name, _)) in evs.iter().enumerate() {
        assert_eq!(data[i]["type"], json!(name));
        assert_eq!(data[i]["sequence_number"], json!(i));
    }
    assert_eq!(data[4]["summary_index"], json!(0));
    assert_eq!(data[10]["delta"], json!("Hi t"));
    assert_eq!(
        data[18]["item"],
        json!({"id": "fc_call_0_0", "type": "function_call", "status": "completed",
               "call_id": "call_0_0", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"})
    );
    let usage = &data[19]["response"]["usage"];
    assert!(usage["input_tokens_details"]["cached_tokens"].is_u64());
    assert!(usage["output_tokens_details"]["reasoning_tokens"].is_u64());
    assert_eq!(data[19]["response"]["output"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn chat_stream_splits_tool_arguments_and_ends_with_done() {
    let reply = ScriptedReply::tool_call("shell", json!({"command": ["pwd"]}));
    let server = start(vec![reply], WhenExhausted::Error).await;
    let response = post(
        &server,
        "/chat/completions",
        json!({"model": "m", "messages": []}),
    )
    .await;
    let evs = events(&response.text().await.unwrap());
    assert_eq!(evs.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = evs[..evs.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, r#"{"command":["pwd"]}"#);
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| f.is_string())
        .collect();
    assert_eq!(finish, vec![&json!("tool_calls")]);
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["prompt_tokens"].is_u64());
}

#[tokio::test]
async fn faults_answer_like_openai() {
    let server = start(
        vec![
            ScriptedReply::default().with_fault(Fault::RateLimited {
                retry_after_ms: 2500,
            }),
            ScriptedReply::default().with_fault(Fault::ContextWindowExceeded),
            ScriptedReply::default().with_fault(Fault::ContextWindowExceeded),
            ScriptedReply::default().with_fault(Fault::HttpError {
                status: 503,
                message: None,
            }),
        ],
        WhenExhausted::Error,
    )
    .await;
    let limited = post(&server, "/responses", json!({})).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "3");
    assert_eq!(limited.headers()["retry-after-ms"], "2500");
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("try again in 2.500s"));

    let responses_cw = post(&server, "/responses", json!({})).await;
    assert_eq!(responses_cw.status(), 200);
    let evs = events(&responses_cw.text().await.unwrap());
    let failed: Value = serde_json::from_str(&evs.last().unwrap().1).unwrap();
    assert_eq!(failed["type"], "response.failed");
    assert_eq!(
        failed["response"]["error"]["code"],
        "context_length_exceeded"
    );

    let chat_cw = post(&server, "/chat/completions", json!({})).await;
    assert_eq!(chat_cw.status(), 400);
    let body: Value = chat_cw.json().await.unwrap();
    assert_eq!(body["error"]["code"], "context_length_exceeded");

    let unavailable = post(&server, "/responses", json!({})).await;
    assert_eq!(unavailable.status(), 503);

    // The script is exhausted and says so.
    let exhausted = post(&server, "/responses", json!({})).await;
    assert_eq!(exhausted.status(), 400);
}

#[tokio::test]
async fn echo_answers_the_last_user_message() {
    let server = start(Vec::new(), WhenExhausted::Echo).await;
    let response = post(
        &server,
        "/chat/completions",
        json!({"model": "m", "messages": [{"role": "user", "content": "ping"}]}),
    )
    .await;
    let text: String = events(&response.text().await.unwrap())
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "echo: ping");
}

#[tokio::test]
async fn models_list_unknown_paths_and_bad_bodies() {
    let server = start(vec![ScriptedReply::text("x")], WhenExhausted::Error).await;
    let http = reqwest::Client::new();
    let models: Value = http
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "mock-model");
    let missing = http
        .post(format!("{}/nothing", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let bad = http
        .post(format!("{}/responses", server.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[2].body, json!("not json"));
}

#[tokio::test]
async fn request_log_has_one_line_per_request_and_no_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let server = serve(
        Script::default(),
        "127.0.0.1:0".parse().unwrap(),
        Some(log.clone()),
    )
    .await
    .unwrap();
    for n in 0..3 {
        reqwest::Client::new()
            .post(format!("{}/responses", server.base_url()))
            .bearer_auth("sk-do-not-log")
            .json(&json!({"n": n}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("sk-do-not-log"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        (0..3)
            .map(|n| json!({"method": "POST", "path": "/v1/responses", "body": {"n": n}}))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn scripts_load_from_files_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"replies":[{"text":"hi"}]}"#).unwrap();
    assert_eq!(load_script(&good).unwrap().replies.len(), 1);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"replies":[{"fault":{"type":"nope"}}]}"#).unwrap();
    let err = load_script(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.json"), "{err}");
    let err = load_script(&dir.path().join("missing.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.json"), "{err}");
}
