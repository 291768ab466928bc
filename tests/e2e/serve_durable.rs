//! What `rein serve` records beside the rollouts, over real HTTP on 127.0.0.1 against the
//! scripted mock model, across a restart and a kill -9: a response's `metadata` and
//! `background` (echoed on create, GET, its stream and after a restart; bad metadata is a
//! 400 naming it), and queued (`enqueue`) Agent Protocol runs, which are listed `pending`
//! again after a kill -9 and then run with their stream modes (or, cancelled, stay
//! cancelled); a started run's strategy and stream modes, which a restarted server still
//! reports and streams; and a stateless run's thread, deleted by the next start when a
//! kill -9 cut its run off, with every record of it; and a two-day-old response, streamed
//! again from a sequence number.

use pretty_assertions::assert_eq;
use rein_test_support::serve::{hello_model, home_for, types, MockModel, Server};
use serde_json::{json, Value};

#[test]
fn metadata_and_background_are_echoed_live_polled_streamed_and_after_a_restart() {
    let model = hello_model();
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let metadata = json!({ "job": "nightly-42", "owner": "ci" });

    let created = server
        .post(
            "/v1/responses",
            &json!({ "input": "hi", "metadata": metadata, "background": true }),
        )
        .ok();
    assert_eq!(
        (&created["metadata"], &created["background"]),
        (&metadata, &json!(true))
    );
    let id = created["id"].as_str().unwrap().to_owned();
    // Polled to the end: the same fields on the finished response.
    let done = loop {
        let polled = server.get(&format!("/v1/responses/{id}")).ok();
        if polled["status"] != "in_progress" {
            break polled;
        }
        server
            .stream("GET", &format!("/v1/responses/{id}?stream=true"), None)
            .collect_all();
    };
    assert_eq!(done["status"], "completed");
    assert_eq!(
        (&done["metadata"], &done["background"]),
        (&metadata, &json!(true))
    );

    // A streamed one: every response object of its stream carries them, live and replayed.
    let live = server
        .stream(
            "POST",
            "/v1/responses",
            Some(&json!({ "input": "again", "stream": true, "metadata": { "k": "v" } })),
        )
        .collect_all();
    let objects = |events: &[rein_test_support::serve::Sse]| -> Vec<(Value, Value)> {
        events
            .iter()
            .filter(|e| e.data.get("response").is_some())
            .map(|e| {
                let r = &e.data["response"];
                (r["metadata"].clone(), r["background"].clone())
            })
            .collect()
    };
    let expected = vec![(json!({ "k": "v" }), json!(false)); 3];
    assert_eq!(objects(&live), expected, "created, in_progress, completed");
    let streamed_id = live.last().unwrap().data["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let replayed = server
        .stream(
            "GET",
            &format!("/v1/responses/{streamed_id}?stream=true"),
            None,
        )
        .collect_all();
    assert_eq!(objects(&replayed), expected);

    // kill -9, then a new server: read back from `$REIN_HOME`, not from memory.
    server.kill9();
    let server = Server::start(home.path(), &[]);
    assert_eq!(server.get(&format!("/v1/responses/{id}")).ok(), done);
    let again = server.get(&format!("/v1/responses/{streamed_id}")).ok();
    assert_eq!(
        (&again["metadata"], &again["background"]),
        (&json!({ "k": "v" }), &json!(false))
    );
}

#[test]
fn metadata_over_the_apis_limits_is_a_400_naming_it_and_starts_nothing() {
    let model = hello_model();
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let many: serde_json::Map<String, Value> =
        (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
    for metadata in [
        Value::Object(many),
        json!({ "k".repeat(65): "v" }),
        json!({ "k": "v".repeat(513) }),
        json!({ "k": 7 }),
        json!("not an object"),
    ] {
        let reply = server.post(
            "/v1/responses",
            &json!({ "input": "hi", "metadata": metadata }),
        );
        assert_eq!(reply.status, 400, "{metadata}");
        let error = &reply.json()["error"];
        assert_eq!(
            (&error["type"], &error["param"]),
            (&json!("invalid_request_error"), &json!("metadata")),
            "{error}"
        );
    }
    // At the limits exactly: accepted.
    let most: serde_json::Map<String, Value> = (0..16)
        .map(|i| (format!("{i:0>64}"), json!("v".repeat(512))))
        .collect();
    let most = Value::Object(most);
    let created = server
        .post("/v1/responses", &json!({ "input": "hi", "metadata": most }))
        .ok();
    assert_eq!(created["metadata"], most);
    assert_eq!(created["background"], false);
    // Nothing was sent to the model for the refused ones.
    assert_eq!(model.requests().len(), 1);
}

fn input(text: &str) -> Value {
    json!({ "messages": [{ "role": "user", "content": text }] })
}

fn run(server: &Server, thread: &str, text: &str, strategy: &str) -> Value {
    server
        .post(
            &format!("/threads/{thread}/runs"),
            &json!({
                "assistant_id": "rein", "input": input(text), "multitask_strategy": strategy,
                "stream_mode": "updates",
            }),
        )
        .ok()
}

#[test]
fn queued_runs_survive_a_kill_9_listed_pending_then_run_in_order_and_cancelled_stay_so() {
    // The first run hangs mid-answer: the server dies under it.
    let model = MockModel::start(json!({
        "replies": [{ "text": "half", "deltas": 1, "fault": { "type": "hang" } }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let thread = server.post("/threads", &json!({})).ok()["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let runs = format!("/threads/{thread}/runs");
    let first = run(&server, &thread, "first", "reject")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    server
        .stream(
            "GET",
            &format!("{runs}/{first}/stream?stream_mode=messages-tuple"),
            None,
        )
        .until("messages");
    let ids: Vec<String> = ["second", "third", "fourth"]
        .iter()
        .map(|text| {
            let queued = run(&server, &thread, text, "enqueue");
            assert_eq!(queued["status"], "pending", "{queued:#}");
            queued["run_id"].as_str().unwrap().to_owned()
        })
        .collect();
    let cancelled = server
        .call("POST", &format!("{runs}/{}/cancel", ids[1]), None)
        .ok();
    assert_eq!(cancelled["status"], "interrupted");
    server.kill9();

    let server = Server::start(home.path(), &[]);
    // Listed again, each as it stood; then the pending ones run, in the order they came.
    let status = |run: &str| server.get(&format!("{runs}/{run}")).ok()["status"].clone();
    assert_eq!(status(&ids[1]), "interrupted");
    let joined = server.get(&format!("{runs}/{}/join", ids[2])).ok();
    assert_eq!(
        [&first, &ids[0], &ids[1], &ids[2]].map(|r| status(r)),
        [
            json!("interrupted"),
            json!("success"),
            json!("interrupted"),
            json!("success")
        ]
    );
    let said: Vec<(String, String)> = joined["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default().to_owned();
            (m["type"].as_str().unwrap().to_owned(), text)
        })
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        said,
        [
            pair("human", "first"),
            pair("human", "second"),
            pair("ai", "echo: second"),
            pair("human", "fourth"),
            pair("ai", "echo: fourth"),
        ]
    );
    // Joined without a `stream_mode`: the one the run was queued with, recorded with it.
    let joined = server
        .stream("GET", &format!("{runs}/{}/stream", ids[2]), None)
        .collect_all();
    assert_eq!(types(&joined), ["metadata", "updates", "updates", "end"]);
    // Started runs are the rollout's now: nothing is left queued to run twice.
    let queue = home.path().join("serve/queue");
    let left: Vec<_> = std::fs::read_dir(&queue)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, [format!("{}.json", ids[1])]);
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(found) => found
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    }
}

#[test]
fn a_started_runs_strategy_and_stream_modes_are_reported_and_streamed_after_a_kill_9() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let thread = server.post("/threads", &json!({})).ok()["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let runs = format!("/threads/{thread}/runs");
    let started = run(&server, &thread, "one", "interrupt");
    let id = started["run_id"].as_str().unwrap().to_owned();
    server.get(&format!("{runs}/{id}/join")).ok();
    let before = server.get(&format!("{runs}/{id}")).ok();
    let streamed = server
        .stream("GET", &format!("{runs}/{id}/stream"), None)
        .collect_all();
    assert_eq!(before["multitask_strategy"], "interrupt");
    assert_eq!(types(&streamed), ["metadata", "updates", "updates", "end"]);
    server.kill9();

    let server = Server::start(home.path(), &[]);
    // The same object and the same stream: the run's record, not this process's memory.
    assert_eq!(server.get(&format!("{runs}/{id}")).ok(), before);
    let again = server
        .stream("GET", &format!("{runs}/{id}/stream"), None)
        .collect_all();
    assert_eq!(again, streamed);
    // A run with only the defaults costs no record.
    let plain = server
        .post(
            &format!("{runs}/wait"),
            &json!({ "assistant_id": "rein", "input": input("two") }),
        )
        .ok();
    assert_eq!(plain["messages"].as_array().map(Vec::len), Some(4));
    let recorded = home.path().join("serve/runs").join(&thread);
    assert_eq!(entries(&recorded), [format!("{id}.json")]);
}

#[test]
fn a_stateless_run_cut_off_by_a_kill_9_has_its_thread_and_records_deleted_by_the_next_start() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "half", "deltas": 1, "fault": { "type": "hang" } }],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let created = server.post(
        "/runs",
        &json!({ "assistant_id": "rein", "input": input("one"), "stream_mode": "updates" }),
    );
    let run = created.ok();
    let thread = run["thread_id"].as_str().unwrap().to_owned();
    // The run is under way (the model has begun to answer) when the server dies.
    server
        .stream(
            "GET",
            &format!(
                "/threads/{thread}/runs/{}/stream?stream_mode=messages-tuple",
                run["run_id"].as_str().unwrap()
            ),
            None,
        )
        .until("messages");
    assert_eq!(
        entries(&home.path().join("serve/delete")),
        [format!("{thread}.json")]
    );
    assert_eq!(
        entries(&home.path().join("serve/runs").join(&thread)).len(),
        1
    );
    server.kill9();

    let server = Server::start(home.path(), &[]);
    // Deleted before the server took its first request.
    assert_eq!(server.get(&format!("/threads/{thread}")).status, 404);
    let found = server
        .post("/threads/search", &json!({ "limit": 100 }))
        .ok();
    assert_eq!(found, json!([]));
    assert_eq!(
        entries(&home.path().join("serve/delete")),
        Vec::<String>::new()
    );
    assert!(!home.path().join("serve/runs").join(&thread).exists());
}

