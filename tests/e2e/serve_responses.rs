//! `rein serve` over real HTTP on 127.0.0.1, against the scripted mock model: the Responses
//! API's plain, streamed and background responses, polling, replay from a sequence number,
//! cancel, continuing a thread, the error shapes, the admission rules, the concurrency
//! limit, declined approvals, and a kill -9 mid-turn.

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, MockModel, Server, Sse};
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
    })
}

fn message(text: &str, status: &str) -> Value {
    json!({
        "type": "message", "id": "ITEM", "status": status, "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

fn types(events: &[Sse]) -> Vec<String> {
    events.iter().map(|e| e.event.clone()).collect()
}

fn numbers(events: &[Sse]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e.data["sequence_number"].as_u64().unwrap())
        .collect()
}

fn hello_model() -> MockModel {
    MockModel::start(json!({
        "replies": [{ "text": "Hello there.", "deltas": 2 }],
        "when_exhausted": "echo"
    }))
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
    // From a number: only what came after it.
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
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert!(numbers(&rest).iter().all(|n| *n > after));
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

#[test]
fn bad_requests_get_openai_error_objects_with_their_status() {
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &["--max-body-bytes", "2000"]);
    let raw = |body: &[u8]| {
        server.send(
            "POST",
            "/v1/responses",
            &server.headers_with("x", None),
            Some(body),
        )
    };
    let bad_json = raw(b"{\"input\": ");
    assert_eq!(bad_json.status, 400);
    let error = &bad_json.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["param"], Value::Null);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{error}"
    );

    let unknown = raw(br#"{"input": "hi", "temperature": 0.5}"#);
    assert_eq!(unknown.status, 400);
    assert_eq!(unknown.json()["error"]["param"], "temperature");

    let not_user = raw(br#"{"input": [{"role": "assistant", "content": "x"}]}"#);
    assert_eq!(not_user.json()["error"]["param"], "input[0].role");

    let big = format!("{{\"input\": \"{}\"}}", "x".repeat(5000));
    let too_large = raw(big.as_bytes());
    assert_eq!(too_large.status, 413);
    assert_eq!(too_large.json()["error"]["code"], "body_too_large");

    // Nothing reached the model.
    assert_eq!(model.requests().len(), 0);
    let missing = server.get(&format!("/v1/responses/resp_{}", "0".repeat(64)));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["code"], "not_found");
    assert_eq!(server.get("/v1/responses/nonsense").status, 404);
    assert_eq!(server.get("/v1/nothing").status, 404);
    assert_eq!(server.call("DELETE", "/v1/responses", None).status, 405);
}

#[test]
fn requests_without_the_token_from_a_page_or_through_a_rebound_name_are_refused() {
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let token_file = home.path().join("serve-token");
    let mode = std::os::unix::fs::MetadataExt::mode(&std::fs::metadata(&token_file).unwrap());
    assert_eq!(mode & 0o777, 0o600);
    let body = br#"{"input": "hi"}"#;
    let cases: Vec<(Vec<(String, String)>, u16)> = vec![
        (server.headers_with("Authorization", None), 401),
        (
            server.headers_with("Authorization", Some("Bearer wrong")),
            401,
        ),
        (
            server.headers_with("Origin", Some("https://evil.example")),
            403,
        ),
        (server.headers_with("Origin", Some(&server.url)), 403),
        (server.headers_with("Host", Some("evil.example")), 403),
        (
            server.headers_with(
                "Host",
                Some(&format!("evil.example:{}", server.addr.port())),
            ),
            403,
        ),
        (server.headers_with("Host", None), 403),
    ];
    for (headers, status) in cases {
        let reply = server.send("POST", "/v1/responses", &headers, Some(body));
        assert_eq!(reply.status, status, "{headers:?}");
        assert!(reply.json()["error"]["message"].is_string());
    }
    // Nothing reached the model.
    assert_eq!(model.requests().len(), 0);
    let localhost = server.headers_with("Host", Some(&format!("localhost:{}", server.addr.port())));
    assert_eq!(
        server
            .send("POST", "/v1/responses", &localhost, Some(body))
            .status,
        200
    );
}

#[test]
fn more_runs_than_the_limit_get_429() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "...", "fault": { "type": "hang" } }]
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &["--max-runs", "1"]);
    let running = server
        .post(
            "/v1/responses",
            &json!({ "input": "one", "background": true }),
        )
        .json();
    let mut events = server.stream(
        "GET",
        &format!(
            "/v1/responses/{}?stream=true",
            running["id"].as_str().unwrap()
        ),
        None,
    );
    events.until("response.in_progress");
    let refused = server.post("/v1/responses", &json!({ "input": "two" }));
    assert_eq!(refused.status, 429);
    assert_eq!(refused.json()["error"]["type"], "rate_limit_error");
}

