//! The shell tool against real processes: process-tree kills on timeout, cancel and drop;
//! head+tail truncation; exit codes; the environment policy.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rein_core::tools::testing::{call, settings, RecordingHost};
use rein_core::tools::Tool;
use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadId};
use rein_tools::process::exec::{self, ExecLimits, ExitKind};
use rein_tools::shell::UncheckedShellTool;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A script that starts two grandchildren in its process group, prints their pids and
/// "ready", then waits forever.
const TREE: &str = "sleep 300 & echo pid=$!; sleep 300 & echo pid=$!; echo ready; wait";

fn pids_in(text: &str) -> Vec<i32> {
    text.lines()
        .filter_map(|l| l.strip_prefix("pid="))
        .map(|p| p.trim().parse().unwrap())
        .collect()
}

/// A killed process is gone or a zombie awaiting its reaper. SIGKILL is delivered
/// asynchronously, so poll the condition with a deadline rather than assume it.
fn assert_dead(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim().chars().next()))
            .flatten();
        if matches!(state, None | Some('Z') | Some('X')) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} still alive: {state:?}"
        );
        std::thread::yield_now();
    }
}

fn sh(script: &str) -> tokio::process::Command {
    let argv = vec!["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let env: BTreeMap<String, String> = std::env::vars().collect();
    exec::command(&argv, Path::new("/"), &env).unwrap()
}

fn limits(timeout_ms: u64, cap: usize) -> ExecLimits {
    ExecLimits {
        timeout: Duration::from_millis(timeout_ms),
        output_cap: cap,
    }
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let cancel = CancellationToken::new();
    let mut sink = |_d: String| {};
    let out = exec::run(sh(TREE), limits(1500, 4096), &cancel, &mut sink)
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    let pids = pids_in(&out.output);
    assert_eq!(pids.len(), 2, "{}", out.output);
    pids.into_iter().for_each(assert_dead);
}

#[tokio::test]
async fn cancel_kills_the_whole_process_tree() {
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut sink = move |d: String| {
        let _ = tx.send(d);
    };
    let trigger = cancel.clone();
    let watcher = tokio::spawn(async move {
        let mut seen = String::new();
        while let Some(d) = rx.recv().await {
            seen.push_str(&d);
            if seen.contains("ready") {
                trigger.cancel();
            }
        }
        seen
    });
    let out = exec::run(sh(TREE), limits(60_000, 4096), &cancel, &mut sink)
        .await
        .unwrap();
    drop(sink);
    assert_eq!(out.exit, ExitKind::Cancelled);
    assert!(out.duration < Duration::from_secs(30));
    let streamed = watcher.await.unwrap();
    assert!(streamed.contains("ready"));
    pids_in(&out.output).into_iter().for_each(assert_dead);
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_tree() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let cancel = CancellationToken::new();
        let mut sink = move |d: String| {
            let _ = tx.send(d);
        };
        exec::run(sh(TREE), limits(60_000, 4096), &cancel, &mut sink).await
    });
    let mut seen = String::new();
    while !seen.contains("ready") {
        seen.push_str(&rx.recv().await.unwrap());
    }
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let pids = pids_in(&seen);
    assert_eq!(pids.len(), 2);
    pids.into_iter().for_each(assert_dead);
}

#[tokio::test]
async fn leftover_background_children_die_when_the_command_exits() {
    let cancel = CancellationToken::new();
    let mut sink = |_d: String| {};
    let out = exec::run(
        sh("sleep 300 & echo pid=$!"),
        limits(30_000, 4096),
        &cancel,
        &mut sink,
    )
    .await
    .unwrap();
    assert_eq!(out.exit, ExitKind::Code(0));
    pids_in(&out.output).into_iter().for_each(assert_dead);
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let cancel = CancellationToken::new();
    let mut streamed = 0usize;
    let mut sink = |d: String| streamed += d.len();
    let out = exec::run(
        sh("echo FIRST; seq 1 100000; echo LAST"),
        limits(30_000, 1000),
        &cancel,
        &mut sink,
    )
    .await
    .unwrap();
    assert!(
        out.output.starts_with("FIRST\n1\n2\n"),
        "{}",
        &out.output[..50]
    );
    assert!(out.output.ends_with("99999\n100000\nLAST\n"));
    assert!(out.output.contains("bytes of output truncated"));
    assert!(out.omitted_bytes > 500_000);
    // Deltas stream everything, not just what is kept.
    assert_eq!(streamed as u64, 1000 + out.omitted_bytes);
}

async fn run_tool(args: Value) -> (Value, bool, RecordingHost) {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(
            dir.path(),
            ApprovalPolicy::Never,
            SandboxPolicy::DangerFullAccess,
        ),
        CancellationToken::new(),
    );
    let result = UncheckedShellTool::default()
        .run(call("shell", args), ctx)
        .await;
    (
        serde_json::from_str(&result.output).unwrap(),
        result.success,
        host,
    )
}

#[tokio::test]
async fn reports_exit_code_and_streams_output() {
    let (body, ok, host) = run_tool(json!({"command": "echo hi; exit 3"})).await;
    assert!(!ok);
    assert_eq!(body["metadata"]["exit_code"], 3);
    assert_eq!(body["output"], "hi\n");
    assert!(body["metadata"]["duration_seconds"].is_number());
    assert_eq!(host.output_of("call-1"), "hi\n");
}

#[tokio::test]
async fn argv_form_runs_without_a_shell() {
    let (body, ok, _) = run_tool(json!({"command": ["echo", "$HOME;", "x"]})).await;
    assert!(ok);
    assert_eq!(body["output"], "$HOME; x\n");
}

#[tokio::test]
async fn secrets_are_not_inherited_but_explicit_env_is_passed() {
    // The test process's own environment is read, not modified: use a variable that the
    // harness may or may not set, and one we pass explicitly.
    let (body, _, _) = run_tool(json!({
        "command": "env",
        "env": {"REIN_TEST_API_KEY": "given"}
    }))
    .await;
    let out = body["output"].as_str().unwrap();
    assert!(out.contains("REIN_TEST_API_KEY=given"));
    for line in out.lines() {
        let name = line.split('=').next().unwrap();
        if name != "REIN_TEST_API_KEY" {
            assert!(
                !name.ends_with("_API_KEY") && !name.ends_with("_TOKEN"),
                "{line}"
            );
        }
    }
    let (body, _, _) = run_tool(json!({
        "command": ["/usr/bin/env"], "env_policy": "explicit", "env": {"ONLY": "1"}
    }))
    .await;
    assert_eq!(body["output"], "ONLY=1\n");
}

#[tokio::test]
async fn bad_arguments_are_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(
            dir.path(),
            ApprovalPolicy::Never,
            SandboxPolicy::DangerFullAccess,
        ),
        CancellationToken::new(),
    );
    let result = UncheckedShellTool::default()
        .run(call("shell", json!({"command": []})), ctx.clone())
        .await;
    assert!(!result.success);
    assert!(result.output.contains("empty"));
    let result = UncheckedShellTool::default()
        .run(call("shell", json!({"cmd": "ls"})), ctx)
        .await;
    assert!(!result.success);
    assert!(result.output.contains("invalid shell arguments"));
}
