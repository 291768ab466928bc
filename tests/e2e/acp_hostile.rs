//! `rein acp` against hostile input, through the real binary: a model that dresses
//! commands up as read-only ones to run them unasked in the editor's terminal (outside
//! rein's sandbox), a sandboxed command that swaps a symlink in while the editor writes a
//! patched file, an editor line that is not UTF-8, a terminal output of 100 MiB. The link
//! race runs as root and again as `nobody` (the sandboxed command then runs in a user
//! namespace, and the editor writes with a user's rights); the other attacks do not depend
//! on who runs rein (rein judges argv, `env` and bytes the same for every user).
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;
use rein_test_support::fs_events;
use rein_test_support::unprivileged;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{
    home_with_terminals, output_for, reject_once, requests, serve, session_with, Acp, MockModel,
};

/// A model that makes each of `calls` (shell arguments) in turn, one per reply.
fn shell_calls_model(calls: &[Value]) -> MockModel {
    let replies: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, arguments)| {
            json!({ "tool_calls": [{ "call_id": format!("call_{i}"), "name": "shell",
                                     "arguments": arguments }] })
        })
        .chain([json!({ "text": "Done." })])
        .collect();
    MockModel::start(json!({ "replies": replies, "when_exhausted": "echo" }))
}

#[test]
fn commands_dressed_as_read_only_ones_are_asked_before_the_editors_terminal_runs_them() {
    let calls = [
        json!({ "command": ["sort", "-o/outside/x", "in"] }),
        json!({ "command": ["sort", "--out=/outside/x", "in"] }),
        json!({ "command": ["sort", "--compress-program=sh", "in"] }),
        json!({ "command": ["bash", "-c", "ls"], "env": { "BASH_ENV": "evil.sh" } }),
        json!({ "command": ["git", "status"],
                "env": { "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
                         "GIT_CONFIG_VALUE_0": "touch /outside/x" } }),
        json!({ "command": ["cat", "f"], "env": { "LD_PRELOAD": "/tmp/evil.so" } }),
        json!({ "command": ["git", "branch", "-D", "victim"] }),
        json!({ "command": ["./ls"] }),
    ];
    let model = shell_calls_model(&calls);
    let home = home_with_terminals(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, json!({ "terminal": true }));
    let id = acp.prompt(&session, "Look around.");
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "session/request_permission" => Ok(reject_once()),
        other => panic!("the editor was asked {other} for a command nobody allowed"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let asked: Vec<Value> = requests(&seen)
        .iter()
        .map(|r| r["params"]["toolCall"]["toolCallId"].clone())
        .collect();
    let every_call: Vec<Value> = (0..calls.len())
        .map(|i| json!(format!("call_{i}")))
        .collect();
    assert_eq!(
        asked, every_call,
        "one permission request per call, nothing else"
    );
    for i in 0..calls.len() {
        let output = output_for(&model, &format!("call_{i}"));
        assert_eq!(output, json!("the user denied this action"), "call_{i}");
    }
    acp.finish();
}

#[test]
fn a_line_that_is_not_utf8_is_answered_with_a_parse_error_and_the_agent_serves_on() {
    let model = shell_calls_model(&[]);
    let home = support::home_for(&model);
    let mut acp = Acp::start(home.path());
    acp.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\xff\xfe\"}\n");
    assert_eq!(
        acp.recv(),
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "Parse error",
                "data": { "line": "(a line that is not UTF-8)" } } })
    );
    // Still serving: the session and its prompt go through.
    acp.initialize();
    let session = acp.new_session(&std::env::current_dir().unwrap());
    let id = acp.prompt(&session, "Hello.");
    let (_, done) = acp.answer_to(&id);
    assert_eq!(done["result"], json!({ "stopReason": "end_turn" }));
    acp.finish();
}

