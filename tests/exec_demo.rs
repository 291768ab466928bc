//! `rein exec --demo` runs a real turn through the whole kernel in a child process.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn rein() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rein"))
}

#[test]
fn demo_streams_the_answer_to_stdout() {
    let out = rein().args(["exec", "--demo", "ping"]).output().unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Hello from rein."), "{stdout}");
}

#[test]
fn demo_json_prints_one_event_per_line_in_seq_order() {
    let out = rein()
        .args(["exec", "--demo", "--json", "ping"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let events: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["msg"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"thread_configured"));
    assert!(types.contains(&"turn_started"));
    assert!(types.contains(&"agent_message_delta"));
    assert_eq!(types.last(), Some(&"turn_completed"));
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
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
