//! `skills/extraRoots/set` end to end: a client's extra skill roots (Codex's method:
//! absolute folders, for every directory of the server process, in memory only) are listed
//! by `skills/list` as user skills, offered to the model of threads started afterwards (a
//! running thread keeps its list), and followed by `skills/changed`; bad roots are refused
//! naming `extraRoots` and change nothing. Through a real `rein app-server` and a
//! `rein mock-model` recording the request bodies; every request this test sends is checked
//! against Codex's `ClientRequest.json`, every answer by the harness.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

use crate::project_context::replies;

/// Codex's schema of a client request.
fn client_request_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/codex-schema/ClientRequest.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Send `skills/extraRoots/set` with `roots`, checked against Codex's schema first; the
/// answer.
fn set_roots(server: &mut AppServer, schema: &jsonschema::Validator, roots: Value) -> Value {
    let params = json!({ "extraRoots": roots });
    let request = json!({"id": 99, "method": "skills/extraRoots/set", "params": params});
    let errors: Vec<String> = schema
        .iter_errors(&request)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{request} breaks Codex's schema: {errors:#?}"
    );
    server.call("skills/extraRoots/set", params)
}

/// `skills/list`'s skills of `cwd`: (name, scope, path).
fn listed(server: &mut AppServer, cwd: &Path) -> Vec<(String, String, String)> {
    let answer = server.call("skills/list", json!({ "cwds": [cwd] }));
    answer["result"]["data"][0]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap().to_owned();
            (text("name"), text("scope"), text("path"))
        })
        .collect()
}

/// The `<skills_instructions>` developer text of request `r`, if it has one.
fn skills_text(r: &Value) -> Option<String> {
    r["input"].as_array().unwrap().iter().find_map(|i| {
        let text = i["content"][0]["text"].as_str()?;
        (i["role"] == "developer" && text.contains("<skills_instructions>"))
            .then(|| text.to_owned())
    })
}

#[test]
fn extra_roots_are_listed_offered_to_new_threads_and_signalled() {
    let model = MockModel::start(replies(2));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    let cwd = std::fs::canonicalize(project.path()).unwrap();
    let extra = tempfile::tempdir().unwrap();
    let extra_root = std::fs::canonicalize(extra.path()).unwrap();
    let skill_md = extra_root.join("team-style/SKILL.md");
    std::fs::create_dir_all(skill_md.parent().unwrap()).unwrap();
    std::fs::write(
        &skill_md,
        "---\nname: team-style\ndescription: The team's code style.\n---\nUse tabs.\n",
    )
    .unwrap();
    let schema = client_request_schema();

    let mut server = AppServer::start_with_env(
        home.path(),
        &[],
        &[("HOME", user_home.path().to_str().unwrap())],
    );
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    assert_eq!(listed(&mut server, &cwd), vec![]);
    let before = server.start_thread(json!({ "cwd": cwd }));

    // A relative root, or a file, is refused naming the field; nothing changes and no
    // `skills/changed` follows.
    for bad in [json!(["skills"]), json!([extra_root, skill_md])] {
        let answer = set_roots(&mut server, &schema, bad.clone());
        assert_eq!(answer["error"]["code"], -32602, "{bad}: {answer}");
        assert_eq!(answer["error"]["data"]["field"], "extraRoots", "{answer}");
    }
    let id = server.request("skills/list", json!({ "cwds": [cwd] }));
    let seen = server.until(|m| m.get("id") == Some(&id));
    assert_eq!(seen.len(), 1, "only the answer: {seen:#?}");
    assert_eq!(seen[0]["result"]["data"][0]["skills"], json!([]));

    // Set: `{}`, then `skills/changed`; the root's skill is a user skill of every directory.
    let answer = set_roots(&mut server, &schema, json!([extra_root]));
    assert_eq!(answer["result"], json!({}));
    let mut changed = server.recv();
    assert!(changed["emittedAtMs"].is_u64(), "{changed}");
    changed.as_object_mut().unwrap().remove("emittedAtMs");
    assert_eq!(changed, json!({"method": "skills/changed", "params": {}}));
    let team = (
        "team-style".to_owned(),
        "user".to_owned(),
        skill_md.display().to_string(),
    );
    assert_eq!(listed(&mut server, &cwd), vec![team.clone()]);
    assert_eq!(listed(&mut server, user_home.path()), vec![team]);

    // A thread started now is offered it; the one started before keeps its (empty) list.
    let after = server.start_thread(json!({ "cwd": cwd }));
    server.turn(&before, "hello");
    server.turn(&after, "hello");
    let requests = model.requests();
    assert_eq!(skills_text(&requests[0]), None);
    let text = skills_text(&requests[1]).unwrap();
    assert!(
        text.contains(&format!(
            "### Skill roots\n- `r0` = `{}`\n### Available skills\n\
             - team-style: The team's code style. (file: r0/team-style/SKILL.md)\n\
             ### How to use skills\n",
            extra_root.display()
        )),
        "{text}"
    );

    // An empty list takes them away again.
    let answer = set_roots(&mut server, &schema, json!([]));
    assert_eq!(answer["result"], json!({}));
    assert_eq!(method(&server.recv()), "skills/changed");
    assert_eq!(listed(&mut server, &cwd), vec![]);
    assert!(server.finish().success());
}
