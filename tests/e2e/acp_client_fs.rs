//! `rein acp` with a client that reads and writes files and runs terminals for rein (what
//! its `clientCapabilities` offer), end to end through the real binary: `read_file` gets
//! the editor's unsaved text, `apply_patch` reads and writes through the editor and never
//! touches the disk itself, a write outside the writable roots is refused before the
//! client hears of it, shell commands run in the editor's terminals (when `[acp]
//! client_terminals` asks for it) with the policy applied first, killed at their timeout
//! and when the turn is cancelled; a client that offers nothing gets rein's own files and
//! processes.
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{
    home_for, home_with_terminals, is_answer, method, output_for, reject_once, requests, serve,
    session_with, updates, MockModel,
};

/// Offers files, not terminals.
fn editor_files() -> Value {
    json!({ "fs": { "readTextFile": true, "writeTextFile": true } })
}

/// The `tool_call_update`s of call `call_id`.
fn card_updates(seen: &[Value], call_id: &str) -> Vec<Value> {
    updates(seen)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == call_id)
        .collect()
}

fn one_call_model(call_id: &str, name: &str, arguments: Value) -> MockModel {
    MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": call_id, "name": name, "arguments": arguments }] },
            { "text": "Done." }
        ],
        "when_exhausted": "echo"
    }))
}