#[test]
fn a_100_mib_output_of_the_editors_terminal_reaches_the_model_bounded() {
    let model = shell_calls_model(&[json!({ "command": ["ls"] })]);
    let home = home_with_terminals(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let (mut acp, session) = session_with(home.path(), &cwd_path, json!({ "terminal": true }));
    let id = acp.prompt(&session, "List.");
    // An editor that ignores `outputByteLimit`: 100 MiB, ending in a line to find.
    let mut huge = "x".repeat(100 << 20);
    huge.push_str("\nthe end\n");
    let (_, answer) = serve(&mut acp, &id, |name, _| match name {
        "terminal/create" => Ok(json!({ "terminalId": "term-1" })),
        "terminal/wait_for_exit" => Ok(json!({ "exitCode": 0 })),
        "terminal/output" => Ok(json!({ "output": huge, "truncated": false,
                                        "exitStatus": { "exitCode": 0 } })),
        "terminal/release" => Ok(Value::Null),
        other => panic!("unexpected request {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let output: Value =
        serde_json::from_str(output_for(&model, "call_0").as_str().unwrap()).unwrap();
    let text = output["output"].as_str().unwrap();
    let prefix = "[the start of the output was dropped]\n";
    assert!(text.starts_with(prefix), "{}", &text[..80.min(text.len())]);
    assert_eq!(text.len(), prefix.len() + 32 * 1024);
    assert!(text.ends_with("xxx\nthe end\n"));
    acp.finish();
}

#[test]
fn a_link_swapped_in_while_the_editor_reads_makes_its_write_refused() {
    let outside = rein_test_support::dir_outside_the_temp_dir(&unprivileged::outside_base(
        env!("CARGO_TARGET_TMPDIR").as_ref(),
    ));
    let outside = outside.path().canonicalize().unwrap();
    std::fs::write(outside.join("f.txt"), "old\n").unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    std::fs::create_dir(cwd_path.join("sub")).unwrap();
    std::fs::write(cwd_path.join("sub/f.txt"), "old\n").unwrap();
    // One batch: a sandboxed command that swaps `sub` for a link out once the editor is
    // reading, and a patch of `sub/f.txt` the policy allows (it is in the workspace).
    let swap = format!(
        "while [ ! -e ready ]; do sleep 0.01; done; mv sub sub.old && ln -s {} sub && touch swapped",
        outside.display()
    );
    let patch = "*** Begin Patch\n*** Update File: sub/f.txt\n@@\n-old\n+new\n*** End Patch\n";
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [
                { "call_id": "call_swap", "name": "shell",
                  "arguments": { "command": ["sh", "-c", swap], "timeout_ms": 20000 } },
                { "call_id": "call_patch", "name": "apply_patch", "arguments": { "input": patch } }
            ] },
            { "text": "Done." }
        ],
        "when_exhausted": "echo"
    }));
    let home = support::home_for(&model);
    let files = json!({ "fs": { "readTextFile": true, "writeTextFile": true } });
    let (mut acp, session) = session_with(home.path(), &cwd_path, files);
    let id = acp.prompt(&session, "Patch it.");
    let (seen, answer) = serve(&mut acp, &id, |name, params| match name {
        "fs/read_text_file" => {
            // The editor reads while the command swaps the link in.
            std::fs::write(cwd_path.join("ready"), "").unwrap();
            let swapped = fs_events::wait_until_files_show(&cwd_path, support::PATIENCE, || {
                cwd_path.join("swapped").exists()
            });
            assert!(swapped, "the command never swapped the link in");
            Ok(json!({ "content": "old\n" }))
        }
        // A plain editor: it writes where the path leads.
        "fs/write_text_file" => {
            let path = params["path"].as_str().unwrap();
            std::fs::write(path, params["content"].as_str().unwrap()).unwrap();
            Ok(json!({}))
        }
        other => panic!("unexpected request {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let methods: Vec<Value> = requests(&seen)
        .iter()
        .map(|r| r["method"].clone())
        .collect();
    assert_eq!(
        methods,
        vec![json!("fs/read_text_file")],
        "no write reached the editor"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(
        output_for(&model, "call_patch"),
        json!(format!(
            "{}: {} is a symbolic link now: the target changed after the policy judged it, so the write is refused",
            cwd_path.join("sub/f.txt").display(),
            cwd_path.join("sub").display()
        ))
    );
    acp.finish();
}

/// When run as root, run the link race again as `nobody`.
#[test]
#[cfg_attr(
    not(rein_is_root),
    ignore = "run as root, it reruns the race as nobody (run as a user, the other tests are that run)"
)]
fn the_link_race_holds_as_an_unprivileged_user() {
    if !unprivileged::is_root() {
        eprintln!("running as a user already: the other tests are the unprivileged run");
        return;
    }
    let status = unprivileged::rerun_as_nobody(module_path!(), "as_an_unprivileged_user");
    assert!(status.success(), "the link race as nobody failed: {status}");
}

/// Run only by the test above, as `nobody`.
#[test]
#[ignore = "run as an unprivileged user by the_link_race_holds_as_an_unprivileged_user"]
fn as_an_unprivileged_user() {
    assert!(!unprivileged::is_root());
    a_link_swapped_in_while_the_editor_reads_makes_its_write_refused();
}
