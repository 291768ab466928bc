//! `skills/config/write` end to end: a skill switched off by path or by name is a
//! `[[skills.config]]` entry of the server's `config.toml` (Codex's shape, the file's other
//! lines untouched), is listed with `enabled: false`, is neither in the model's skills list
//! nor attachable by a mention, and stays off after a restart; switched back on, it is
//! offered again. Through a real `rein app-server` and a `rein mock-model` recording the
//! request bodies; every answer is checked against Codex's schema by the harness.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, rein_in, AppServer, MockModel};

use crate::project_context::{replies, skills_repo};
use crate::skills_activation::last_user;

/// `skills/list`'s `enabled` of each skill, by name, in the listed order.
fn enabled(server: &mut AppServer, cwd: &std::path::Path) -> Vec<(String, bool)> {
    let listed = server.call("skills/list", json!({"cwds": [cwd]}));
    listed["result"]["data"][0]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["enabled"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn states(list: &[(&str, bool)]) -> Vec<(String, bool)> {
    list.iter().map(|(n, e)| ((*n).to_owned(), *e)).collect()
}

/// The text of the developer message listing the skills in request `r`.
fn skills_list(r: &Value) -> String {
    r["input"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_disabled_skill_is_listed_off_never_offered_nor_attached_and_stays_off() {
    let model = MockModel::start(replies(2));
    let home = home_for(&model);
    let config = home.path().join("config.toml");
    let before = std::fs::read_to_string(&config).unwrap();
    let user_home = tempfile::tempdir().unwrap();
    let user = user_home.path().to_str().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let pdf = root.join(".agents/skills/pdf/SKILL.md");

    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));

    // Bad selectors are refused, naming the field, and write nothing.
    let refusals = [
        (json!({"enabled": false}), "path"),
        (
            json!({"enabled": false, "name": "pdf", "path": pdf}),
            "path",
        ),
        (json!({"enabled": false, "path": "pdf/SKILL.md"}), "path"),
        (
            json!({"enabled": false, "path": root.join("AGENTS.md")}),
            "path",
        ),
        (json!({"enabled": false, "name": " "}), "name"),
    ];
    for (params, field) in refusals {
        let answer = server.call("skills/config/write", params.clone());
        assert_eq!(answer["error"]["code"], -32602, "{params}: {answer}");
        assert_eq!(
            answer["error"]["data"]["field"], field,
            "{params}: {answer}"
        );
    }
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);

    // Off by path (the implicit `pdf`) and by name (the explicit-only `secret`).
    let off = server.call(
        "skills/config/write",
        json!({"path": pdf, "enabled": false}),
    );
    assert_eq!(off["result"], json!({"effectiveEnabled": false}));
    let off = server.call(
        "skills/config/write",
        json!({"name": "secret", "enabled": false}),
    );
    assert_eq!(off["result"], json!({"effectiveEnabled": false}));
    let entries = format!(
        "\n[[skills.config]]\npath = \"{}\"\nenabled = false\n\n[[skills.config]]\nname = \"secret\"\nenabled = false\n",
        pdf.display()
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        format!("{before}{entries}")
    );
    let listed_off = states(&[
        ("review", true),
        ("pdf", false),
        ("secret", false),
        ("deploy", true),
    ]);
    assert_eq!(enabled(&mut server, &sub), listed_off);

    // A new thread's model is offered only `review`; `$secret` attaches nothing.
    let thread = server.start_thread(json!({ "cwd": sub }));
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "use $secret and $pdf"}]}),
    );
    server.until(|m| method(m) == "turn/completed");
    let first = &model.requests()[0];
    let list = skills_list(first);
    assert!(
        list.contains(&format!(
            "### Skill roots\n- `r0` = `{}`\n### Available skills\n\
             - review: Review a diff. (file: r0/review/SKILL.md)\n### How to use skills\n",
            root.join("sub/.claude/skills").display()
        )),
        "{list}"
    );
    assert_eq!(
        last_user(first),
        json!([{"type": "input_text", "text": "use $secret and $pdf"}])
    );
    assert!(server.finish().success());

    // The entries are the configuration: a restarted server (and `rein skills list`) keeps
    // the skills off; switched back on by the same path, `pdf` is offered again.
    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    assert_eq!(enabled(&mut server, &sub), listed_off);
    let out = rein_in(
        home.path(),
        &["skills", "list", "-C", sub.to_str().unwrap()],
    )
    .env("HOME", user)
    .output()
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("pdf\trepo (disabled)\t{}\n", pdf.display())),
        "{text}"
    );
    let on = server.call("skills/config/write", json!({"path": pdf, "enabled": true}));
    assert_eq!(on["result"], json!({"effectiveEnabled": true}));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        format!(
            "{before}\n[[skills.config]]\nname = \"secret\"\nenabled = false\n\n[[skills.config]]\npath = \"{}\"\nenabled = true\n",
            pdf.display()
        )
    );
    let thread = server.start_thread(json!({ "cwd": sub }));
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "go"}]}),
    );
    server.until(|m| method(m) == "turn/completed");
    let list = skills_list(&model.requests()[1]);
    assert!(
        list.contains("- pdf: Fill PDF forms. (file: r1/pdf/SKILL.md)\n"),
        "{list}"
    );
    assert!(server.finish().success());
}
