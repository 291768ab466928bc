//! `rein exec` end to end against a real `rein mock-model` server: both output modes,
//! plain and tool turns, prompts from stdin, `-o`, `--output-schema`, plans, patches.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use std::io::Write;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{json_lines, types, user_texts, Home, MockModel};

fn hello_script() -> serde_json::Value {
    json!({"replies": [{"text": "Hello from the mock model.", "deltas": 3,
        "usage": {"input_tokens": 12, "cached_input_tokens": 2, "output_tokens": 5,
                  "reasoning_output_tokens": 0, "total_tokens": 17}}]})
}

fn tool_script() -> serde_json::Value {
    json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "shell", "arguments": {"command": ["echo", "hello-from-tool"]}}]},
        {"text": "The command ran.", "deltas": 2}
    ]})
}

#[test]
fn plain_turn_json_is_the_codex_exec_stream() {
    for wire in ["responses", "chat"] {
        let mock = MockModel::start(hello_script());
        let home = Home::new(&mock, wire);
        let out = home.exec_ok(&["--json", "Say hello."]);
        let events = json_lines(&out.stdout);
        assert_eq!(
            types(&events),
            [
                "thread.started",
                "turn.started",
                "item.completed",
                "turn.completed"
            ],
            "{wire}"
        );
        let thread_id = events[0]["thread_id"].as_str().unwrap();
        assert_eq!(thread_id.len(), 36, "a UUID: {thread_id}");
        assert_eq!(
            events[2]["item"],
            json!({"id": "item_0", "type": "agent_message", "text": "Hello from the mock model."})
        );
        assert_eq!(events[3]["usage"]["input_tokens"], 12, "{wire}");
        assert_eq!(events[3]["usage"]["cached_input_tokens"], 2, "{wire}");
        assert_eq!(events[3]["usage"]["output_tokens"], 5, "{wire}");
        assert!(user_texts(&mock.requests()).contains("Say hello."));
    }
}

#[test]
fn plain_turn_human_prints_only_the_answer_on_stdout() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let out = home.exec_ok(&["Say hello."]);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Hello from the mock model.\n"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("Hello from the mock model."),
        "progress streams: {stderr}"
    );
    assert!(stderr.contains("model mock"), "{stderr}");
    assert!(
        stderr.contains("tokens: 12 in (2 cached), 5 out"),
        "{stderr}"
    );
}

#[test]
fn tool_turn_json_reports_a_command_execution_item() {
    let mock = MockModel::start(tool_script());
    let home = Home::new(&mock, "responses");
    let out = home.exec_ok(&["--json", "Run echo."]);
    let events = json_lines(&out.stdout);
    assert_eq!(
        types(&events),
        [
            "thread.started",
            "turn.started",
            "item.started",
            "item.completed",
            "item.completed",
            "turn.completed"
        ]
    );
    let started = &events[2]["item"];
    assert_eq!(started["type"], "command_execution");
    assert_eq!(started["command"], "echo hello-from-tool");
    assert_eq!(started["status"], "in_progress");
    assert_eq!(started["exit_code"], serde_json::Value::Null);
    let done = &events[3]["item"];
    assert_eq!(done["id"], started["id"]);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["exit_code"], 0);
    assert_eq!(done["aggregated_output"], "hello-from-tool\n");
    assert_eq!(events[4]["item"]["text"], "The command ran.");
    // The tool's result went back to the model in the second request.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].to_string().contains("call_1"));
}

#[test]
fn tool_turn_human_shows_the_call_on_stderr() {
    let mock = MockModel::start(tool_script());
    let home = Home::new(&mock, "chat");
    let out = home.exec_ok(&["Run echo."]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "The command ran.\n");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("$ echo hello-from-tool"), "{stderr}");
    assert!(stderr.contains("✓ $ echo hello-from-tool ("), "{stderr}");
    assert!(stderr.contains(" ms)"), "elapsed time: {stderr}");
}

#[test]
fn prompt_from_stdin_and_stdin_appended_to_a_prompt() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    for (args, expected) in [
        (vec![], "piped prompt text"),
        (vec!["-"], "piped prompt text"),
        (
            vec!["Review this:"],
            "Review this:\\n\\n<stdin>\\npiped prompt text\\n</stdin>",
        ),
    ] {
        let mut child = home
            .exec(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"piped prompt text\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let last = mock.requests().pop().unwrap().to_string();
        assert!(last.contains(expected), "{args:?}: {last}");
    }
}

#[test]
fn empty_stdin_without_a_prompt_is_a_clear_error() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let out = home.exec(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no prompt"));
    assert!(mock.requests().is_empty());
}

#[test]
fn output_last_message_writes_the_answer_to_a_file() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let file = home.path().join("last.txt");
    let out = home
        .exec(&["--json", "-o", file.to_str().unwrap(), "Say hello."])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "Hello from the mock model."
    );
}

