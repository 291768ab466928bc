//! Project instructions end to end: `AGENTS.md` files on disk, assembled as Codex
//! assembles them, in the request bodies a real `rein mock-model` server records, through
//! `rein exec` and `rein app-server`.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, json_lines, method, rein_in, AppServer, MockModel};

/// A repository (`.git` marks its root) with `AGENTS.md` at the root and an
/// `AGENTS.override.md` (hiding the `AGENTS.md` beside it) in `sub/`.
pub(crate) struct Repo {
    pub(crate) dir: tempfile::TempDir,
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

    pub(crate) fn sub(&self) -> PathBuf {
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

pub(crate) fn replies(n: usize) -> Value {
    json!({"replies": (0..n).map(|i| json!({"text": format!("answer {i}")})).collect::<Vec<_>>()})
}

fn exec(home: &Path, args: &[&str]) -> std::process::Output {
    rein_ok_with(home, &[&["exec"], args].concat(), &[])
}

/// `rein ARGS` with `env` set; it must succeed (the failure shows stderr).
fn rein_ok_with(home: &Path, args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut cmd = rein_in(home, args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "rein {args:?}: {}",
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

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Skills of both dialects in one repository: two the model may use on its own, two
/// explicit-only ones (one per dialect's flag), and a malformed one.
pub(crate) fn skills_repo() -> Repo {
    let repo = Repo::new();
    let files = [
        (
            ".agents/skills/pdf/SKILL.md",
            "---\nname: pdf\ndescription: >\n  Fill PDF\n  forms.\nmetadata:\n  short-description: PDFs\n---\nUse pdftk.\n",
        ),
        (
            ".agents/skills/pdf/agents/openai.yaml",
            "interface:\n  display_name: PDF tools\ndependencies:\n  tools:\n    - type: mcp\n      value: pdf-server\n",
        ),
        (
            ".agents/skills/secret/SKILL.md",
            "---\nname: secret\ndescription: Only when asked.\n---\n",
        ),
        (
            ".agents/skills/secret/agents/openai.yaml",
            "policy:\n  allow_implicit_invocation: false\n",
        ),
        (
            "sub/.claude/skills/review/SKILL.md",
            "---\nallowed-tools: Read\n---\n\nReview a diff.\n",
        ),
        (
            ".claude/skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: Ship it.\ndisable-model-invocation: true\n---\n",
        ),
        (".agents/skills/broken/SKILL.md", "---\nname: broken\n---\n"),
    ];
    for (path, text) in files {
        write(&repo.dir.path().join(path), text);
    }
    repo
}

#[test]
fn skills_of_both_dialects_are_listed_and_only_implicit_ones_reach_the_model() {
    let model = MockModel::start(replies(1));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let user = user_home.path().to_str().unwrap();
    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    let listed = server.call("skills/list", json!({"cwds": [sub], "forceReload": true}));
    let entry = &listed["result"]["data"][0];
    let skill = |path: &str| root.join(path).display().to_string();
    assert_eq!(
        entry["skills"],
        json!([
            {"name": "review", "description": "Review a diff.", "enabled": true, "scope": "repo",
             "path": skill("sub/.claude/skills/review/SKILL.md")},
            {"name": "pdf", "description": "Fill PDF forms.", "shortDescription": "PDFs",
             "interface": {"displayName": "PDF tools"},
             "dependencies": {"tools": [{"type": "mcp", "value": "pdf-server"}]},
             "enabled": true, "scope": "repo", "path": skill(".agents/skills/pdf/SKILL.md")},
            {"name": "secret", "description": "Only when asked.", "enabled": true, "scope": "repo",
             "path": skill(".agents/skills/secret/SKILL.md")},
            {"name": "deploy", "description": "Ship it.", "enabled": true, "scope": "repo",
             "path": skill(".claude/skills/deploy/SKILL.md")},
        ])
    );
    assert_eq!(
        entry["errors"],
        json!([{"path": skill(".agents/skills/broken/SKILL.md"), "message": "missing field `description`"}])
    );

    // `rein skills list --json` prints the same entry.
    let out = rein_ok_with(
        home.path(),
        &["skills", "list", "--json", "-C", sub.to_str().unwrap()],
        &[("HOME", user_home.path())],
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Listing needs no model provider: a fresh home with no key lists them too.
    let fresh = tempfile::tempdir().unwrap();
    let human = rein_ok_with(
        fresh.path(),
        &["skills", "list", "-C", sub.to_str().unwrap()],
        &[("HOME", user_home.path())],
    );
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "secret\trepo (explicit only)\t{}",
            skill(".agents/skills/secret/SKILL.md")
        )),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&human.stderr)
        .contains("broken/SKILL.md: missing field `description`"));
    assert_eq!(printed["skills"], entry["skills"]);
    assert_eq!(printed["errors"], entry["errors"]);

    let thread = server.start_thread(json!({ "cwd": sub }));
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "go"}]}),
    );
    server.until(|m| method(m) == "turn/completed");
    let request = &model.requests()[0];
    assert_eq!(request["input"][0]["role"], "developer");
    let list = request["input"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        list.starts_with("<skills_instructions>\n## Skills\n"),
        "{list}"
    );
    assert!(list.ends_with("\n</skills_instructions>"), "{list}");
    let roots = format!(
        "### Skill roots\n- `r0` = `{}`\n- `r1` = `{}`\n### Available skills\n\
         - review: Review a diff. (file: r0/review/SKILL.md)\n\
         - pdf: Fill PDF forms. (file: r1/pdf/SKILL.md)\n### How to use skills\n",
        root.join("sub/.claude/skills").display(),
        root.join(".agents/skills").display()
    );
    assert!(list.contains(&roots), "{list}");
    // AGENTS.md follows the developer message, then the prompt.
    assert_eq!(request["input"][1]["role"], "user");
    assert_eq!(request["input"][2], prompt_message("go"));
    assert!(server.finish().success());
}

