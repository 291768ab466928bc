//! The methods the Codex TUI calls around a session, over `rein app-server`'s stdio, each
//! answer checked against Codex's schema by the harness (or, for the methods Codex serves
//! without publishing a schema, compared with what Codex answered the TUI, recorded in the
//! TUI transcripts): the bootstrap answers, `initialize`'s version, a thread started
//! without a cwd, goals, background terminals, read state, items and turns page by page;
//! and an approval's choices, whose command-prefix rule lets later commands through, also
//! after the thread is resumed from its rollout.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, rein_in, AppServer, MockModel};

fn result(answer: Value) -> Value {
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"].clone()
}

#[test]
fn the_tuis_bootstrap_methods_answer_as_codex_does() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let mut server = AppServer::start(home.path(), &[]);
    let init = server.initialize();
    let agent = init["result"]["userAgent"].as_str().unwrap();
    let expected = format!(
        "rein/0.169.0 ({}; {}) rein-app-server/{} (rein_tests; 0.0.1)",
        std::env::consts::OS,
        std::env::consts::ARCH,
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(agent, expected);

    // Codex sends configRequirements/read without params.
    let id = server.request_bare("configRequirements/read");
    let answer = server.response(&id);
    assert_eq!(
        answer["result"],
        json!({ "requirements": null, "supportsIndependentSpeedModes": true })
    );
    assert_eq!(
        result(server.call("collaborationMode/list", json!({}))),
        json!({ "data": [
            { "name": "Default", "mode": "default", "model": null, "reasoning_effort": null }
        ] })
    );
    assert_eq!(
        result(server.call("hooks/list", json!({ "cwds": ["/w"], "threadId": null }))),
        json!({ "data": [{ "cwd": "/w", "hooks": [], "warnings": [], "errors": [] }] })
    );
    assert_eq!(
        result(server.call(
            "plugin/installed",
            json!({ "cwds": ["/w"], "installSuggestionPluginNames": null })
        )),
        json!({ "marketplaces": [], "marketplaceLoadErrors": [] })
    );
    assert_eq!(
        result(server.call("account/bedrock/checkGovCloudRequirements", json!({}))),
        json!({ "isGovCloud": false, "shouldWarn": false })
    );

    assert_eq!(
        result(server.call("plugin/list", json!({ "cwds": null }))),
        json!({ "marketplaces": [], "marketplaceLoadErrors": [], "featuredPluginIds": [] })
    );
    for empty in [
        "app/list",
        "experimentalFeature/list",
        "threadSection/list",
        "thread/attachment/list",
    ] {
        assert_eq!(
            result(server.call(empty, json!({}))),
            json!({ "data": [], "nextCursor": null }),
            "{empty}"
        );
    }
}

#[test]
fn a_thread_started_without_a_cwd_and_its_goal_terminals_and_read_state() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    // `cwd: null` runs the thread in the server's directory.
    let started = result(server.call("thread/start", json!({ "cwd": null })));
    let here = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(started["cwd"], json!(here));
    let thread = started["thread"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        result(server.call("hooks/list", json!({ "threadId": thread }))),
        json!({ "data": [{ "cwd": here, "hooks": [], "warnings": [], "errors": [] }] })
    );
    assert_eq!(
        result(server.call("thread/goal/get", json!({ "threadId": thread }))),
        json!({ "goal": null })
    );
    assert_eq!(
        result(server.call(
            "thread/backgroundTerminals/list",
            json!({ "threadId": thread, "cursor": null, "limit": null })
        )),
        json!({ "data": [], "nextCursor": null })
    );
    assert_eq!(
        result(server.call(
            "thread/readState/update",
            json!({ "threadId": thread, "operation": { "type": "read" },
                    "expectedRevision": "whatever" })
        )),
        json!({ "readState": { "firstUnread": null, "revision": "read" } })
    );
    let unknown = server.call(
        "thread/goal/get",
        json!({ "threadId": "01a234bf-5b89-7581-a52b-9506830f652b" }),
    );
    assert_eq!(unknown["error"]["code"], json!(-32600), "{unknown}");
}

#[test]
fn items_and_turns_come_page_by_page_in_either_direction() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let first = server.turn(&thread, "one");
    let second = server.turn(&thread, "two");
    let (first, second) = (
        &first["params"]["turn"]["id"],
        &second["params"]["turn"]["id"],
    );

    let page = |server: &mut AppServer, params: Value| {
        let r = result(server.call("thread/items/list", params));
        let texts: Vec<(Value, Value)> = r["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let item = &e["item"];
                let text = item
                    .get("text")
                    .cloned()
                    .unwrap_or_else(|| item["content"][0]["text"].clone());
                (e["turnId"].clone(), text)
            })
            .collect();
        (texts, r["nextCursor"].clone())
    };
    let (items, next) = page(
        &mut server,
        json!({ "threadId": thread, "limit": 3, "sortDirection": "desc" }),
    );
    assert_eq!(
        items,
        [
            (second.clone(), json!("echo: two")),
            (second.clone(), json!("two")),
            (first.clone(), json!("echo: one")),
        ]
    );
    let (items, next) = page(
        &mut server,
        json!({ "threadId": thread, "limit": 3, "sortDirection": "desc", "cursor": next }),
    );
    assert_eq!(items, [(first.clone(), json!("one"))]);
    assert_eq!(next, Value::Null);
    let (items, _) = page(&mut server, json!({ "threadId": thread, "turnId": first }));
    assert_eq!(
        items,
        [
            (first.clone(), json!("one")),
            (first.clone(), json!("echo: one"))
        ]
    );

    let turns = result(server.call(
        "thread/turns/list",
        json!({ "threadId": thread, "sortDirection": "asc", "itemsView": "notLoaded" }),
    ));
    let listed: Vec<(Value, Value, Value)> = turns["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].clone(), t["itemsView"].clone(), t["items"].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (first.clone(), json!("notLoaded"), json!([])),
            (second.clone(), json!("notLoaded"), json!([])),
        ]
    );
    let newest = result(server.call(
        "thread/turns/list",
        json!({ "threadId": thread, "limit": 1 }),
    ));
    assert_eq!(newest["data"][0]["id"], *second);
    assert_eq!(newest["nextCursor"], json!("1"));
}

