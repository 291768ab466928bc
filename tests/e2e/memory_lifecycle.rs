//! Memory through the real binary, beyond `memory.rs`: uses are counted and
//! `[memory] max_unused_days` retires the memories nobody used, by a clock the test sets
//! (`REIN_MEMORY_NOW_MS`), in a turn's recall and in `rein memory list`; a proposal under
//! `consent = "ask"` reaches `rein exec` (refused: nobody can answer, and the model is told)
//! and `rein acp` (a `session/request_permission` whose answer decides).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use rein_test_support::acp::{method, Acp};
use rein_test_support::exec::{json_lines, rein_in, MockModel};
use rein_test_support::memory::{
    memory_home, memory_home_with, memory_item, memory_items, remember, stored, tool_output,
};
use serde_json::{json, Value};

const DAY: u64 = 86_400_000;
/// A day far from the real clock, so nothing here depends on it.
const DAY_0: u64 = 1_000 * DAY;

/// `rein ARGS` in `home` on day `day` of the memory clock; it must succeed.
fn on_day(home: &Path, day: u64, args: &[&str]) -> std::process::Output {
    let out = rein_in(home, args)
        .env("REIN_MEMORY_NOW_MS", (DAY_0 + day * DAY).to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rein {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Each stored memory as (content, state, use count, last used day), listed on `day`
/// (the listing retires by the memory clock too), sorted by content.
fn summary(home: &Path, day: u64) -> Vec<(String, String, u64, Option<u64>)> {
    let listed = on_day(home, day, &["memory", "list", "--all", "--json"]);
    let mut rows: Vec<_> = json_lines(&listed.stdout)
        .iter()
        .map(|r| {
            (
                r["content"].as_str().unwrap().to_owned(),
                r["state"].as_str().unwrap().to_owned(),
                r["use_count"].as_u64().unwrap(),
                r["last_used_ms"].as_u64().map(|ms| (ms - DAY_0) / DAY),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn row(
    content: &str,
    state: &str,
    uses: u64,
    day: Option<u64>,
) -> (String, String, u64, Option<u64>) {
    (content.to_owned(), state.to_owned(), uses, day)
}

#[test]
fn uses_are_counted_and_memories_unused_for_max_unused_days_retire_by_the_memory_clock() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = memory_home_with(&model, "auto", "max_unused_days = 30\n");
    let cwd = tempfile::tempdir().unwrap();
    let (handbook, releases, staging) = (
        "Render the handbook with mdbook",
        "Ship releases with cargo dist",
        "Ship releases to the staging cluster first",
    );
    let mut ids = Vec::new();
    for (day, content) in [(0, handbook), (0, releases), (12, staging)] {
        let out = on_day(
            home.path(),
            day,
            &["memory", "add", "--scope", "user", content],
        );
        ids.push(String::from_utf8(out.stdout).unwrap().trim().to_owned());
    }
    let exec = |day: u64, prompt: &str| {
        on_day(
            home.path(),
            day,
            &["exec", "--json", "-C", cwd.path().to_str().unwrap(), prompt],
        )
    };
    // Day 20: the handbook memory is given and used.
    exec(20, "How do I render the handbook?");
    // Day 40 (cut-off day 10): the listing retires the release memory (created day 0, never
    // used); the handbook's (used day 20) and staging's (created day 12) stay.
    let listed = on_day(home.path(), 40, &["memory", "list"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stderr),
        "retired 1 memories nobody used for 30 days\n"
    );
    assert_eq!(
        summary(home.path(), 40),
        vec![
            row(handbook, "accepted", 1, Some(20)),
            row(staging, "accepted", 0, None),
            row(releases, "retired", 0, None),
        ]
    );
    // Day 45 (cut-off day 15): the turn's recall retires staging's before it matches, so
    // only the handbook memory is given, and counted again.
    exec(45, "Render the handbook, then ship releases to staging.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let given = |id: &str, content: &str| format!("- [{id}] (user) {content}");
    assert_eq!(
        memory_items(&requests[0]),
        vec![memory_item(&[given(&ids[0], handbook)])]
    );
    assert_eq!(
        memory_items(&requests[1]),
        vec![memory_item(&[given(&ids[0], handbook)])]
    );
    assert_eq!(
        summary(home.path(), 45),
        vec![
            row(handbook, "accepted", 2, Some(45)),
            row(staging, "retired", 0, None),
            row(releases, "retired", 0, None),
        ]
    );
}

#[test]
fn exec_shows_an_asked_proposal_refuses_it_and_the_model_is_told() {
    let model = MockModel::start(json!({ "replies": [
        remember("The user deploys on Fridays", "repo"),
        { "text": "Not kept, then." },
        remember("The user deploys on Fridays", "repo"),
        { "text": "Not kept, then." },
    ]}));
    let home = memory_home(&model, "ask");
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().to_str().unwrap();
    let human = rein_in(home.path(), &["exec", "-C", dir, "Remember my deploy day."])
        .output()
        .unwrap();
    assert!(human.status.success());
    let shown = String::from_utf8_lossy(&human.stdout).to_string()
        + &String::from_utf8_lossy(&human.stderr);
    assert!(
        shown.contains("memory proposed (repo): The user deploys on Fridays"),
        "{shown}"
    );
    let json = rein_in(
        home.path(),
        &["exec", "--json", "-C", dir, "Remember my deploy day."],
    )
    .output()
    .unwrap();
    assert!(json.status.success());
    let events = json_lines(&json.stdout);
    let refusal = "Not remembered (repo scope): the user declined to keep it.";
    let requests = model.requests();
    assert_eq!(tool_output(&requests[1], "call_mem"), refusal);
    assert_eq!(tool_output(&requests[3], "call_mem"), refusal);
    // The `--json` stream says it as an error item (Codex's stream has no memory items).
    let kept = stored(home.path());
    let errors: Vec<Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "error")
        .map(|e| e["item"]["message"].clone())
        .collect();
    assert_eq!(
        errors,
        vec![json!(format!(
            "memory {} not kept: the user declined to keep it",
            kept[0]["id"].as_str().unwrap()
        ))]
    );
    assert_eq!(
        kept.iter().map(|r| r["state"].clone()).collect::<Vec<_>>(),
        vec![json!("rejected"), json!("rejected")]
    );
}

#[test]
fn rein_acp_asks_a_proposal_as_a_permission_and_its_answer_decides() {
    // The second call has an id of its own: its request holds the first one's output too.
    let mut german = remember("The user wants answers in German", "user");
    german["tool_calls"][0]["call_id"] = json!("call_mem_2");
    let model = MockModel::start(json!({ "replies": [
        remember("The user wants answers in French", "user"),
        { "text": "Kept." },
        german,
        { "text": "Not kept." },
    ]}));
    let home = memory_home(&model, "ask");
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd.path().canonicalize().unwrap());
    let mut titles = Vec::new();
    for option in ["allow_once", "reject_once"] {
        let id = acp.prompt(&session, "Remember my language.");
        let ask = acp
            .until(|m| method(m) == "session/request_permission")
            .pop()
            .unwrap();
        let card = &ask["params"]["toolCall"];
        titles.push((
            card["title"].clone(),
            card["content"][0]["content"]["text"].clone(),
        ));
        acp.send(&json!({ "jsonrpc": "2.0", "id": ask["id"],
            "result": { "outcome": { "outcome": "selected", "optionId": option } } }));
        let (_, answer) = acp.answer_to(&id);
        assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    }
    acp.finish();
    assert_eq!(
        titles,
        vec![
            (
                json!("Remember (user): The user wants answers in French"),
                json!("the user said so")
            ),
            (
                json!("Remember (user): The user wants answers in German"),
                json!("the user said so")
            ),
        ]
    );
    let requests = model.requests();
    let kept = stored(home.path());
    let state_of = |content: &str| {
        kept.iter()
            .find(|r| r["content"] == content)
            .map(|r| (r["state"].clone(), r["id"].as_str().unwrap().to_owned()))
            .unwrap()
    };
    let (french, french_id) = state_of("The user wants answers in French");
    let (german, _) = state_of("The user wants answers in German");
    assert_eq!((french, german), (json!("accepted"), json!("rejected")));
    assert_eq!(
        tool_output(&requests[1], "call_mem"),
        format!("Remembered as memory {french_id} (user scope).")
    );
    assert_eq!(
        tool_output(&requests[3], "call_mem_2"),
        "Not remembered (user scope): the user declined to keep it."
    );
}

#[test]
fn a_session_given_memories_replays_identical_and_its_remember_call_is_replayed() {
    let model = MockModel::start(json!({ "replies": [
        remember("Benchmarks run on the release build", "repo"),
        { "text": "Noted; use the release build." },
    ]}));
    let home = memory_home(&model, "auto");
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().canonicalize().unwrap();
    let added = on_day(
        home.path(),
        0,
        &[
            "memory",
            "add",
            "--scope",
            "user",
            "Benchmarks are quoted with the load average",
        ],
    );
    let id = String::from_utf8(added.stdout).unwrap().trim().to_owned();
    let thread = rein_test_support::replay::record(
        home.path(),
        &dir,
        &[],
        "How are benchmarks quoted? Remember the build.",
    );
    assert_eq!(
        memory_items(&model.requests()[0]),
        vec![memory_item(&[format!(
            "- [{id}] (user) Benchmarks are quoted with the load average"
        )])]
    );
    // The store changes after the recording: the replay gives what the recording was given,
    // not what the store holds now, and its `remember` call keeps nothing.
    rein_test_support::exec::rein_ok(home.path(), &["memory", "forget", &id]);
    let before = stored(home.path());
    let (code, stdout, stderr) = rein_test_support::replay::run(home.path(), &["replay", &thread]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "identical: 1 turns, 2 steps identical\n"),
        "{stderr}"
    );
    assert_eq!(stored(home.path()), before);
}
