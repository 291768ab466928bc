//! A skill's activation is a fact of the session: Codex's `skill` input item (and a `$name`
//! mention) attaches the skill's `SKILL.md` as read then, the user message records which
//! skill, which file and which bytes, and `thread/read` (after a restart too),
//! `rein sessions show` and `rein replay` know it. Through a real `rein app-server` and a
//! `rein mock-model` recording the request bodies; every message is checked against
//! Codex's schema by the harness.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, rein_in, AppServer, MockModel};

use crate::project_context::{replies, skills_repo};

/// The content of the last user message of the request `r`.
pub(crate) fn last_user(r: &Value) -> Value {
    r["input"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|i| i["role"] == "user")
        .unwrap()["content"]
        .clone()
}

fn user_items(read: &Value) -> Vec<Value> {
    read["result"]["thread"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["items"].as_array().unwrap().clone())
        .filter(|i| i["type"] == "userMessage")
        .map(|i| i["content"].clone())
        .collect()
}

#[test]
fn a_skill_item_attaches_its_file_and_the_session_remembers_which_bytes() {
    let model = MockModel::start(replies(2));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let user = user_home.path().to_str().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let pdf = root.join(".agents/skills/pdf/SKILL.md");
    let pdf_text = std::fs::read_to_string(&pdf).unwrap();
    let attached = format!(
        "<skill>\n<name>pdf</name>\n<path>{}</path>\n{}\n</skill>",
        pdf.display(),
        pdf_text.trim_end()
    );

    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": sub }));
    // A skill no directory of the turn has is refused, naming it, and starts nothing.
    let refused = server.call(
        "turn/start",
        json!({"threadId": thread, "input": [
            {"type": "text", "text": "go"},
            {"type": "skill", "name": "nope", "path": ""}
        ]}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid params: no skill named nope in "),
        "{refused}"
    );
    // Nor can a client pass another file off as a known skill's.
    let elsewhere = server.call(
        "turn/start",
        json!({"threadId": thread, "input": [
            {"type": "skill", "name": "pdf", "path": root.join("AGENTS.md")}
        ]}),
    );
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");

    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [
            {"type": "text", "text": "fill the form"},
            {"type": "skill", "name": "pdf", "path": pdf}
        ]}),
    );
    server.until(|m| method(m) == "turn/completed");
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "the refused inputs reached the model");
    // `pdf` names the MCP server `pdf-server`, which is not configured: a notice follows
    // the skill (docs/skills.md, "A skill's MCP dependency").
    let notice = "<skill_dependency_error>The skill `pdf` depends on an MCP server that is \
                  not available: the MCP server `pdf-server` is not configured \
                  ([mcp_servers.pdf-server] in config.toml). Its tools are not available in \
                  this session.</skill_dependency_error>";
    assert_eq!(
        last_user(&requests[0]),
        json!([{"type": "input_text", "text": "fill the form"},
               {"type": "input_text", "text": attached},
               {"type": "input_text", "text": notice}])
    );

    // The user message shows the skill as the client sent it, live and after a restart.
    let shown = vec![json!([
        {"type": "text", "text": "fill the form", "text_elements": []},
        {"type": "skill", "name": "pdf", "path": pdf},
        {"type": "text", "text": notice, "text_elements": []}
    ])];
    let read = json!({"threadId": thread, "includeTurns": true});
    assert_eq!(user_items(&server.call("thread/read", read.clone())), shown);
    assert!(server.finish().success());
    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    assert_eq!(user_items(&server.call("thread/read", read)), shown);
    assert!(server.finish().success());

    // `rein sessions show` names the skill, its file and the bytes it read.
    let out = rein_in(home.path(), &["sessions", "show", &thread])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    let sha = sha256sum(&pdf);
    assert!(
        shown.contains(&format!(
            "\nuser: fill the form\n{notice}\n  skill pdf ({}, sha256 {})\n",
            pdf.display(),
            &sha[..12]
        )),
        "{shown}"
    );

    // A replay sends the file as it is now: unchanged, the session replays identically;
    // edited, the step's input differs and the diff shows the new line.
    let replay = || {
        let out = rein_in(home.path(), &["replay", &thread]).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(
        replay(),
        (
            Some(0),
            "identical: 1 turns, 1 steps identical\n".to_owned()
        )
    );
    std::fs::write(&pdf, format!("{pdf_text}Then check every field.\n")).unwrap();
    let (code, stdout) = replay();
    assert_eq!(code, Some(1), "{stdout}");
    // Item 2: the prefix's two messages, then the user message holding the skill.
    let changed = format!("+      \"sha256\": \"{}\",\n", sha256sum(&pdf));
    assert!(
        stdout.starts_with("differs at step 1 (turn 1, step 1 of the turn): input item 2\n")
            && stdout.contains(&changed)
            && stdout.contains("Use pdftk.\\nThen check every field.\\n</skill>"),
        "{stdout}"
    );
}