#[test]
fn output_schema_accepts_a_matching_answer_and_rejects_another() {
    let schema = json!({"type": "object", "properties": {"status": {"type": "string", "enum": ["ok"]}},
        "required": ["status"], "additionalProperties": false});
    for (answer, code) in [(r#"{"status":"ok"}"#, 0), (r#"{"status":"bad"}"#, 1)] {
        let mock = MockModel::start(json!({"replies": [{"text": answer}]}));
        let home = Home::new(&mock, "responses");
        let schema_path = home.path().join("schema.json");
        std::fs::write(&schema_path, schema.to_string()).unwrap();
        let out = home
            .exec(&["--output-schema", schema_path.to_str().unwrap(), "Status?"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{answer}: {stderr}");
        if code == 1 {
            assert!(
                stderr.contains("does not match the output schema"),
                "{stderr}"
            );
            assert!(stderr.contains("/status"), "{stderr}");
        }
        // The model was told the schema, in its instructions and as structured output.
        let request = &mock.requests()[0];
        let told = request["instructions"].as_str().unwrap_or_default();
        assert!(told.contains(r#""enum":["ok"]"#), "{request}");
        assert_eq!(
            request["text"]["format"]["type"], "json_schema",
            "{request}"
        );
        assert_eq!(request["text"]["format"]["schema"], schema, "{request}");
        assert_eq!(request["text"]["format"]["strict"], true, "{request}");
    }
}

#[test]
fn experimental_json_with_a_prompt_leaves_an_open_stdin_alone() {
    // Newer Codex SDKs pass the prompt as an argument and keep stdin open for control
    // messages; waiting for its end would hang the run.
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let mut child = home
        .exec(&["--experimental-json", "--", "Say hello."])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        types(&json_lines(&out.stdout)).last().unwrap(),
        "turn.completed"
    );
}

#[test]
fn cd_sets_the_working_directory_of_tools_and_images_reach_the_model() {
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": ["pwd"]}}]},
        {"text": "done"}
    ]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let image = work.path().join("dot.png");
    std::fs::write(&image, b"\x89PNG fake").unwrap();
    let out = home
        .exec(&[
            "--json",
            "-C",
            work.path().to_str().unwrap(),
            "-i",
            image.to_str().unwrap(),
            "Where am I?",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    let command = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .unwrap();
    let real = work.path().canonicalize().unwrap();
    assert_eq!(
        command["item"]["aggregated_output"],
        format!("{}\n", real.display())
    );
    let first = mock.requests()[0].to_string();
    assert!(
        first.contains("data:image/png;base64,iVBORyBmYWtl"),
        "{first}"
    );
}

#[test]
fn a_failed_turn_exits_1_with_error_and_turn_failed_lines() {
    let mock = MockModel::start(json!({"replies": [
        {"fault": {"type": "http_error", "status": 400, "message": "bad model"}}
    ]}));
    let home = Home::new(&mock, "responses");
    let out = home.exec(&["--json", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let events = json_lines(&out.stdout);
    assert_eq!(
        types(&events),
        ["thread.started", "turn.started", "error", "turn.failed"]
    );
    assert!(events[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("bad model"));
}

#[test]
fn a_plan_is_a_todo_list_in_json_and_a_checklist_on_stderr() {
    let script = json!({"replies": [
        {"tool_calls": [{"name": "update_plan", "arguments": {"plan": [
            {"step": "read the code", "status": "completed"},
            {"step": "write the fix", "status": "in_progress"}]}}]},
        {"text": "planned"}
    ]});
    let mock = MockModel::start(script.clone());
    let home = Home::new(&mock, "responses");
    let out = home.exec_ok(&["--json", "Plan it."]);
    let events = json_lines(&out.stdout);
    let todo: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "todo_list")
        .collect();
    assert_eq!(
        todo.len(),
        2,
        "started, then completed with the turn: {events:?}"
    );
    assert_eq!(todo[0]["type"], "item.started");
    assert_eq!(todo[1]["type"], "item.completed");
    assert_eq!(
        todo[1]["item"]["items"],
        json!([{"text": "read the code", "completed": true}, {"text": "write the fix", "completed": false}])
    );

    let mock = MockModel::start(script);
    let home = Home::new(&mock, "responses");
    let out = home.exec(&["Plan it."]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[x] read the code") && stderr.contains("[>] write the fix"),
        "{stderr}"
    );
}

#[test]
fn a_call_that_needs_approval_fails_back_to_the_model_with_the_reason() {
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "esc", "name": "shell", "arguments": {
            "command": ["true"], "with_escalated_permissions": true, "justification": "test"}}]},
        {"text": "understood"}
    ]}));
    let home = Home::new(&mock, "responses");
    let out = home.exec(&["--json", "Escalate."]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    let done = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .unwrap();
    // The policy said no: the command never ran.
    assert_eq!(done["item"]["status"], "declined");
    assert_eq!(done["item"]["exit_code"], serde_json::Value::Null);
    let told = mock.requests()[1].to_string();
    assert!(told.contains("approval policy is `never`"), "{told}");
}

#[test]
fn a_patch_is_a_file_change_item_and_the_file_is_written() {
    let patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello from a patch\n*** End Patch\n";
    let script = json!({"replies": [
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"text": "patched"}
    ]});
    let mock = MockModel::start(script.clone());
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_str().unwrap();
    let out = home
        .exec(&["--json", "-s", "workspace-write", "-C", dir, "Add a file."])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    let changes: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "file_change")
        .collect();
    assert_eq!(changes.len(), 1, "only completed, as Codex: {events:?}");
    let item = &changes[0]["item"];
    assert_eq!(changes[0]["type"], "item.completed");
    assert_eq!(item["status"], "completed");
    assert_eq!(item["changes"][0]["kind"], "add");
    assert!(
        item["changes"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("hello.txt"),
        "{item}"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("hello.txt")).unwrap(),
        "hello from a patch\n"
    );

    // A read-only run refuses the same patch and says so.
    let mock = MockModel::start(script);
    let home = Home::new(&mock, "responses");
    let other = tempfile::tempdir().unwrap();
    let out = home
        .exec(&[
            "--json",
            "-C",
            other.path().to_str().unwrap(),
            "Add a file.",
        ])
        .output()
        .unwrap();
    let events = json_lines(&out.stdout);
    let item = &events
        .iter()
        .find(|e| e["item"]["type"] == "file_change")
        .unwrap()["item"];
    assert_eq!(item["status"], "failed");
    assert!(!other.path().join("hello.txt").exists());
}
