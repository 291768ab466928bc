//! Project instructions end to end: `AGENTS.md` files on disk, assembled as Codex
//! assembles them, in the request bodies a real `rein mock-model` server records, through
//! `rein exec` and `rein app-server`.
#![allow(clippy::unwrap_used)]

#[path = "support/app_server.rs"]
mod support;

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, json_lines, method, rein_in, AppServer, MockModel};

/// A repository (`.git` marks its root) with `AGENTS.md` at the root and an
/// `AGENTS.override.md` (hiding the `AGENTS.md` beside it) in `sub/`.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(
            root.join("AGENTS.md"),
            "Run `make check` before you stop.\n",
        )
        .unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/AGENTS.md"), "shadowed by the override").unwrap();
        std::fs::write(root.join("sub/AGENTS.override.md"), "In sub/, use tabs.").unwrap();
        Self { dir }
    }

    fn sub(&self) -> PathBuf {
        self.dir.path().join("sub")
    }
}

/// The message Codex sends for `text` in `cwd` (codex-rs `UserInstructions`: one user
/// message, one `input_text` part).
fn agents_message(cwd: &Path, text: &str) -> Value {
    json!({
        "type": "message",
        "role": "user",
        "content": [{
            "type": "input_text",
            "text": format!(
                "# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{text}\n</INSTRUCTIONS>",
                cwd.display()
            ),
        }],
    })
}

fn prompt_message(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn replies(n: usize) -> Value {
    json!({"replies": (0..n).map(|i| json!({"text": format!("answer {i}")})).collect::<Vec<_>>()})
}

fn exec(home: &Path, args: &[&str]) -> std::process::Output {
    let out = rein_in(home, &[&["exec"], args].concat()).output().unwrap();
    assert!(
        out.status.success(),
        "rein exec {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const BOTH: &str = "global rule\n\n--- project-doc ---\n\nRun `make check` before you stop.\n\n\nIn sub/, use tabs.";

#[test]
fn exec_sends_the_global_root_and_override_files_in_order_and_keeps_them_for_the_thread() {
    let model = MockModel::start(replies(3));
    let home = home_for(&model);
    std::fs::write(home.path().join("AGENTS.md"), "\n  global rule  \n").unwrap();
    let repo = Repo::new();
    let sub = repo.sub();
    let out = exec(
        home.path(),
        &["--json", "-C", sub.to_str().unwrap(), "first"],
    );
    let thread = json_lines(&out.stdout)[0]["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A change to the files is seen by the next thread, not by this one.
    std::fs::write(repo.dir.path().join("AGENTS.md"), "changed").unwrap();
    exec(
        home.path(),
        &[
            "--json",
            "-C",
            sub.to_str().unwrap(),
            "resume",
            &thread,
            "second",
        ],
    );
    exec(
        home.path(),
        &["--json", "-C", sub.to_str().unwrap(), "third"],
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0]["input"],
        json!([agents_message(&sub, BOTH), prompt_message("first")])
    );
    // The second turn's request starts with the same bytes: the prefix and the first turn.
    let first = serde_json::to_string(&requests[0]["input"][0]).unwrap();
    let second = serde_json::to_string(&requests[1]["input"][0]).unwrap();
    assert_eq!(first, second);
    assert_eq!(requests[1]["input"][1], prompt_message("first"));
    assert_eq!(requests[1]["input"][3], prompt_message("second"));
    assert_eq!(
        requests[2]["input"][0],
        agents_message(
            &sub,
            "global rule\n\n--- project-doc ---\n\nchanged\n\nIn sub/, use tabs."
        )
    );
}

#[test]
fn exec_cuts_at_project_doc_max_bytes_and_says_so() {
    let model = MockModel::start(replies(1));
    let home = home_for(&model);
    let repo = Repo::new();
    let sub = repo.sub();
    let out = exec(
        home.path(),
        &[
            "--json",
            "-c",
            "project_doc_max_bytes=40",
            "-C",
            sub.to_str().unwrap(),
            "hi",
        ],
    );
    // 34 bytes of the root file, then the first 6 of the override.
    assert_eq!(
        model.requests()[0]["input"][0],
        agents_message(&sub, "Run `make check` before you stop.\n\n\nIn sub")
    );
    let events = json_lines(&out.stdout);
    let warning = events
        .iter()
        .find(|e| e["item"]["type"] == "error")
        .unwrap_or_else(|| panic!("no warning item: {events:?}"));
    let message = warning["item"]["message"].as_str().unwrap();
    assert!(
        message.contains("AGENTS.override.md is 18 bytes; only its first 6 are sent"),
        "{message}"
    );
}

#[test]
fn exec_no_project_doc_sends_none_and_so_does_a_zero_cap_for_the_project() {
    let model = MockModel::start(replies(2));
    let home = home_for(&model);
    std::fs::write(home.path().join("AGENTS.md"), "global rule").unwrap();
    let repo = Repo::new();
    let sub = repo.sub();
    let cd = sub.to_str().unwrap();
    exec(home.path(), &["--json", "--no-project-doc", "-C", cd, "a"]);
    exec(
        home.path(),
        &["--json", "-c", "project_doc_max_bytes=0", "-C", cd, "b"],
    );
    let requests = model.requests();
    assert_eq!(requests[0]["input"], json!([prompt_message("a")]));
    // Codex's key turns the project's files off; the global file stays.
    assert_eq!(
        requests[1]["input"],
        json!([agents_message(&sub, "global rule"), prompt_message("b")])
    );
}

#[test]
fn app_server_threads_send_the_block_before_every_turn_and_warn_of_a_cut() {
    let model = MockModel::start(replies(2));
    let home = home_for(&model);
    std::fs::write(
        home.path().join("config.toml"),
        // A top-level key: before the file's tables.
        "project_doc_max_bytes = 40\n".to_owned()
            + &std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
    )
    .unwrap();
    let repo = Repo::new();
    let sub = repo.sub();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    let answer = server.call("thread/start", json!({ "cwd": sub }));
    let thread = answer["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(server.recv()["method"], "thread/started");
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    assert_eq!(
        answer["result"]["instructionSources"],
        json!([root.join("AGENTS.md"), root.join("sub/AGENTS.override.md")])
    );
    let warning = server.until(|m| method(m) == "warning").pop().unwrap();
    assert_eq!(warning["params"]["threadId"], json!(thread));
    assert!(warning["params"]["message"]
        .as_str()
        .unwrap()
        .contains("only its first 6 are sent"));
    for text in ["one", "two"] {
        server.request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": text}]}),
        );
        server.until(|m| method(m) == "turn/completed");
    }
    let requests = model.requests();
    let block = agents_message(&sub, "Run `make check` before you stop.\n\n\nIn sub");
    assert_eq!(requests[0]["input"], json!([block, prompt_message("one")]));
    assert_eq!(requests[1]["input"][0], block);
    assert_eq!(requests[1]["input"][3], prompt_message("two"));
    assert!(server.finish().success());
}