#[test]
fn skills_past_the_budget_are_reachable_through_search_skills() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "search_skills", "arguments": {"query": "pdf forms"}}]},
        {"text": "found it"}
    ]}));
    let home = home_for(&model);
    // 2 % of 1,000 tokens: 20, less than one skill's line with its root.
    std::fs::write(
        home.path().join("config.toml"),
        "model_context_window = 1000\nmodel_auto_compact_token_limit = 1000000\n".to_owned()
            + &std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
    )
    .unwrap();
    let user_home = tempfile::tempdir().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let out = rein_ok_with(
        home.path(),
        &["exec", "--json", "-C", sub.to_str().unwrap(), "fill a form"],
        &[("HOME", user_home.path())],
    );
    let events = json_lines(&out.stdout);
    assert!(
        events.iter().any(|e| e["item"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("2 of 2 skills did not fit"))),
        "{events:?}"
    );
    let requests = model.requests();
    let list = requests[0]["input"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        list.contains("### Available skills\n- 2 more skills did not fit in this list: call the `search_skills` tool"),
        "{list}"
    );
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"search_skills"), "{tools:?}");
    let output = requests[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("{:#}", requests[1]["input"]));
    assert_eq!(
        output["output"],
        format!(
            "- pdf: Fill PDF forms. (file: {})",
            root.join(".agents/skills/pdf/SKILL.md").display()
        )
    );
}

#[test]
fn a_mention_attaches_an_explicit_only_skill_in_exec_and_app_server() {
    let model = MockModel::start(replies(3));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let secret = root.join(".agents/skills/secret/SKILL.md");
    let attached = format!(
        "<skill>\n<name>secret</name>\n<path>{}</path>\n---\nname: secret\ndescription: Only when asked.\n---\n</skill>",
        secret.display()
    );
    rein_ok_with(
        home.path(),
        &[
            "exec",
            "--json",
            "-C",
            sub.to_str().unwrap(),
            "use $secret now",
        ],
        &[("HOME", user_home.path())],
    );
    let user = user_home.path().to_str().unwrap();
    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    let thread = server.start_thread(json!({ "cwd": sub }));
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "try $secret."}]}),
    );
    server.until(|m| method(m) == "turn/completed");
    let requests = model.requests();
    let last_user = crate::skills_activation::last_user;
    assert_eq!(
        last_user(&requests[0]),
        json!([{"type": "input_text", "text": "use $secret now"},
               {"type": "input_text", "text": attached}])
    );
    assert_eq!(
        last_user(&requests[1]),
        json!([{"type": "input_text", "text": "try $secret."},
               {"type": "input_text", "text": attached}])
    );
    assert!(server.finish().success());
}