#[test]
fn a_command_that_needs_approval_is_declined_not_run() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell", "arguments": {
                "command": ["touch", "approved.txt"], "with_escalated_permissions": true,
                "justification": "outside the sandbox"
            } }] },
            { "text": "Could not." }
        ]
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().to_str().unwrap();
    let server = Server::start(
        home.path(),
        &["--cd", dir, "-c", "approval_policy=\"on-request\""],
    );
    let done = server
        .post("/v1/responses", &json!({ "input": "touch it" }))
        .json();
    assert_eq!(done["status"], "completed", "{done:#}");
    let call = &done["output"][0];
    assert_eq!(call["type"], "tool_call");
    assert_eq!(call["name"], "shell");
    assert_eq!(call["call_id"], "call_touch");
    assert_eq!(call["status"], "failed", "{call:#}");
    // The request is shown, with how it ended: declined, nobody being there to ask.
    let asked = &done["output"][1];
    assert_eq!(asked["type"], "approval_request", "{done:#}");
    assert_eq!(asked["call_id"], "call_touch");
    assert_eq!(asked["status"], "denied");
    assert_eq!(
        asked["request"]["command"],
        json!(["touch", "approved.txt"])
    );
    assert_eq!(done["output"][2]["content"][0]["text"], "Could not.");
    assert!(!cwd.path().join("approved.txt").exists());
}

#[test]
fn a_server_killed_mid_turn_reports_the_turn_incomplete_after_a_restart() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "half an answer", "deltas": 2, "fault": { "type": "hang" } }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let mut events = server.stream(
        "POST",
        "/v1/responses",
        Some(&json!({ "input": "hi", "stream": true })),
    );
    let seen = events.until("response.output_text.delta");
    let id = seen[0].data["response"]["id"].as_str().unwrap().to_owned();
    drop(events);
    server.kill9();

    let server = Server::start(home.path(), &[]);
    let polled = server.get(&format!("/v1/responses/{id}")).json();
    assert_eq!(polled["status"], "incomplete", "{polled:#}");
    assert_eq!(
        polled["incomplete_details"],
        json!({ "reason": "interrupted" })
    );
    assert_eq!(polled["output"][0]["status"], "in_progress");
    let replayed = server
        .stream("GET", &format!("/v1/responses/{id}?stream=true"), None)
        .collect_all();
    assert_eq!(
        types(&replayed),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.incomplete",
        ]
    );
    assert_eq!(replayed.last().unwrap().data["response"], polled);
    // The thread goes on from where it stopped.
    let next = server
        .post(
            "/v1/responses",
            &json!({ "input": "again", "previous_response_id": id }),
        )
        .json();
    assert_eq!(next["status"], "completed", "{next:#}");
    assert_eq!(next["output"][0]["content"][0]["text"], "echo: again");
}

