//! `rein exec --demo` runs a real turn through the whole kernel in a child process.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn rein() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rein"))
}

#[test]
fn demo_streams_the_answer_to_stdout() {
    let home = tempfile::tempdir().unwrap();
    let out = rein()
        .args(["exec", "--demo", "ping"])
        .env("REIN_HOME", home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Hello from rein."), "{stdout}");
}

#[test]
fn demo_json_prints_the_codex_exec_event_stream() {
    let home = tempfile::tempdir().unwrap();
    let out = rein()
        .args(["exec", "--demo", "--json", "ping"])
        .env("REIN_HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let events: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"thread.started"));
    assert_eq!(types.get(1), Some(&"turn.started"));
    assert_eq!(types.last(), Some(&"turn.completed"));
    // The demo runs a real shell command before answering.
    let command = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .unwrap();
    assert_eq!(command["item"]["command"], "ls -a");
    assert_eq!(command["item"]["exit_code"], 0);
    let answer = &events[events.len() - 2]["item"];
    assert_eq!(answer["type"], "agent_message");
    assert!(answer["text"]
        .as_str()
        .unwrap()
        .starts_with("Hello from rein."));
}

#[test]
fn exec_without_a_model_fails_with_a_helpful_message() {
    let home = tempfile::tempdir().unwrap();
    let out = rein()
        .args(["exec", "hello"])
        .env("REIN_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
    assert!(stderr.contains("--demo"), "{stderr}");
}

#[test]
fn demo_with_a_closed_or_empty_stdin_runs_its_own_prompt() {
    for stdin in ["closed", "empty"] {
        let home = tempfile::tempdir().unwrap();
        let mut cmd = rein();
        cmd.args(["exec", "--demo"]).env("REIN_HOME", home.path());
        let out = if stdin == "closed" {
            cmd.stdin(std::process::Stdio::null()).output().unwrap()
        } else {
            let mut child = cmd
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            drop(child.stdin.take());
            child.wait_with_output().unwrap()
        };
        assert!(
            out.status.success(),
            "{stdin} stdin: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout.contains("Hello from rein."),
            "{stdin} stdin: {stdout}"
        );
    }
}