#[test]
fn a_two_day_old_response_streams_again_from_starting_after_with_the_response_restated() {
    let model = hello_model();
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let live = server
        .stream(
            "POST",
            "/v1/responses",
            Some(&json!({ "input": "hi", "stream": true })),
        )
        .collect_all();
    let done = live.last().unwrap().data["response"].clone();
    let id = done["id"].as_str().unwrap().to_owned();
    assert!(server.terminate().success());
    let two_days = 2 * 86_400;
    rein_test_support::serve::age_rollouts(home.path(), two_days * 1000);

    let server = Server::start(home.path(), &[]);
    let mut aged = done.clone();
    aged["created_at"] = json!(done["created_at"].as_u64().unwrap() - two_days);
    assert_eq!(server.get(&format!("/v1/responses/{id}")).ok(), aged);
    let after = live[3].data["sequence_number"].as_u64().unwrap();
    let resumed = server
        .stream(
            "GET",
            &format!("/v1/responses/{id}?stream=true&starting_after={after}"),
            None,
        )
        .collect_all();
    // The response as it stood at `after`, then what followed it then (deltas are live
    // only: the done events carry their text).
    assert_eq!(resumed[0].event, "response.created");
    assert_eq!(
        resumed[0].data["response"]["created_at"],
        aged["created_at"]
    );
    let followed: Vec<_> = live
        .iter()
        .filter(|e| e.data["sequence_number"].as_u64().unwrap() > after)
        .filter(|e| e.event != "response.output_text.delta")
        .map(|e| (e.event.clone(), e.data["sequence_number"].clone()))
        .collect();
    let replayed: Vec<_> = resumed[1..]
        .iter()
        .map(|e| (e.event.clone(), e.data["sequence_number"].clone()))
        .collect();
    assert_eq!(replayed, followed);
    assert_eq!(resumed.last().unwrap().data["response"], aged);
}
