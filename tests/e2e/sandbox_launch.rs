//! How `rein app-server` launches a command (issue 29, item 1): through a trampoline
//! (rein's binary re-executed in a hidden mode, spawned without copying the server), not
//! as a fork of the server. Seen from outside: the process the server spawned for a
//! running command, sandboxed or not, is the trampoline; with `REIN_SANDBOX_SPAWN=fork`
//! (the older launch, kept for comparison) it is a copy of the server. The sandbox's
//! guarantees through the trampoline are what `hostile_sandbox` checks.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server::{home_for, method, AppServer, MockModel};
use rein_test_support::processes::{all_gone, kill_all, processes_with};
use serde_json::json;

fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap()
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command line of the process `server` spawned for a command that sleeps, under
/// `sandbox`.
fn spawned_for_a_command(sandbox: &str, env: &[(&str, &str)], n: u32) -> String {
    let marker = format!("7{:07}.{n:03}", std::process::id() % 10_000_000);
    let call = json!({"call_id": "c", "name": "shell", "arguments": {
        "command": ["/bin/bash", "-c", format!("echo started; exec sleep {marker}")]}});
    let model = MockModel::start(json!({"replies": [{"tool_calls": [call]}, {"text": "done"}]}));
    let home = home_for(&model);
    let mut server = AppServer::start_with_env(home.path(), &[], env);
    server.initialize();
    let ws = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({
        "cwd": ws.path(), "approvalPolicy": "never", "sandbox": sandbox}));
    let turn = server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "go"}]}),
    );
    server.response(&turn);
    let server_pid = i32::try_from(server.pid()).unwrap();
    // The command's first output means it runs (and no longer waits to be launched).
    server.until(|m| method(m) == "item/commandExecution/outputDelta");
    let [mut pid] = processes_with(&marker)[..] else {
        panic!("not one process with {marker}");
    };
    while parent_of(pid) != server_pid {
        pid = parent_of(pid);
        assert!(pid > 1, "the command is not below the server");
    }
    let line = cmdline(pid);
    kill_all(&marker);
    server.until(|m| method(m) == "turn/completed");
    assert!(all_gone(&marker));
    assert!(server.finish().success());
    line
}

#[test]
fn commands_are_launched_through_the_trampoline_not_a_copy_of_the_server() {
    for (n, sandbox) in [
        (1, "workspace-write"),
        (2, "read-only"),
        (3, "danger-full-access"),
    ] {
        let line = spawned_for_a_command(sandbox, &[], n);
        assert!(line.contains("__rein-sandbox-exec"), "{sandbox}: {line}");
        assert!(!line.contains("app-server"), "{sandbox}: {line}");
    }
    let line = spawned_for_a_command("workspace-write", &[("REIN_SANDBOX_SPAWN", "fork")], 4);
    assert!(line.contains("app-server"), "fork launch: {line}");
}
