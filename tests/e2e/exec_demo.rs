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

/// `rein exec --demo ping` run by `script` (util-linux, Debian's essential `bsdutils`) on a
/// pseudo-terminal, with `redirect` appended to its shell command line: what the terminal
/// showed.
fn on_a_terminal(home: &std::path::Path, redirect: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_rein");
    let out = Command::new("script")
        .args([
            "-qec",
            &format!("'{bin}' exec --demo ping {redirect}"),
            "/dev/null",
        ])
        .env("REIN_HOME", home)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running `script` (util-linux): {e}"));
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn on_a_terminal_the_demo_answer_is_shown_once() {
    let home = tempfile::tempdir().unwrap();
    let screen = on_a_terminal(home.path(), "");
    // Streamed on stderr, and not printed again on stdout: both are the same screen.
    assert_eq!(screen.matches("Hello from rein.").count(), 1, "{screen}");
    assert!(screen.contains("answer"), "{screen}");
}

#[test]
fn on_a_terminal_with_stderr_captured_the_answer_goes_to_stdout() {
    let home = tempfile::tempdir().unwrap();
    let err = home.path().join("stderr.txt");
    let screen = on_a_terminal(home.path(), &format!("2>'{}'", err.display()));
    let progress = std::fs::read_to_string(&err).unwrap();
    // The terminal (stdout) shows the answer alone; the progress went to the file.
    assert_eq!(screen.matches("Hello from rein.").count(), 1, "{screen}");
    assert!(!screen.contains("rein exec · session"), "{screen}");
    assert_eq!(
        progress.matches("Hello from rein.").count(),
        1,
        "{progress}"
    );
}