/// The `curl` commands of docs/serve.md (backslash continuations joined), in order.
fn documented_curls() -> Vec<String> {
    let doc =
        std::fs::read_to_string(rein_test_support::test_setup::repo_root().join("docs/serve.md"))
            .unwrap();
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
fn a_served_thread_is_a_session_the_other_front_ends_list_and_continue() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &["--idle-unload-ms", "0"]);
    let first = server
        .post("/v1/responses", &json!({ "input": "one" }))
        .json();
    let id = first["id"].as_str().unwrap();
    let hex = &id[5..37];
    let thread = format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    );
    let listed = rein_test_support::mock_model::rein_ok(home.path(), &["sessions", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(&thread),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    // Once the server has unloaded the idle thread, `rein exec resume` may take it (until
    // then the server holds its rollout and exec is refused).
    let deadline = std::time::Instant::now() + rein_test_support::PATIENCE;
    let resumed = loop {
        let out = rein_test_support::mock_model::rein_in(
            home.path(),
            &["exec", "resume", &thread, "two", "--json"],
        )
        .output()
        .unwrap();
        if out.status.success() || std::time::Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(String::from_utf8_lossy(&resumed.stdout).contains("echo: two"));
    // The server sees exec's turn: the first response is no longer the thread's latest.
    let stale = server.post(
        "/v1/responses",
        &json!({ "input": "three", "previous_response_id": id }),
    );
    assert_eq!(
        stale.status,
        400,
        "{}",
        String::from_utf8_lossy(&stale.body)
    );
    assert_eq!(stale.json()["error"]["param"], "previous_response_id");
}

#[test]
fn sigterm_stops_the_server_cleanly_and_the_running_turn_is_recorded_cancelled() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "half an answer", "deltas": 2, "fault": { "type": "hang" } }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    // Streamed on the request itself, so no delta goes by unseen: the turn is mid-answer.
    let mut events = server.stream(
        "POST",
        "/v1/responses",
        Some(&json!({ "input": "hi", "stream": true })),
    );
    let seen = events.until("response.output_text.delta");
    let id = seen[0].data["response"]["id"].as_str().unwrap().to_owned();
    drop(events);
    assert!(server.terminate().success());

    let server = Server::start(home.path(), &[]);
    let polled = server.get(&format!("/v1/responses/{id}")).json();
    assert_eq!(polled["status"], "cancelled", "{polled:#}");
    assert_eq!(polled["output"][0]["status"], "incomplete");
    // What had streamed when the signal came is kept.
    let text = polled["output"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        !text.is_empty() && "half an answer".starts_with(text),
        "{text:?}"
    );
}

#[test]
fn with_http_approvals_the_turn_waits_for_the_clients_answer() {
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
    let started = server
        .post(
            "/v1/responses",
            &json!({ "input": "touch it", "background": true }),
        )
        .json();
    let id = started["id"].as_str().unwrap().to_owned();
    let mut events = server.stream("GET", &format!("/v1/responses/{id}?stream=true"), None);
    let request_id = loop {
        let event = events
            .next_event()
            .expect("the stream ended before the approval request");
        if event.event == "response.output_item.added"
            && event.data["item"]["type"] == "approval_request"
        {
            assert_eq!(event.data["item"]["status"], "pending");
            break event.data["item"]["id"].as_str().unwrap().to_owned();
        }
    };
    let waiting = server.get(&format!("/v1/responses/{id}")).json();
    assert_eq!(waiting["status"], "in_progress");
    assert_eq!(waiting["output"][1]["status"], "pending");
    assert!(!cwd.path().join("approved.txt").exists());

    let path = format!("/v1/responses/{id}/approvals/{request_id}");
    let bad = server.post(&path, &json!({ "decision": "maybe" }));
    assert_eq!(bad.status, 400);
    let unknown = server.post(
        &format!("/v1/responses/{id}/approvals/nope"),
        &json!({ "decision": "approve" }),
    );
    assert_eq!(unknown.status, 404);
    let answered = server.post(&path, &json!({ "decision": "approve" }));
    assert_eq!(
        answered.status,
        200,
        "{}",
        String::from_utf8_lossy(&answered.body)
    );
    assert_eq!(answered.json()["output"][1]["status"], "approved");
    let rest = events.until("response.completed");
    let done = &rest.last().unwrap().data["response"];
    assert_eq!(done["output"][0]["status"], "completed", "{done:#}");
    assert_eq!(done["output"][2]["content"][0]["text"], "Done.");
    assert!(cwd.path().join("approved.txt").exists());
    // Answered once: a second answer finds nothing open.
    assert_eq!(
        server.post(&path, &json!({ "decision": "deny" })).status,
        404
    );
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