/// The approval of `bash -lc SCRIPT` on `server`'s thread: its params.
fn asked(server: &mut AppServer) -> Value {
    server
        .until(|m| method(m) == "item/commandExecution/requestApproval")
        .pop()
        .unwrap()
}

#[test]
fn a_command_prefix_rule_lets_later_commands_through_also_after_a_resume() {
    let shell = |id: &str, script: &str| {
        json!({ "tool_calls": [{ "call_id": id, "name": "shell", "arguments": {
            "command": ["bash", "-lc", script], "with_escalated_permissions": true,
            "justification": "outside" } }] })
    };
    let model = MockModel::start(json!({
        "replies": [
            shell("call_1", r"printf 'rule-%s\n' one"),
            { "text": "ran one" },
            shell("call_2", r"printf 'rule-%s\n' one two"),
            { "text": "ran two" },
            shell("call_3", r"printf 'rule-%s\n' one; echo chained"),
            { "text": "declined three" },
            shell("call_4", r"printf 'rule-%s\n' one four"),
            { "text": "ran four" }
        ],
        "when_exhausted": "error"
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "on-request", "sandbox": "read-only"
    }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "one" }] }),
    );
    let ask = asked(&mut server);
    let mut params = ask["params"].clone();
    params.as_object_mut().unwrap().remove("startedAtMs");
    params.as_object_mut().unwrap().remove("turnId");
    let rule = json!(["printf", r"rule-%s\n", "one"]);
    assert_eq!(
        params,
        json!({
            "threadId": thread, "itemId": "call_1",
            "reason": "the command asks to run outside the sandbox: outside",
            "command": r#"bash -lc "printf 'rule-%s\\n' one""#,
            "cwd": cwd.path(),
            "commandActions": [{ "type": "unknown", "command": r"printf 'rule-%s\n' one" }],
            "proposedExecpolicyAmendment": rule,
            "availableDecisions": [
                "accept",
                { "acceptWithExecpolicyAmendment": { "execpolicy_amendment": rule } },
                "cancel"
            ]
        })
    );
    server.send(&json!({ "id": ask["id"], "result": { "decision":
        { "acceptWithExecpolicyAmendment": { "execpolicy_amendment": rule } } } }));
    server.until(|m| method(m) == "turn/completed");

    // The rule covers a longer command with the same words first, without asking.
    let seen = {
        server.request(
            "turn/start",
            json!({ "threadId": thread, "input": [{ "type": "text", "text": "two" }] }),
        );
        server.until(|m| method(m) == "turn/completed")
    };
    assert!(
        !seen
            .iter()
            .any(|m| method(m) == "item/commandExecution/requestApproval"),
        "asked again: {seen:#?}"
    );
    // Not a script that chains another command after the same words.
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "three" }] }),
    );
    let ask = asked(&mut server);
    assert_eq!(ask["params"]["itemId"], "call_3");
    assert_eq!(ask["params"]["proposedExecpolicyAmendment"], Value::Null);
    assert_eq!(
        ask["params"]["availableDecisions"],
        json!(["accept", "cancel"])
    );
    server.send(&json!({ "id": ask["id"], "result": { "decision": "decline" } }));
    server.until(|m| method(m) == "turn/completed");
    server.finish();

    // A new server resumes the thread from its rollout: the rule still holds.
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    result(server.call("thread/resume", json!({ "threadId": thread })));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "four" }] }),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    assert!(
        !seen
            .iter()
            .any(|m| method(m) == "item/commandExecution/requestApproval"),
        "asked after the resume: {seen:#?}"
    );
    let done: Vec<&Value> = seen
        .iter()
        .filter(|m| method(m) == "item/completed" && m["params"]["item"]["id"] == "call_4")
        .collect();
    assert_eq!(done.len(), 1, "{seen:#?}");
    assert_eq!(
        done[0]["params"]["item"]["aggregatedOutput"],
        "rule-one\nrule-four\n"
    );
    server.finish();

    // A replay answers as recorded, rule included (nothing runs).
    let out = rein_in(home.path(), &["replay", &thread]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        (out.status.code(), stdout.as_ref()),
        (Some(0), "identical: 4 turns, 8 steps identical\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A live replay never takes a rule from the file (a rollout is a file anyone can
    // edit): what the rule let through is declined, and the replay says so.
    let out = rein_in(home.path(), &["replay", &thread, "--tools", "live"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with(
            "differs at step 1 (turn 1, step 1 of the turn): tool outcome of call 0\n"
        ) && stdout.contains("+declined by policy\n"),
        "{stdout}"
    );
}
