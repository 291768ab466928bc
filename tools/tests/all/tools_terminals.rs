//! Background terminals with real processes: started by the shell tool, they survive the
//! turn's cancellation, take input and give output by id, and die on
//! clean-background-terminals and on thread shutdown.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_core::tools::testing::{call, settings, RecordingHost};
use rein_core::tools::ToolSet;
use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadId};
use rein_tools::sandbox::Sandbox;
use rein_tools::{builtin_tools, BuiltinConfig};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const ECHO_LOOP: &str = "echo pid=$$; while read line; do echo got:$line; done";

fn tools(sandbox: Sandbox) -> ToolSet {
    ToolSet::new(builtin_tools(BuiltinConfig {
        sandbox: Some(Arc::new(sandbox)),
        ..BuiltinConfig::default()
    }))
}

struct Session {
    tools: ToolSet,
    host: RecordingHost,
    thread: ThreadId,
    dir: tempfile::TempDir,
    policy: SandboxPolicy,
}

impl Session {
    fn new(sandbox: Sandbox, policy: SandboxPolicy) -> Self {
        Self {
            tools: tools(sandbox),
            host: RecordingHost::new(),
            thread: ThreadId::new(),
            dir: tempfile::tempdir().unwrap(),
            policy,
        }
    }

    async fn call(&self, name: &str, args: Value, cancel: CancellationToken) -> (bool, Value) {
        let ctx = self.host.context(
            self.thread,
            settings(self.dir.path(), ApprovalPolicy::Never, self.policy),
            cancel,
        );
        let result = self
            .tools
            .get(name)
            .unwrap()
            .run(call(name, args), ctx)
            .await;
        let body = serde_json::from_str(&result.output).unwrap_or(json!({"error": result.output}));
        (result.success, body)
    }

    /// Start `command` as a background terminal; its id and the first answer.
    async fn background(&self, command: &str, cancel: CancellationToken) -> (String, Value) {
        let (ok, body) = self
            .call(
                "shell",
                json!({"command": command, "background": true}),
                cancel,
            )
            .await;
        assert!(ok, "{body}");
        let id = body["terminal_id"].as_str().unwrap().to_owned();
        (id, body)
    }

    /// Read until `needle` shows up in the terminal's output.
    async fn read_until(&self, id: &str, needle: &str) -> String {
        let mut seen = String::new();
        while !seen.contains(needle) {
            let (ok, body) = self
                .call(
                    "write_stdin",
                    json!({"terminal_id": id, "wait_ms": 5000}),
                    CancellationToken::new(),
                )
                .await;
            assert!(ok, "{body}");
            seen.push_str(body["output"].as_str().unwrap());
            assert_eq!(body["running"], true, "{seen}");
        }
        seen
    }
}

fn pid_in(text: &str) -> i32 {
    text.lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let state = stat
        .as_deref()
        .and_then(|s| s.rsplit(')').next())
        .and_then(|r| r.trim().chars().next());
    !matches!(state, None | Some('Z') | Some('X'))
}

/// SIGKILL lands asynchronously: poll the condition with a deadline.
fn assert_dies(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} survived");
        std::thread::yield_now();
    }
}

async fn start(s: &Session, cancel: CancellationToken) -> (String, i32) {
    let (id, body) = s.background(ECHO_LOOP, cancel).await;
    let mut seen = body["output"].as_str().unwrap().to_owned();
    if !seen.contains("pid=") {
        seen.push_str(&s.read_until(&id, "pid=").await);
    }
    (id, pid_in(&seen))
}

#[tokio::test]
async fn background_terminal_survives_cancel_takes_input_and_dies_on_clean() {
    let s = Session::new(
        Sandbox::unavailable("unused"),
        SandboxPolicy::DangerFullAccess,
    );
    let turn = CancellationToken::new();
    let (id, pid) = start(&s, turn.clone()).await;
    // The turn is interrupted: the background terminal keeps running.
    turn.cancel();
    assert!(alive(pid));
    let (ok, body) = s
        .call(
            "write_stdin",
            json!({"terminal_id": id, "chars": "hello\n", "wait_ms": 5000}),
            CancellationToken::new(),
        )
        .await;
    assert!(ok, "{body}");
    let mut seen = body["output"].as_str().unwrap().to_owned();
    if !seen.contains("got:hello") {
        seen.push_str(&s.read_until(&id, "got:hello").await);
    }
    assert!(seen.contains("got:hello"));
    // What the loop does on clean-background-terminals.
    s.host.thread_tools(s.thread).clean_background();
    assert_dies(pid);
    let (ok, body) = s
        .call(
            "write_stdin",
            json!({"terminal_id": id}),
            CancellationToken::new(),
        )
        .await;
    assert!(!ok);
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("no background terminal"));
}

