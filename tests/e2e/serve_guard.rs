//! What `rein serve` refuses and what it survives, over real HTTP on 127.0.0.1: OpenAI's
//! error shapes and statuses, requests without the token, from a page or through a rebound
//! name, the concurrency limit, approvals (declined, or answered over HTTP), kill -9 and
//! SIGTERM mid-turn, and a served thread continued by `rein exec resume`.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use rein_test_support::serve::{hello_model, home_for, types, MockModel, Server};
use serde_json::{json, Value};

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
    // then the server holds its rollout and exec is refused): wait for the server to let go
    // of its claim, the `<rollout>.lock` file.
    let claim = PathBuf::from(format!(
        "{}.lock",
        rein_test_support::replay::rollout_of(home.path(), &thread).display()
    ));
    assert!(
        rein_test_support::fs_events::wait_until_files_show(
            &home.path().join("sessions"),
            rein_test_support::PATIENCE,
            || !claim.exists(),
        ),
        "the server never let go of {}",
        claim.display()
    );
    let resumed = rein_test_support::mock_model::rein_in(
        home.path(),
        &["exec", "resume", &thread, "two", "--json"],
    )
    .output()
    .unwrap();
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
fn a_stream_reader_that_stops_reading_holds_back_neither_its_run_nor_others() {
    let long = "word ".repeat(40_000);
    let model = MockModel::start(json!({
        "replies": [{ "text": long, "deltas": 4000 }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    // Opened, and never read past its status line.
    let mut stalled = server.stream(
        "POST",
        "/v1/responses",
        Some(&json!({ "input": "long", "stream": true })),
    );
    let first = stalled.next_event().unwrap();
    let id = first.data["response"]["id"].as_str().unwrap().to_owned();
    let other = server
        .post("/v1/responses", &json!({ "input": "short" }))
        .json();
    assert_eq!(other["status"], "completed");
    // The stalled stream's run ends all the same: another reader sees it to the end.
    let seen = server
        .stream("GET", &format!("/v1/responses/{id}?stream=true"), None)
        .until("response.completed");
    assert_eq!(seen.last().unwrap().data["response"]["status"], "completed");
    drop(stalled);
}

#[test]
fn a_client_that_sends_its_request_too_slowly_is_cut_off() {
    use std::io::{Read, Write};
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &["--read-timeout-ms", "300"]);
    // Headers that never end: the connection is closed.
    let mut slow = std::net::TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(rein_test_support::PATIENCE))
        .unwrap();
    slow.write_all(b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        rest.is_empty() || String::from_utf8_lossy(&rest).starts_with("HTTP/1.1 408"),
        "{}",
        String::from_utf8_lossy(&rest)
    );
    // A body that never arrives: 400, and nothing reached the model.
    let mut stalled = std::net::TcpStream::connect(server.addr).unwrap();
    stalled
        .set_read_timeout(Some(rein_test_support::PATIENCE))
        .unwrap();
    let head = format!(
        "POST /v1/responses HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
         Content-Length: 100\r\nConnection: close\r\n\r\n{{\"input\"",
        server.addr, server.token
    );
    stalled.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stalled.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("took too long"), "{answer}");
    assert_eq!(model.requests().len(), 0);
    // Others are served meanwhile and after.
    assert_eq!(
        server
            .post("/v1/responses", &json!({ "input": "hi" }))
            .status,
        200
    );
}

#[test]
fn a_burst_of_starts_gets_no_more_runs_than_the_limit() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "...", "fault": { "type": "hang" } }]
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &["--max-runs", "2"]);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let posts: Vec<_> = (0..8)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    let body = json!({ "input": format!("run {i}"), "background": true });
                    server.post("/v1/responses", &body).status
                })
            })
            .collect();
        posts.into_iter().map(|p| p.join().unwrap()).collect()
    });
    let accepted = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((accepted, refused), (2, 6), "{statuses:?}");
}
