//! Stateless Agent Protocol runs on `rein serve` (`POST /runs`, `/runs/wait`,
//! `/runs/stream`), over real HTTP on 127.0.0.1 against the scripted mock model: each runs
//! on a thread made for it, deleted once the run has ended (`on_completion: delete`, the
//! default) or kept (`keep`); `on_completion` on a thread's own run is a 400 naming it.

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, types, MockModel, Reply, Server, PATIENCE};
use serde_json::{json, Value};

fn input(text: &str) -> Value {
    json!({ "messages": [{ "role": "user", "content": text }] })
}

/// The thread of a run, from the `Content-Location` the server answers with.
fn thread_of(reply: &Reply) -> String {
    let location = reply.header("content-location").unwrap();
    location.split('/').nth(2).unwrap().to_owned()
}

fn listed(server: &Server) -> Vec<String> {
    let found = server
        .post("/threads/search", &json!({ "limit": 100 }))
        .ok();
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Until `GET /threads/{thread}` answers 404 (the deletion follows the run's end).
fn until_deleted(server: &Server, thread: &str) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while server.get(&format!("/threads/{thread}")).status != 404 {
        assert!(std::time::Instant::now() < deadline, "{thread} was kept");
    }
}

#[test]
fn a_stateless_run_waits_streams_or_runs_in_the_background_on_a_thread_of_its_own() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let said = |values: &Value| -> Vec<(String, String)> {
        values["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let text = m["content"].as_str().unwrap_or_default().to_owned();
                (m["type"].as_str().unwrap().to_owned(), text)
            })
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());

    // wait, deleted by default: the answer is the thread's values, then the thread is gone.
    let waited = server.post(
        "/runs/wait",
        &json!({ "assistant_id": "rein", "input": input("one") }),
    );
    let values = waited.ok();
    assert_eq!(
        said(&values),
        [pair("human", "one"), pair("ai", "echo: one")]
    );
    let gone = thread_of(&waited);
    assert_eq!(server.get(&format!("/threads/{gone}")).status, 404);
    assert!(!listed(&server).contains(&gone));

    // stream, deleted once it has ended.
    let before = listed(&server);
    let streamed = server
        .stream(
            "POST",
            "/runs/stream",
            Some(
                &json!({ "assistant_id": "rein", "input": input("two"), "stream_mode": "values" }),
            ),
        )
        .collect_all();
    assert_eq!(types(&streamed), ["metadata", "values", "values", "end"]);
    assert_eq!(
        said(&streamed[2].data),
        [pair("human", "two"), pair("ai", "echo: two")]
    );
    let deadline = std::time::Instant::now() + PATIENCE;
    while listed(&server) != before {
        assert!(
            std::time::Instant::now() < deadline,
            "the stream's thread was kept"
        );
    }

    // background, kept: the run is read and joined on its thread, which stays listed.
    let created = server.post(
        "/runs",
        &json!({ "assistant_id": "rein", "input": input("three"), "on_completion": "keep" }),
    );
    let object = created.ok();
    let kept = object["thread_id"].as_str().unwrap().to_owned();
    assert_eq!(kept, thread_of(&created));
    let run = object["run_id"].as_str().unwrap();
    let joined = server.get(&format!("/threads/{kept}/runs/{run}/join")).ok();
    assert_eq!(
        said(&joined),
        [pair("human", "three"), pair("ai", "echo: three")]
    );
    assert_eq!(
        server.get(&format!("/threads/{kept}/runs/{run}")).ok()["status"],
        "success"
    );
    assert!(listed(&server).contains(&kept));

    // background, deleted once it has ended.
    let created = server.post(
        "/runs",
        &json!({ "assistant_id": "rein", "input": input("four") }),
    );
    until_deleted(&server, &thread_of(&created));
}

#[test]
fn on_completion_is_refused_where_it_means_nothing_or_is_not_a_choice() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let before = listed(&server);
    let thread = server.post("/threads", &json!({})).ok()["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (path, body) in [
        (
            format!("/threads/{thread}/runs/wait"),
            json!({ "assistant_id": "rein", "input": input("x"), "on_completion": "keep" }),
        ),
        (
            "/runs/wait".to_owned(),
            json!({ "assistant_id": "rein", "input": input("x"), "on_completion": "archive" }),
        ),
    ] {
        let reply = server.post(&path, &body);
        assert_eq!(reply.status, 400, "{path}");
        assert_eq!(reply.json()["error"]["param"], "on_completion", "{path}");
    }
    // A refused stateless run leaves no thread behind.
    let refused = server.post(
        "/runs/wait",
        &json!({ "assistant_id": "nobody", "input": input("x"), "on_completion": "keep" }),
    );
    assert_eq!(refused.status, 404);
    let mut after = listed(&server);
    after.retain(|t| *t != thread);
    assert_eq!(after, before);
    assert_eq!(model.requests().len(), 0);
}