#[test]
fn read_file_returns_the_editors_unsaved_text_not_the_disks() {
    let model = one_call_model("call_read", "read_file", json!({ "path": "notes.txt" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let file = cwd_path.join("notes.txt");
    std::fs::write(&file, "saved on disk\n").unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_files());
    let id = acp.prompt(&session, "Read the notes.");
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "fs/read_text_file" => Ok(json!({ "content": "unsaved in the editor\n" })),
        other => panic!("unexpected request {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    // One more line than the model asked for tells whether more follow.
    assert_eq!(
        requests(&seen),
        vec![json!({ "method": "fs/read_text_file", "params": {
            "sessionId": session, "path": file, "line": 1, "limit": 2001
        } })]
    );
    assert_eq!(
        output_for(&model, "call_read"),
        json!("     1\tunsaved in the editor\n")
    );
    assert_eq!(
        card_updates(&seen, "call_read"),
        vec![json!({
            "sessionUpdate": "tool_call_update", "toolCallId": "call_read", "status": "completed",
            "content": [{ "type": "content", "content": { "type": "text",
                "text": "```\n     1\tunsaved in the editor\n```" } }],
            "rawOutput": { "type": "returned", "text": "     1\tunsaved in the editor\n" }
        })]
    );
    acp.finish();
}

#[test]
fn apply_patch_reads_and_writes_through_the_editor_and_leaves_the_disk_alone() {
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-TWO\n+three\n\
                 *** Add File: b.txt\n+new\n*** End Patch\n";
    let model = one_call_model("call_patch", "apply_patch", json!({ "input": patch }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (a, b) = (cwd_path.join("a.txt"), cwd_path.join("b.txt"));
    std::fs::write(&a, "one\ntwo\n").unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_files());
    let id = acp.prompt(&session, "Patch it.");
    // The editor's buffer of a.txt has an unsaved change the patch's context relies on.
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "fs/read_text_file" => Ok(json!({ "content": "one\nTWO\n" })),
        "fs/write_text_file" => Ok(Value::Null),
        other => panic!("unexpected request {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    assert_eq!(
        requests(&seen),
        vec![
            json!({ "method": "fs/read_text_file", "params": { "sessionId": session, "path": a } }),
            json!({ "method": "fs/write_text_file", "params": {
                "sessionId": session, "path": a, "content": "one\nthree\n" } }),
            json!({ "method": "fs/write_text_file", "params": {
                "sessionId": session, "path": b, "content": "new\n" } }),
        ]
    );
    // rein wrote nothing itself.
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "one\ntwo\n");
    assert!(!b.exists());
    // The card's facts are those of a patch on disk.
    assert_eq!(
        card_updates(&seen, "call_patch"),
        vec![json!({
            "sessionUpdate": "tool_call_update", "toolCallId": "call_patch", "status": "completed",
            "content": [
                { "type": "diff", "path": a, "oldText": "one\nTWO\n", "newText": "one\nthree\n" },
                { "type": "diff", "path": b, "newText": "new\n" }
            ],
            "rawOutput": { "type": "patched", "changes": [
                { "path": a, "kind": "update",
                  "unified_diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-TWO\n+three\n" },
                { "path": b, "kind": "add",
                  "unified_diff": "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+new\n" }
            ] }
        })]
    );
    acp.finish();
}

#[test]
fn a_write_outside_the_writable_roots_is_refused_before_the_editor_hears_of_it() {
    let outside = rein_test_support::dir_outside_the_temp_dir(env!("CARGO_TARGET_TMPDIR").as_ref());
    let target = outside.path().canonicalize().unwrap().join("x.txt");
    let patch = format!(
        "*** Begin Patch\n*** Add File: {}\n+escaped\n*** End Patch\n",
        target.display()
    );
    let model = one_call_model("call_out", "apply_patch", json!({ "input": patch }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_files());
    let id = acp.prompt(&session, "Write outside.");
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "session/request_permission" => Ok(reject_once()),
        other => panic!("the client was asked {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let asked: Vec<Value> = requests(&seen)
        .iter()
        .map(|r| r["method"].clone())
        .collect();
    assert_eq!(asked, vec![json!("session/request_permission")]);
    assert_eq!(
        card_updates(&seen, "call_out").last().unwrap()["rawOutput"],
        json!({ "type": "declined", "by": "user", "reason": "the user denied this action" })
    );
    assert!(!target.exists());
    acp.finish();
}

fn editor_terminals() -> Value {
    json!({ "terminal": true })
}

/// The client's side of a terminal that exits 0 having printed "`command` ran in the
/// editor": terminal ids are `term-1`, `term-2`... in order of creation.
#[derive(Default)]
struct Terminals {
    commands: Vec<String>,
}

impl Terminals {
    fn answer(&mut self, name: &str, params: &Value) -> Result<Value, Value> {
        let index = |params: &Value| {
            let id = params["terminalId"].as_str().unwrap();
            id.trim_start_matches("term-").parse::<usize>().unwrap() - 1
        };
        match name {
            "terminal/create" => {
                self.commands
                    .push(params["command"].as_str().unwrap().to_owned());
                Ok(json!({ "terminalId": format!("term-{}", self.commands.len()) }))
            }
            "terminal/wait_for_exit" => Ok(json!({ "exitCode": 0 })),
            "terminal/output" => Ok(json!({
                "output": format!("{} ran in the editor\n", self.commands[index(params)]),
                "truncated": false, "exitStatus": { "exitCode": 0 }
            })),
            "terminal/release" => Ok(Value::Null),
            "session/request_permission" => {
                Ok(json!({ "outcome": { "outcome": "selected", "optionId": "allow_once" } }))
            }
            other => panic!("unexpected request {other}"),
        }
    }
}

/// The text and exit code the model read from a shell call's output.
fn shell_output(model: &MockModel, call_id: &str) -> (String, i64) {
    let output: Value = serde_json::from_str(output_for(model, call_id).as_str().unwrap()).unwrap();
    (
        output["output"].as_str().unwrap().to_owned(),
        output["metadata"]["exit_code"].as_i64().unwrap(),
    )
}

#[test]
fn shell_commands_run_in_the_editors_terminal_after_the_policy_and_their_output_reaches_the_model()
{
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_ls", "name": "shell",
                "arguments": { "command": ["ls"] } }] },
            { "tool_calls": [{ "call_id": "call_make", "name": "shell",
                "arguments": { "command": ["make", "build"], "env": { "JOBS": "2" } } }] },
            { "text": "Built." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_with_terminals(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_terminals());
    let id = acp.prompt(&session, "Build it.");
    let mut terminals = Terminals::default();
    let (seen, answer) = serve(&mut acp, &id, |name, params| terminals.answer(name, params));
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let terminal = |n: u32| json!({ "sessionId": session, "terminalId": format!("term-{n}") });
    let asked = requests(&seen);
    // A known read-only command runs at once; any other runs outside rein's sandbox only
    // once the user allowed it.
    assert_eq!(
        asked
            .iter()
            .filter(|r| r["method"] != "session/request_permission")
            .cloned()
            .collect::<Vec<_>>(),
        vec![
            json!({ "method": "terminal/create", "params": {
                "sessionId": session, "command": "ls", "cwd": cwd_path, "outputByteLimit": 32768 } }),
            json!({ "method": "terminal/wait_for_exit", "params": terminal(1) }),
            json!({ "method": "terminal/output", "params": terminal(1) }),
            json!({ "method": "terminal/release", "params": terminal(1) }),
            json!({ "method": "terminal/create", "params": {
                "sessionId": session, "command": "make", "args": ["build"],
                "env": [{ "name": "JOBS", "value": "2" }],
                "cwd": cwd_path, "outputByteLimit": 32768 } }),
            json!({ "method": "terminal/wait_for_exit", "params": terminal(2) }),
            json!({ "method": "terminal/output", "params": terminal(2) }),
            json!({ "method": "terminal/release", "params": terminal(2) }),
        ]
    );
    let permission = asked
        .iter()
        .position(|r| r["method"] == "session/request_permission")
        .unwrap();
    assert_eq!(
        permission, 4,
        "asked before the second terminal: {asked:#?}"
    );
    assert_eq!(
        asked[4]["params"]["toolCall"]["content"][0]["content"]["text"],
        json!("the command asks to run outside the sandbox: it runs in the editor's terminal, outside rein's sandbox")
    );
    assert_eq!(
        shell_output(&model, "call_ls"),
        ("ls ran in the editor\n".to_owned(), 0)
    );
    assert_eq!(
        shell_output(&model, "call_make"),
        ("make ran in the editor\n".to_owned(), 0)
    );
    // The card shows the editor's terminal from its creation to the end.
    let shown = json!([{ "type": "terminal", "terminalId": "term-1" }]);
    assert_eq!(
        card_updates(&seen, "call_ls"),
        vec![
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": "call_ls", "content": shown }),
            json!({
                "sessionUpdate": "tool_call_update", "toolCallId": "call_ls", "status": "completed",
                "content": shown,
                "rawOutput": { "type": "exited", "exit": { "type": "code", "code": 0 },
                               "output": "ls ran in the editor\n" }
            }),
        ]
    );
    acp.finish();
}

#[test]
fn a_command_in_the_editors_terminal_is_killed_at_its_timeout() {
    let model = one_call_model(
        "call_slow",
        "shell",
        json!({ "command": ["ls", "-R"], "timeout_ms": 300 }),
    );
    let home = home_with_terminals(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_terminals());
    let id = acp.prompt(&session, "List everything.");
    let create = acp.until(|m| method(m) == "terminal/create").pop().unwrap();
    acp.send(&json!({ "jsonrpc": "2.0", "id": create["id"], "result": { "terminalId": "slow" } }));
    // The command never exits by itself: the wait stays unanswered.
    let wait = acp
        .until(|m| method(m) == "terminal/wait_for_exit")
        .pop()
        .unwrap();
    let (seen, answer) = serve(&mut acp, &id, |name, params| {
        assert_eq!(
            params,
            &json!({ "sessionId": session, "terminalId": "slow" })
        );
        match name {
            "terminal/kill" | "terminal/release" => Ok(Value::Null),
            "terminal/output" => Ok(json!({ "output": "partial\n", "truncated": false,
                                            "exitStatus": { "signal": "SIGKILL" } })),
            other => panic!("unexpected request {other}"),
        }
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let methods: Vec<Value> = requests(&seen)
        .iter()
        .map(|r| r["method"].clone())
        .collect();
    assert_eq!(
        methods,
        vec![
            json!("terminal/kill"),
            json!("terminal/output"),
            json!("terminal/release")
        ]
    );
    assert!(
        seen.iter()
            .any(|m| method(m) == "$/cancel_request" && m["params"]["requestId"] == wait["id"]),
        "the wait is withdrawn: {seen:#?}"
    );
    assert_eq!(
        shell_output(&model, "call_slow"),
        (
            "command timed out after 300 ms and was killed\npartial\n".to_owned(),
            124
        )
    );
    assert_eq!(
        card_updates(&seen, "call_slow").last().unwrap()["rawOutput"],
        json!({ "type": "exited", "exit": { "type": "timed_out", "after_ms": 300 },
                "output": "partial\n" })
    );
    acp.finish();
}

#[test]
fn cancelling_the_turn_kills_and_releases_the_editors_terminal() {
    let model = one_call_model("call_wait", "shell", json!({ "command": ["ls"] }));
    let home = home_with_terminals(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_terminals());
    let id = acp.prompt(&session, "Wait.");
    let create = acp.until(|m| method(m) == "terminal/create").pop().unwrap();
    acp.send(&json!({ "jsonrpc": "2.0", "id": create["id"], "result": { "terminalId": "t" } }));
    let wait = acp
        .until(|m| method(m) == "terminal/wait_for_exit")
        .pop()
        .unwrap();
    acp.notify("session/cancel", json!({ "sessionId": session }));
    // The prompt's answer, the withdrawn wait, the kill and the release, in whatever order
    // the session's tasks send them.
    let (mut answered, mut withdrawn, mut killed, mut released) = (None, false, false, false);
    while answered.is_none() || !withdrawn || !killed || !released {
        let m = acp.recv();
        if is_answer(&m, &id) {
            answered = Some(m["result"].clone());
            continue;
        }
        match method(&m) {
            "$/cancel_request" => withdrawn |= m["params"]["requestId"] == wait["id"],
            "terminal/kill" | "terminal/release" => {
                assert_eq!(
                    m["params"],
                    json!({ "sessionId": session, "terminalId": "t" })
                );
                killed |= method(&m) == "terminal/kill";
                released |= method(&m) == "terminal/release";
                acp.send(&json!({ "jsonrpc": "2.0", "id": m["id"], "result": null }));
            }
            _ => {}
        }
    }
    assert_eq!(answered, Some(json!({ "stopReason": "cancelled" })));
    acp.finish();
}

#[test]
fn a_client_that_offers_nothing_gets_reins_own_files_and_processes() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_read", "name": "read_file",
                "arguments": { "path": "notes.txt" } }] },
            { "tool_calls": [{ "call_id": "call_patch", "name": "apply_patch", "arguments": {
                "input": "*** Begin Patch\n*** Add File: new.txt\n+on disk\n*** End Patch\n" } }] },
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell", "arguments": {
                "command": ["touch", "ran.txt"], "with_escalated_permissions": true } }] },
            { "text": "Done." }
        ],
        "when_exhausted": "echo"
    }));
    // Terminals offered, but the configuration does not ask for them; files not offered.
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    std::fs::write(cwd_path.join("notes.txt"), "saved on disk\n").unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, editor_terminals());
    let id = acp.prompt(&session, "Do it all.");
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "session/request_permission" => {
            Ok(json!({ "outcome": { "outcome": "selected", "optionId": "allow_once" } }))
        }
        other => panic!("the client was asked {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    assert_eq!(requests(&seen).len(), 1, "only the permission");
    assert_eq!(
        output_for(&model, "call_read"),
        json!("     1\tsaved on disk\n")
    );
    assert_eq!(
        std::fs::read_to_string(cwd_path.join("new.txt")).unwrap(),
        "on disk\n"
    );
    assert!(cwd_path.join("ran.txt").exists());
    acp.finish();
}
