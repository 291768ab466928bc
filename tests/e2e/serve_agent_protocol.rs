//! LangGraph's Agent Protocol on `rein serve`, over raw HTTP on 127.0.0.1 against the
//! scripted mock model: assistants, threads (create, get, search, state, delete), runs in
//! the background, streamed and waited for, join and join-stream resumed with
//! `Last-Event-ID` after a dropped connection, cancel, each `multitask_strategy` for a
//! second run on a busy thread, a server killed mid-run, refusals, and the docs' curl
//! examples. The official client's run of the same is serve_langgraph_py.rs.

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, types, Events, MockModel, Server, Sse};
use serde_json::{json, Value};

fn input(text: &str) -> Value {
    json!({ "messages": [{ "role": "user", "content": text }] })
}

fn new_thread(server: &Server) -> String {
    let reply = server.post("/threads", &json!({}));
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()["thread_id"].as_str().unwrap().to_owned()
}

fn start_run(server: &Server, thread: &str, text: &str, strategy: &str) -> Value {
    let reply = server.post(
        &format!("/threads/{thread}/runs"),
        &json!({ "assistant_id": "rein", "input": input(text), "multitask_strategy": strategy }),
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

fn run_status(server: &Server, thread: &str, run: &str) -> String {
    let reply = server.get(&format!("/threads/{thread}/runs/{run}"));
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()["status"].as_str().unwrap().to_owned()
}

/// Follow the run's stream until the model has begun its answer (the message's first,
/// stored chunk), so the run is mid-answer, waiting on a hanging reply.
fn until_answering(server: &Server, thread: &str, run: &str) -> Events {
    let mut events = server.stream(
        "GET",
        &format!("/threads/{thread}/runs/{run}/stream?stream_mode=messages-tuple"),
        None,
    );
    events.until("messages");
    events
}

/// The `(type, content)` of a values event's messages.
fn said(values: &Value) -> Vec<(String, String)> {
    values["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pair(kind: &str, text: &str) -> (String, String) {
    (kind.to_owned(), text.to_owned())
}

#[test]
fn a_thread_runs_in_the_background_and_its_runs_state_and_listing_agree() {
    let model =
        MockModel::start(json!({ "replies": [{ "text": "First." }], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let assistants = server.post("/assistants/search", &json!({})).json();
    assert_eq!(assistants[0]["assistant_id"], "rein", "{assistants:#}");
    assert_eq!(server.get("/assistants/rein").json()["graph_id"], "rein");
    assert_eq!(server.get("/assistants/other").status, 404);

    let thread = new_thread(&server);
    let created = server.get(&format!("/threads/{thread}")).json();
    assert_eq!(created["status"], "idle");
    assert_eq!(created["values"], json!({ "messages": [] }));

    let run = start_run(&server, &thread, "one", "reject");
    let run_id = run["run_id"].as_str().unwrap();
    assert_eq!(run["thread_id"], thread.as_str());
    assert!(
        ["pending", "running", "success"].contains(&run["status"].as_str().unwrap()),
        "{run:#}"
    );
    let joined = server
        .get(&format!("/threads/{thread}/runs/{run_id}/join"))
        .json();
    assert_eq!(said(&joined), [pair("human", "one"), pair("ai", "First.")]);
    assert_eq!(run_status(&server, &thread, run_id), "success");

    let waited = server
        .post(
            &format!("/threads/{thread}/runs/wait"),
            &json!({ "assistant_id": "rein", "input": input("two") }),
        )
        .json();
    assert_eq!(
        said(&waited)[2..],
        [pair("human", "two"), pair("ai", "echo: two")]
    );
    let runs = server.get(&format!("/threads/{thread}/runs")).json();
    let statuses: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["success", "success"]);
    assert_eq!(runs[1]["run_id"], run_id, "newest first: {runs:#}");

    let state = server.get(&format!("/threads/{thread}/state")).json();
    assert_eq!(state["values"], waited);
    assert_eq!(state["next"], json!([]));
    // The history: the state after each run, newest first, each run a checkpoint.
    let history = server
        .post(
            &format!("/threads/{thread}/history"),
            &json!({ "limit": 5 }),
        )
        .json();
    assert_eq!(history.as_array().unwrap().len(), 2, "{history:#}");
    assert_eq!(history[0]["values"], waited);
    assert_eq!(said(&history[1]["values"]), said(&joined));
    assert_eq!(history[0]["parent_checkpoint"], history[1]["checkpoint"]);
    assert_eq!(history[1]["checkpoint"]["checkpoint_id"], run_id);
    // The same turn is a response of /v1/responses: one thread, two front doors.
    let response_id = format!(
        "resp_{}{}",
        thread.replace('-', ""),
        run_id.replace('-', "")
    );
    let response = server.get(&format!("/v1/responses/{response_id}")).json();
    assert_eq!(response["output"][0]["content"][0]["text"], "First.");

    let found = server
        .post("/threads/search", &json!({ "limit": 5 }))
        .json();
    assert!(
        found
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["thread_id"] == thread.as_str()),
        "{found:#}"
    );
    let none = server
        .post("/threads/search", &json!({ "metadata": { "user": "x" } }))
        .json();
    assert_eq!(none, json!([]));
    let deleted = server.call("DELETE", &format!("/threads/{thread}"), None);
    assert_eq!(deleted.status, 204);
    assert_eq!(server.get(&format!("/threads/{thread}")).status, 404);
    let again = server.post(
        &format!("/threads/{thread}/runs"),
        &json!({ "assistant_id": "rein", "input": input("x") }),
    );
    assert_eq!(again.status, 404);
    let listed = server.post("/threads/search", &json!({})).json();
    assert!(
        !listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["thread_id"] == thread.as_str()),
        "{listed:#}"
    );
}

#[test]
fn a_streamed_run_is_joined_again_after_a_dropped_connection_from_its_last_event_id() {
    let model = MockModel::start(json!({
        "replies": [
            { "text": "Streamed.", "deltas": 2 },
            { "text": "thinking", "deltas": 1, "fault": { "type": "hang" } }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let thread = new_thread(&server);
    let live = server
        .stream(
            "POST",
            &format!("/threads/{thread}/runs/stream"),
            Some(&json!({ "assistant_id": "rein", "input": input("hi"), "stream_mode": ["values", "updates"] })),
        )
        .collect_all();
    assert_eq!(
        types(&live),
        ["metadata", "values", "updates", "values", "updates", "end"]
    );
    let run = live[0].data["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        said(&live[3].data),
        [pair("human", "hi"), pair("ai", "Streamed.")]
    );
    assert_eq!(live[4].data["agent"]["messages"][0]["content"], "Streamed.");
    let ids: Vec<u64> = live
        .iter()
        .map(|e| e.id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Joined again later, from an id: exactly the events after it, as they were sent.
    let last = ids[1].to_string();
    let rest = server
        .stream_with(
            "GET",
            &format!("/threads/{thread}/runs/{run}/stream?stream_mode=values&stream_mode=updates"),
            &[("Last-Event-ID", &last)],
            None,
        )
        .collect_all();
    let data = |events: &[Sse]| -> Vec<(String, Value, Option<String>)> {
        events
            .iter()
            .map(|e| (e.event.clone(), e.data.clone(), e.id.clone()))
            .collect()
    };
    assert_eq!(data(&rest), data(&live[2..]));

    // A run mid-answer whose client drops the connection goes on; joined from the last
    // event the client saw, it sends what came after, to the end.
    let hanging = start_run(&server, &thread, "more", "reject");
    let hanging = hanging["run_id"].as_str().unwrap().to_owned();
    let mut first = server.stream(
        "GET",
        &format!("/threads/{thread}/runs/{hanging}/stream?stream_mode=messages-tuple"),
        None,
    );
    let seen = first.until("messages");
    let last_seen = seen.last().unwrap().id.clone().unwrap();
    drop(first);
    assert_eq!(run_status(&server, &thread, &hanging), "running");
    let resumed = server.stream_with(
        "GET",
        &format!(
            "/threads/{thread}/runs/{hanging}/stream?stream_mode=messages-tuple&stream_mode=values"
        ),
        &[("Last-Event-ID", &last_seen)],
        None,
    );
    let cancelled = server.call(
        "POST",
        &format!("/threads/{thread}/runs/{hanging}/cancel?wait=1&action=interrupt"),
        None,
    );
    assert_eq!(cancelled.status, 200);
    assert_eq!(cancelled.json()["status"], "interrupted");
    let after = resumed.collect_all();
    assert!(
        after
            .iter()
            .all(|e| e.id.as_deref().unwrap().parse::<u64>().unwrap()
                > last_seen.parse::<u64>().unwrap()),
        "{after:?}"
    );
    assert_eq!(after.last().unwrap().event, "end", "{after:?}");
    let values = after.iter().rev().find(|e| e.event == "values").unwrap();
    assert_eq!(
        said(&values.data).last(),
        Some(&pair("ai", "thinking")),
        "the partial answer is kept"
    );
    assert_eq!(run_status(&server, &thread, &hanging), "interrupted");
}

#[test]
fn a_second_run_on_a_busy_thread_follows_its_multitask_strategy() {
    let hang = json!({ "text": "working", "deltas": 1, "fault": { "type": "hang" } });
    let model = MockModel::start(json!({
        "replies": [hang, hang, hang, { "text": "Queued one." }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let thread = new_thread(&server);
    let runs = format!("/threads/{thread}/runs");
    let first = start_run(&server, &thread, "first", "reject");
    let first = first["run_id"].as_str().unwrap().to_owned();
    until_answering(&server, &thread, &first);

    // reject: 409, in the API's error shape; nothing changes.
    let refused = server.post(
        &runs,
        &json!({ "assistant_id": "rein", "input": input("no"), "multitask_strategy": "reject" }),
    );
    assert_eq!(
        refused.status,
        409,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert_eq!(refused.json()["error"]["code"], "conflict");
    assert_eq!(run_status(&server, &thread, &first), "running");

    // interrupt: the running run stops (kept, interrupted), the new one starts.
    let second = start_run(&server, &thread, "second", "interrupt");
    let second = second["run_id"].as_str().unwrap().to_owned();
    assert_eq!(run_status(&server, &thread, &first), "interrupted");
    until_answering(&server, &thread, &second);

    // rollback: the running run stops and is dropped from the thread.
    let third = start_run(&server, &thread, "third", "rollback");
    let third = third["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        server.get(&format!("{runs}/{second}")).status,
        404,
        "a rolled-back run is gone"
    );
    until_answering(&server, &thread, &third);

    // enqueue: the new run waits, pending, until the running one ends.
    let fourth = start_run(&server, &thread, "fourth", "enqueue");
    assert_eq!(fourth["status"], "pending", "{fourth:#}");
    assert_eq!(fourth["multitask_strategy"], "enqueue");
    let fourth = fourth["run_id"].as_str().unwrap().to_owned();
    let listed = server.get(&runs).json();
    assert_eq!(listed[0]["run_id"], fourth.as_str(), "{listed:#}");
    let cancelled = server.call("POST", &format!("{runs}/{third}/cancel"), None);
    assert_eq!(cancelled.json()["status"], "interrupted");
    let joined = server.get(&format!("{runs}/{fourth}/join")).json();
    assert_eq!(run_status(&server, &thread, &fourth), "success");
    let humans: Vec<String> = said(&joined)
        .into_iter()
        .filter(|(kind, _)| kind == "human")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(humans, ["first", "third", "fourth"], "{joined:#}");
    assert_eq!(said(&joined).last(), Some(&pair("ai", "Queued one.")));
    // The model saw the thread without the rolled-back run.
    let last = model.requests().last().unwrap()["input"].to_string();
    assert!(last.contains("third") && !last.contains("second"), "{last}");
}

#[test]
fn a_streamed_run_whose_client_goes_away_is_cancelled_only_when_it_asked() {
    let hang = json!({ "text": "working", "deltas": 1, "fault": { "type": "hang" } });
    let model = MockModel::start(json!({ "replies": [hang, hang], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let thread = new_thread(&server);
    let stream = |on_disconnect: &str| {
        let mut events = server.stream(
            "POST",
            &format!("/threads/{thread}/runs/stream"),
            Some(&json!({
                "assistant_id": "rein", "input": input(on_disconnect),
                "stream_mode": "messages-tuple", "on_disconnect": on_disconnect,
            })),
        );
        let seen = events.until("messages");
        (seen[0].data["run_id"].as_str().unwrap().to_owned(), events)
    };
    // `cancel`: the run ends when its client goes away (join resolves once it has).
    let (cancelled, events) = stream("cancel");
    drop(events);
    server.get(&format!("/threads/{thread}/runs/{cancelled}/join"));
    assert_eq!(run_status(&server, &thread, &cancelled), "interrupted");
    // `continue` (the default): it goes on.
    let (kept, events) = stream("continue");
    drop(events);
    assert_eq!(run_status(&server, &thread, &kept), "running");
    let _ = server.call(
        "POST",
        &format!("/threads/{thread}/runs/{kept}/cancel"),
        None,
    );
}

#[test]
fn a_run_cut_off_by_kill_9_is_reported_interrupted_with_its_events_after_a_restart() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "half", "deltas": 1, "fault": { "type": "hang" } }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let thread = new_thread(&server);
    let run = start_run(&server, &thread, "crash", "reject");
    let run = run["run_id"].as_str().unwrap().to_owned();
    drop(until_answering(&server, &thread, &run));
    server.kill9();

    let server = Server::start(home.path(), &[]);
    assert_eq!(run_status(&server, &thread, &run), "interrupted");
    let state = server.get(&format!("/threads/{thread}/state")).json();
    assert_eq!(said(&state["values"]), [pair("human", "crash")]);
    let replayed = server
        .stream("GET", &format!("/threads/{thread}/runs/{run}/stream"), None)
        .collect_all();
    assert_eq!(types(&replayed), ["metadata", "values", "end"]);
    // The thread goes on from its rollout.
    let waited = server
        .post(
            &format!("/threads/{thread}/runs/wait"),
            &json!({ "assistant_id": "rein", "input": input("again") }),
        )
        .json();
    assert_eq!(said(&waited).last(), Some(&pair("ai", "echo: again")));
}

#[test]
fn what_rein_cannot_honour_is_refused_naming_it_and_admission_is_the_servers() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let thread = new_thread(&server);
    let runs = format!("/threads/{thread}/runs");
    for (body, param) in [
        (
            json!({ "assistant_id": "rein", "input": input("x"), "webhook": "http://x" }),
            "webhook",
        ),
        (
            json!({ "assistant_id": "rein", "input": input("x"), "interrupt_before": "*" }),
            "interrupt_before",
        ),
        (
            json!({ "assistant_id": "rein", "input": input("x"), "config": { "configurable": { "k": 1 } } }),
            "config",
        ),
        (
            json!({ "assistant_id": "rein", "input": input("x"), "stream_mode": "debug" }),
            "stream_mode",
        ),
        (
            json!({ "assistant_id": "rein", "input": { "messages": [{ "role": "ai", "content": "x" }] } }),
            "input.messages[0].role",
        ),
    ] {
        let reply = server.post(&runs, &body);
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(reply.json()["error"]["param"], param, "{body}");
    }
    let other = server.post(
        &runs,
        &json!({ "assistant_id": "agent", "input": input("x") }),
    );
    assert_eq!(other.status, 404);
    let nowhere = "/threads/00000000-0000-0000-0000-000000000000/runs";
    assert_eq!(
        server
            .post(
                nowhere,
                &json!({ "assistant_id": "rein", "input": input("x") })
            )
            .status,
        404
    );
    assert_eq!(
        server
            .post("/threads", &json!({ "metadata": { "a": 1 } }))
            .status,
        400
    );
    assert_eq!(
        server
            .call("PUT", &format!("/threads/{thread}"), None)
            .status,
        405
    );
    // The same admission as /v1/responses: token, Origin, Host.
    let path = format!("/threads/{thread}");
    let no_token = server.send(
        "GET",
        &path,
        &server.headers_with("Authorization", None),
        None,
    );
    assert_eq!(no_token.status, 401);
    // The LangGraph SDK's own key header carries the same token.
    let mut keyed = server.headers_with("Authorization", None);
    keyed.push(("x-api-key".into(), server.token.clone()));
    assert_eq!(server.send("GET", &path, &keyed, None).status, 200);
    keyed.last_mut().unwrap().1 = "wrong".into();
    assert_eq!(server.send("GET", &path, &keyed, None).status, 401);
    let origin = server.headers_with("Origin", Some("http://evil.example"));
    assert_eq!(server.send("GET", &path, &origin, None).status, 403);
    let host = server.headers_with("Host", Some("evil.example:80"));
    assert_eq!(server.send("GET", &path, &host, None).status, 403);
}

/// The `curl` commands of docs/serve.md's Agent Protocol section, continuations joined.
fn documented_curls() -> Vec<String> {
    let doc =
        std::fs::read_to_string(rein_test_support::test_setup::repo_root().join("docs/serve.md"))
            .unwrap();
    let section = doc
        .split("## LangGraph's Agent Protocol")
        .nth(1)
        .expect("docs/serve.md has an Agent Protocol section");
    let section = section.split("\n## ").next().unwrap();
    let mut commands = Vec::new();
    let mut current: Option<String> = None;
    for line in section.lines() {
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
fn the_agent_protocol_curl_examples_of_the_docs_work() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let curls = documented_curls();
    assert!(curls.len() >= 6, "{curls:?}");
    let (mut thread, mut run) = (String::new(), String::new());
    for command in curls {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .env("REIN_URL", &server.url)
            .env("REIN_TOKEN", &server.token)
            .env("THREAD", &thread)
            .env("RUN", &run)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        if command.contains("stream") {
            assert!(text.contains("event: end"), "{command}: {text}");
            continue;
        }
        let answer: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{command}: {e}: {text}"));
        assert!(answer.get("error").is_none(), "{command}: {answer}");
        if let (true, Some(id)) = (thread.is_empty(), answer.get("thread_id")) {
            thread = id.as_str().unwrap().to_owned();
        }
        if let (true, Some(id)) = (run.is_empty(), answer.get("run_id")) {
            run = id.as_str().unwrap().to_owned();
        }
    }
    assert!(!run.is_empty());
}