#[tokio::test]
async fn thread_shutdown_kills_background_terminals_of_that_thread_only() {
    let s = Session::new(
        Sandbox::unavailable("unused"),
        SandboxPolicy::DangerFullAccess,
    );
    let (_, pid) = start(&s, CancellationToken::new()).await;
    let other = Session {
        thread: ThreadId::new(),
        tools: s.tools.clone(),
        host: s.host.clone(),
        dir: tempfile::tempdir().unwrap(),
        policy: SandboxPolicy::DangerFullAccess,
    };
    let (_, other_pid) = start(&other, CancellationToken::new()).await;
    // A thread's terminals live in its tool state, which ends with the thread.
    s.host.forget_thread(s.thread);
    assert_dies(pid);
    assert!(alive(other_pid));
    other.host.forget_thread(other.thread);
    assert_dies(other_pid);
}

#[tokio::test]
async fn a_finished_background_command_reports_its_exit_and_is_forgotten() {
    let s = Session::new(
        Sandbox::unavailable("unused"),
        SandboxPolicy::DangerFullAccess,
    );
    let (id, body) = s
        .background("echo done; exit 7", CancellationToken::new())
        .await;
    let mut body = body;
    let mut seen = String::new();
    loop {
        seen.push_str(body["output"].as_str().unwrap());
        if body["running"] == false {
            break;
        }
        body = s
            .call(
                "write_stdin",
                json!({"terminal_id": id, "wait_ms": 5000}),
                CancellationToken::new(),
            )
            .await
            .1;
    }
    assert_eq!(seen, "done\n");
    assert_eq!(body["exit_code"], 7);
    let (ok, _) = s
        .call(
            "write_stdin",
            json!({"terminal_id": id}),
            CancellationToken::new(),
        )
        .await;
    assert!(!ok, "a finished terminal is removed once read");
}

#[tokio::test]
async fn background_terminals_run_inside_the_sandbox() {
    let s = Session::new(Sandbox::landlock().unwrap(), SandboxPolicy::ReadOnly);
    let (id, body) = s
        .background(
            "echo x > made.txt; echo status=$?",
            CancellationToken::new(),
        )
        .await;
    let mut seen = body["output"].as_str().unwrap().to_owned();
    let mut running = body["running"] == true;
    while running {
        let (_, body) = s
            .call(
                "write_stdin",
                json!({"terminal_id": id, "wait_ms": 5000}),
                CancellationToken::new(),
            )
            .await;
        seen.push_str(body["output"].as_str().unwrap_or_default());
        running = body["running"] == true;
    }
    // The failing redirect's status is shell-specific (bash 1, dash 2), and
    // the shell is `$SHELL` or `/bin/sh`: only "non-zero" is the sandbox's doing.
    assert!(seen.contains("status="), "{seen}");
    assert!(!seen.contains("status=0"), "{seen}");
    assert!(!s.dir.path().join("made.txt").exists());
}

#[tokio::test]
async fn a_write_to_a_terminal_that_does_not_read_returns_on_cancel() {
    let s = Session::new(
        Sandbox::unavailable("unused"),
        SandboxPolicy::DangerFullAccess,
    );
    let (id, _) = s
        .background("echo pid=$$; exec sleep 300", CancellationToken::new())
        .await;
    // Far more than a pipe holds: the write can only finish if the command reads.
    let flood = "x".repeat(4 * 1024 * 1024);
    let turn = CancellationToken::new();
    let writer = {
        let args = json!({"terminal_id": id, "chars": flood});
        let ctx_cancel = turn.clone();
        let s = &s;
        async move { s.call("write_stdin", args, ctx_cancel).await }
    };
    turn.cancel();
    let (ok, body) = writer.await;
    assert!(!ok);
    assert!(
        body["error"].as_str().unwrap().contains("cancelled"),
        "{body}"
    );
    // The terminal itself is untouched by the cancelled write.
    let (ok, body) = s
        .call(
            "write_stdin",
            json!({"terminal_id": id, "wait_ms": 0}),
            CancellationToken::new(),
        )
        .await;
    assert!(ok, "{body}");
    assert_eq!(body["running"], true);
    s.host.thread_tools(s.thread).clean_background();
}