/// SHA-256 in hex of `path`'s bytes, by coreutils' `sha256sum` (not rein's own hashing).
pub(crate) fn sha256sum(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

#[test]
fn rein_acp_offers_each_skill_as_a_slash_command_that_attaches_it() {
    use rein_test_support::acp::{is_answer, Acp};
    let model = MockModel::start(replies(1));
    let home = home_for(&model);
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let secret = root.join(".agents/skills/secret/SKILL.md");
    let attached = format!(
        "<skill>\n<name>secret</name>\n<path>{}</path>\n{}\n</skill>",
        secret.display(),
        std::fs::read_to_string(&secret).unwrap().trim_end()
    );

    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (_, answer) = acp.call("session/new", json!({ "cwd": sub, "mcpServers": [] }));
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let update = acp.recv();
    let names: Vec<&str> = update["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // rein's commands, then the skills (explicit-only ones included); the `review` skill
    // does not shadow rein's `/review`.
    assert_eq!(
        names,
        ["compact", "review", "fork", "model", "goal", "pdf", "secret", "deploy"]
    );

    let id = acp.prompt(&session, "/secret do it now");
    let (_, answer) = acp.answer_to(&id);
    assert!(is_answer(&answer, &id) && answer["result"]["stopReason"] == "end_turn");
    assert_eq!(
        last_user(&model.requests()[0]),
        json!([{"type": "input_text", "text": "do it now"},
               {"type": "input_text", "text": attached}])
    );
    acp.finish();
}

#[test]
fn editing_a_listed_skill_sends_skills_changed_and_a_broken_one_shows_in_errors() {
    let model = MockModel::start(replies(0));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let pdf = root.join(".agents/skills/pdf/SKILL.md");
    let mut server = AppServer::start_with_env(
        home.path(),
        &[],
        &[("HOME", user_home.path().to_str().unwrap())],
    );
    server.initialize();
    let list = |server: &mut AppServer| {
        let listed = server.call("skills/list", json!({ "cwds": [sub] }));
        listed["result"]["data"][0].clone()
    };
    let description = |entry: &Value| {
        entry["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "pdf")
            .map(|s| s["description"].clone())
    };
    assert_eq!(
        description(&list(&mut server)),
        Some(json!("Fill PDF forms."))
    );

    // An edit, as an editor saves: the client is told, and lists the new description.
    std::fs::write(
        &pdf,
        "---\nname: pdf\ndescription: Fill PDF forms, carefully.\n---\n",
    )
    .unwrap();
    let changed = server
        .until(|m| method(m) == "skills/changed")
        .pop()
        .unwrap();
    assert_eq!(changed["params"], json!({}));
    assert_eq!(
        description(&list(&mut server)),
        Some(json!("Fill PDF forms, carefully."))
    );

    // A new skill folder under a watched root is a change too; a malformed file is an
    // error entry beside the skills that still load.
    let broken = root.join(".agents/skills/half/SKILL.md");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, "---\nname: half\n---\n").unwrap();
    server.until(|m| method(m) == "skills/changed");
    let entry = list(&mut server);
    assert!(
        entry["errors"].as_array().unwrap().contains(&json!({
            "path": broken.display().to_string(),
            "message": "missing field `description`"
        })),
        "{entry}"
    );
    assert!(description(&entry).is_some());
    assert!(server.finish().success());
}
