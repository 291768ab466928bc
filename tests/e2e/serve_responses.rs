//! `rein serve` over real HTTP on 127.0.0.1, against the scripted mock model: the Responses
//! API's plain, streamed and background responses, polling, replay from a sequence number,
//! cancel, continuing a thread, the `model` field, reasoning, and the docs' curl examples.
//! What the server refuses and survives is in serve_guard.rs.

use pretty_assertions::assert_eq;
use rein_test_support::serve::{hello_model, home_for, numbers, types, MockModel, Server, Sse};
use serde_json::{json, Value};

/// The response without what differs from run to run: ids and times.
fn normalized(mut response: Value) -> Value {
    response["id"] = json!("ID");
    response["created_at"] = json!(0);
    if let Some(output) = response["output"].as_array_mut() {
        for item in output {
            item["id"] = json!("ITEM");
        }
    }
    response
}

fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": "ID", "object": "response", "created_at": 0, "status": status, "error": null,
        "incomplete_details": null, "instructions": null, "model": "mock", "output": output,
        "parallel_tool_calls": true, "previous_response_id": null, "store": true,
        "tool_choice": "auto", "tools": [], "usage": usage, "metadata": {},
        "background": false,
    })
}

fn message(text: &str, status: &str) -> Value {
    json!({
        "type": "message", "id": "ITEM", "status": status, "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

#[test]
fn a_plain_response_is_answered_when_the_turn_ends_and_reads_back_the_same() {
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let reply = server.post("/v1/responses", &json!({ "input": "hi" }));
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let created = reply.json();
    let usage = created["usage"].clone();
    assert_eq!(
        normalized(created.clone()),
        response(
            "completed",
            json!([message("Hello there.", "completed")]),
            usage
        )
    );
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("resp_"), "{id}");
    let polled = server.get(&format!("/v1/responses/{id}"));
    assert_eq!(polled.status, 200);
    assert_eq!(polled.json(), created);
    let items = server
        .get(&format!("/v1/responses/{id}/input_items"))
        .json();
    assert_eq!(items["object"], "list");
    assert_eq!(items["has_more"], false);
    assert_eq!(items["data"].as_array().unwrap().len(), 1);
    assert_eq!(items["data"][0]["role"], "user");
    assert_eq!(
        items["data"][0]["content"],
        json!([{ "type": "input_text", "text": "hi" }])
    );
}

#[test]
fn a_streamed_response_sends_the_responses_events_and_replays_them_from_any_number() {
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let live = server
        .stream(
            "POST",
            "/v1/responses",
            Some(&json!({ "input": "hi", "stream": true })),
        )
        .collect_all();
    assert_eq!(
        types(&live),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for event in &live {
        assert_eq!(event.data["type"], event.event.as_str());
    }
    let live_numbers = numbers(&live);
    assert!(
        live_numbers.windows(2).all(|w| w[0] < w[1]),
        "{live_numbers:?}"
    );
    let deltas: String = live
        .iter()
        .filter(|e| e.event == "response.output_text.delta")
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello there.");
    let completed = &live.last().unwrap().data["response"];
    let id = completed["id"].as_str().unwrap();
    assert_eq!(
        server.get(&format!("/v1/responses/{id}")).json(),
        *completed
    );

    // Replayed from the rollout: the same events and numbers, but the deltas (whose text
    // the done events carry).
    let replayed = server
        .stream("GET", &format!("/v1/responses/{id}?stream=true"), None)
        .collect_all();
    let durable: Vec<&Sse> = live
        .iter()
        .filter(|e| e.event != "response.output_text.delta")
        .collect();
    assert_eq!(
        replayed.iter().map(|e| &e.data).collect::<Vec<_>>(),
        durable.iter().map(|e| &e.data).collect::<Vec<_>>()
    );
    // From a number: the response as it stood restated, then only what came after it.
    let after = live_numbers[3];
    let rest = server
        .stream(
            "GET",
            &format!("/v1/responses/{id}?stream=true&starting_after={after}"),
            None,
        )
        .collect_all();
    assert_eq!(
        types(&rest),
        [
            "response.created",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let restated = &rest[0].data["response"];
    assert_eq!(restated["status"], "in_progress");
    assert_eq!(
        restated["output"][0]["content"],
        json!([{ "type": "output_text", "text": "", "annotations": [] }])
    );
    assert!(numbers(&rest)[1..].iter().all(|n| *n > after));
}

#[test]
fn the_model_field_picks_the_configured_providers_model() {
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let other = server
        .post(
            "/v1/responses",
            &json!({ "input": "hi", "model": "other-model" }),
        )
        .json();
    assert_eq!(other["model"], "other-model", "{other:#}");
    assert_eq!(model.requests()[0]["model"], "other-model");
    let continued = server
        .post(
            "/v1/responses",
            &json!({ "input": "more", "previous_response_id": other["id"] }),
        )
        .json();
    assert_eq!(continued["model"], "other-model");
    let switched = server
        .post(
            "/v1/responses",
            &json!({ "input": "more", "previous_response_id": continued["id"], "model": "mock" }),
        )
        .json();
    assert_eq!(switched["model"], "mock");
    assert_eq!(model.requests()[2]["model"], "mock");
}

#[test]
fn previous_response_id_continues_the_thread() {
    let model =
        MockModel::start(json!({ "replies": [{ "text": "First." }], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let first = server
        .post("/v1/responses", &json!({ "input": "one" }))
        .json();
    let first_id = first["id"].as_str().unwrap();
    let second = server
        .post(
            "/v1/responses",
            &json!({ "input": [{ "role": "user", "content": "two" }], "previous_response_id": first_id }),
        )
        .json();
    assert_eq!(second["status"], "completed", "{second:#}");
    assert_eq!(second["previous_response_id"], first_id);
    assert_eq!(second["output"][0]["content"][0]["text"], "echo: two");
    // One thread: the second request to the model carries the first exchange.
    let requests = model.requests();
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("one") && last.contains("First."), "{last}");
    // The earlier response is no longer the latest: continuing it again is refused.
    let again = server.post(
        "/v1/responses",
        &json!({ "input": "three", "previous_response_id": first_id }),
    );
    assert_eq!(again.status, 400);
    assert_eq!(again.json()["error"]["param"], "previous_response_id");
}

#[test]
fn a_background_response_is_polled_refuses_a_second_turn_and_is_cancelled() {
    let model = MockModel::start(json!({
        "replies": [
            { "text": "First." },
            { "text": "thinking...", "deltas": 1, "fault": { "type": "hang" } }
        ]
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let first = server
        .post("/v1/responses", &json!({ "input": "one" }))
        .json();
    let started = server
        .post(
            "/v1/responses",
            &json!({ "input": "two", "background": true, "previous_response_id": first["id"] }),
        )
        .json();
    assert_eq!(started["status"], "in_progress", "{started:#}");
    let id = started["id"].as_str().unwrap();
    // Wait (on the stream) until the model is mid-answer.
    let mut events = server.stream("GET", &format!("/v1/responses/{id}?stream=true"), None);
    events.until("response.output_item.added");
    assert_eq!(
        server.get(&format!("/v1/responses/{id}")).json()["status"],
        "in_progress"
    );

    let busy = server.post(
        "/v1/responses",
        &json!({ "input": "three", "previous_response_id": id }),
    );
    assert_eq!(busy.status, 409, "{}", String::from_utf8_lossy(&busy.body));
    assert_eq!(busy.json()["error"]["type"], "invalid_request_error");

    let cancelled = server.call("POST", &format!("/v1/responses/{id}/cancel"), None);
    assert_eq!(cancelled.status, 200);
    let cancelled = cancelled.json();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled:#}");
    assert_eq!(cancelled["output"][0]["status"], "incomplete");
    // The stream that was open ends with the cancellation.
    let rest = events.collect_all();
    assert_eq!(rest.last().unwrap().data["response"]["status"], "cancelled");
    assert_eq!(server.get(&format!("/v1/responses/{id}")).json(), cancelled);
    // Cancelling again answers the same final object.
    let again = server.call("POST", &format!("/v1/responses/{id}/cancel"), None);
    assert_eq!(again.json(), cancelled);
}

/// The `curl` commands of docs/serve.md (backslash continuations joined), in order.
fn documented_curls() -> Vec<String> {
    let doc =
        std::fs::read_to_string(rein_test_support::test_setup::repo_root().join("docs/serve.md"))
            .unwrap();
    // The Agent Protocol's examples are serve_agent_protocol.rs's.
    let doc = doc
        .split("## LangGraph's Agent Protocol")
        .next()
        .unwrap_or_default();
    let mut commands = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        let line = line.trim();
        match current.as_mut() {
            Some(command) => command.push_str(line.trim_end_matches('\\')),
            None if line.starts_with("curl ") => {
                current = Some(line.trim_end_matches('\\').to_owned())
            }
            None => continue,
        }
        if !line.ends_with('\\') {
            commands.extend(current.take());
        }
    }
    commands
}

#[test]
fn the_curl_examples_of_the_docs_work() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let curls = documented_curls();
    assert!(curls.len() >= 5, "{curls:?}");
    let mut id = String::new();
    for command in curls {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .env("REIN_URL", &server.url)
            .env("REIN_TOKEN", &server.token)
            .env("ID", &id)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        if command.contains("chat/completions") && command.contains("stream") {
            assert!(text.ends_with("data: [DONE]\n\n"), "{command}: {text}");
            continue;
        }
        if command.contains("stream") {
            assert!(
                text.contains("event: response.completed"),
                "{command}: {text}"
            );
            continue;
        }
        let answer: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{command}: {e}: {text}"));
        assert!(answer["error"].is_null(), "{command}: {answer}");
        if id.is_empty() {
            id = answer["id"].as_str().unwrap().to_owned();
        }
    }
}

#[test]
fn reasoning_is_streamed_as_a_summary_and_kept_in_the_response() {
    let model = MockModel::start(json!({
        "replies": [{ "reasoning": "Think first.", "text": "Then answer.", "deltas": 1 }]
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let live = server
        .stream(
            "POST",
            "/v1/responses",
            Some(&json!({ "input": "hi", "stream": true })),
        )
        .collect_all();
    let reasoning: Vec<String> = types(&live)
        .into_iter()
        .filter(|t| t.contains("reasoning") || t == "response.output_item.added")
        .collect();
    assert_eq!(
        reasoning[..2],
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added"
        ]
    );
    assert!(
        reasoning.contains(&"response.reasoning_summary_text.done".to_owned()),
        "{reasoning:?}"
    );
    let done = &live.last().unwrap().data["response"];
    assert_eq!(done["output"][0]["type"], "reasoning", "{done:#}");
    assert_eq!(
        done["output"][0]["summary"],
        json!([{ "type": "summary_text", "text": "Think first." }])
    );
    assert_eq!(done["output"][1]["content"][0]["text"], "Then answer.");
    let id = done["id"].as_str().unwrap();
    assert_eq!(server.get(&format!("/v1/responses/{id}")).json(), *done);
}
