//! A hostile model against `rein app-server`: the mock model scripts the commands an
//! attacker would run through the `shell` tool (approval policy `never`), and each attack
//! has a control run (danger-full-access) that shows it works without the sandbox.
//! Covered here, through the real binary: reading the server's provider key from /proc,
//! secrets and agent sockets in the inherited environment, processes that outlive their
//! call, the interrupt, SIGTERM / SIGINT / SIGKILL of the server, and the `sandboxPolicy`
//! fields of `turn/start`. The file-system, device, socket and capability attacks run at
//! tool level in `tools/tests/all/tools_sandbox.rs`. Everything runs as root and, through a
//! copy of the binaries, as `nobody`.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::processes;

use std::path::Path;
use std::time::{Duration, Instant};

use processes::{all_gone, kill_all, processes_with};
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

use rein_test_support::unprivileged::is_root;

/// A marker unique to this call across every process running the suite (the root run
/// and its `nobody` rerun run side by side): fixed width, so no marker is a substring of
/// another, and a valid `sleep` duration (about three years).
fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    format!(
        "9{:07}.{:03}",
        std::process::id() % 10_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn shell(id: &str, script: &str) -> Value {
    json!({"call_id": id, "name": "shell", "arguments": {"command": ["/bin/bash", "-c", script]}})
}

fn background(id: &str, script: &str) -> Value {
    json!({"call_id": id, "name": "shell",
           "arguments": {"command": ["/bin/bash", "-c", script], "background": true}})
}

/// A model that makes `calls` (one reply each), then answers "done".
fn model(calls: Vec<Value>) -> MockModel {
    let mut replies: Vec<Value> = calls
        .into_iter()
        .map(|c| json!({"tool_calls": [c]}))
        .collect();
    replies.push(json!({"text": "done"}));
    MockModel::start(json!({"replies": replies, "when_exhausted": "echo"}))
}

struct Session {
    server: AppServer,
    thread: String,
    _home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

fn session(model: &MockModel, sandbox: &str, env: &[(&str, &str)]) -> Session {
    let home = home_for(model);
    let mut server = AppServer::start_with_env(home.path(), &[], env);
    server.initialize();
    let ws = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({
        "cwd": ws.path(), "approvalPolicy": "never", "sandbox": sandbox
    }));
    Session {
        server,
        thread,
        _home: home,
        ws,
    }
}

impl Session {
    fn turn(&mut self, extra: Value) -> Value {
        let mut params = json!({"threadId": self.thread,
                                "input": [{"type": "text", "text": "go"}]});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        self.server.request("turn/start", params)
    }

    fn until_turn_completed(&mut self) -> Vec<Value> {
        self.server.until(|m| method(m) == "turn/completed")
    }
}

/// Everything the model was sent, as one string (tool outputs included).
fn model_saw(model: &MockModel) -> String {
    model
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Wait (bounded) until at least `n` marked processes run. (Their deaths are waited for
/// on pidfds: `processes::all_gone`.)
fn wait_for_at_least(marker: &str, n: usize) -> bool {
    // The shared patience: the 15 s this once waited ran out on a loaded machine with three
    // of the six processes seen (4 December 2026).
    let deadline = Instant::now() + rein_test_support::PATIENCE;
    while Instant::now() < deadline {
        if processes_with(marker).len() >= n {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Leaves a `setsid` child and a double-forked daemon behind, each running once the
/// script goes on (each says so through a pipe before going quiet).
fn leave_survivors(marker: &str) -> String {
    let quiet = format!("exec sleep {marker} </dev/null >/dev/null 2>&1");
    format!(
        "read -r _ < <(setsid sh -c 'echo ready; {quiet}') && \
         read -r _ < <(sh -c '(echo ready; {quiet}) &') && echo STARTED_$((1+1))"
    )
}

fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

// ---- the attacks ----

fn check_initialize_names_the_active_sandbox() {
    let model = model(Vec::new());
    let home = home_for(&model);
    let mut server = AppServer::start(home.path(), &[]);
    let answer = server.initialize();
    let sandbox = &answer["result"]["reinSandbox"];
    assert_eq!(sandbox["mechanism"], "landlock", "{answer:#}");
    let features: Vec<&str> = sandbox["features"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for feature in [
        "pid-namespace",
        "read-only-mounts",
        "no-capabilities",
        "seccomp",
        "own-proc",
    ] {
        assert!(features.contains(&feature), "{sandbox:#}");
    }
    assert!(server.finish().success());
}

/// Counts the processes whose environment holds the mock's key, and prints what the
/// command itself inherited.
const KEY_HUNT: &str = "n=0; for f in /proc/[0-9]*/environ; do \
    tr '\\0' '\\n' < $f 2>/dev/null | grep -qx 'MOCK_API_KEY=test-key' && n=$((n+1)); done; \
    echo LEAKS=$n; env | sort | sed 's/^/ENV:/'";

fn check_provider_key_and_secrets_stay_out_of_reach() {
    let planted = [
        ("API_KEY", "s1"),
        ("PGPASSWORD", "s2"),
        ("DATABASE_URL", "postgres://app:s3@db/app"),
        ("GH_PAT", "s4"),
        ("NPM_CONFIG__AUTH", "s5"),
        ("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/s6"),
        ("CREDENTIALS_JSON", "s7"),
        ("MY_PASSWD", "s8"),
        ("SSH_AUTH_SOCK", "/run/s9.sock"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/s10"),
        ("REIN_VISIBLE", "plain"),
    ];
    for (sandbox, sandboxed) in [("workspace-write", true), ("danger-full-access", false)] {
        let model = model(vec![shell("hunt", KEY_HUNT)]);
        let mut s = session(&model, sandbox, &planted);
        s.turn(json!({}));
        s.until_turn_completed();
        let saw = model_saw(&model);
        assert!(saw.contains("ENV:REIN_VISIBLE=plain"), "{saw}");
        for (name, _) in &planted[..planted.len() - 1] {
            assert!(
                !saw.contains(&format!("ENV:{name}=")),
                "{name} reached the command: {saw}"
            );
        }
        assert!(!saw.contains("ENV:MOCK_API_KEY"), "{saw}");
        if sandboxed || !is_root() {
            // In the sandbox the server's /proc is out of sight; outside it, the server
            // is not dumpable, so only a root with CAP_SYS_PTRACE reads its environment.
            assert!(
                saw.contains("LEAKS=0"),
                "the key leaked under {sandbox}: {saw}"
            );
        } else {
            assert!(
                !saw.contains("LEAKS=0"),
                "control: root outside the sandbox: {saw}"
            );
        }
        assert!(s.server.finish().success());
    }
}

fn check_processes_die_with_their_call() {
    // Full access too: its supervisor kills what the command left (`supervise.rs`).
    for sandbox in ["danger-full-access", "workspace-write", "read-only"] {
        let mark = marker();
        let model = model(vec![shell("leave", &leave_survivors(&mark))]);
        let mut s = session(&model, sandbox, &[]);
        s.turn(json!({}));
        s.until_turn_completed();
        assert!(model_saw(&model).contains("STARTED_2"));
        assert!(
            all_gone(&mark),
            "survivors under {sandbox}: {:?}",
            processes_with(&mark)
        );
        assert!(s.server.finish().success());
    }
}

fn check_processes_die_with_the_interrupt() {
    for sandbox in ["danger-full-access", "workspace-write"] {
        interrupt_takes_survivors_along(sandbox);
    }
}

fn interrupt_takes_survivors_along(sandbox: &str) {
    let mark = marker();
    let script = format!("{} && exec sleep {mark}", leave_survivors(&mark));
    let model = model(vec![shell("hang", &script)]);
    let mut s = session(&model, sandbox, &[]);
    s.turn(json!({}));
    let started = s.server.until(|m| method(m) == "turn/started");
    let turn_id = started.last().unwrap()["params"]["turn"]["id"].clone();
    // The command says its survivors run (its output streams live), then hangs.
    let mut output = String::new();
    s.server.until(|m| {
        if method(m) == "item/commandExecution/outputDelta" {
            output.push_str(m["params"]["delta"].as_str().unwrap_or_default());
        }
        output.contains("STARTED_2")
    });
    // A process between fork and exec can briefly show no command line: poll /proc
    // (there is no event to wait on) until all three have been seen, within the patience.
    let deadline = Instant::now() + rein_test_support::PATIENCE;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 3 && Instant::now() < deadline {
        seen.extend(processes_with(&mark));
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(seen.len() >= 3, "under {sandbox}, saw only {seen:?}");
    s.server.call(
        "turn/interrupt",
        json!({"threadId": s.thread, "turnId": turn_id}),
    );
    s.until_turn_completed();
    assert!(
        all_gone(&mark),
        "survivors of the interrupt under {sandbox}: {:?}",
        processes_with(&mark)
    );
    assert!(s.server.finish().success());
}

/// A turn whose command (with survivors) never ends, beside a background terminal (with
/// survivors of its own); returns once all of them run.
fn busy_server(sandbox: &str, mark: &str) -> (Session, MockModel) {
    let hang = format!("{} && exec sleep {mark}", leave_survivors(mark));
    let model = model(vec![background("bg", &hang), shell("hang", &hang)]);
    let mut s = session(&model, sandbox, &[]);
    s.turn(json!({}));
    assert!(
        wait_for_at_least(mark, 6),
        "the commands did not start: {:?}",
        processes_with(mark)
    );
    (s, model)
}

fn check_sigterm_and_sigint_stop_everything_and_exit_0() {
    for sig in ["TERM", "INT"] {
        let mark = marker();
        let (mut s, _model) = busy_server("workspace-write", &mark);
        signal(s.server.pid(), sig);
        let status = s.server.wait_exit();
        assert_eq!(status.code(), Some(0), "SIG{sig}: {status}");
        assert!(
            all_gone(&mark),
            "survivors of SIG{sig}: {:?}",
            processes_with(&mark)
        );
    }
}

fn check_sigkill_of_the_server_takes_its_commands_along() {
    // Full access and approved escalations run under a supervisor that sees the server
    // die (`supervise.rs`); sandboxed commands under a monitor that does (`confine.rs`).
    for sandbox in ["danger-full-access", "workspace-write"] {
        let mark = marker();
        let (mut s, _model) = busy_server(sandbox, &mark);
        signal(s.server.pid(), "KILL");
        s.server.wait_exit();
        let gone = all_gone(&mark);
        let left = processes_with(&mark);
        kill_all(&mark);
        assert!(gone, "survivors of SIGKILL under {sandbox}: {left:?}");
    }
    check_sigkill_takes_an_approved_escalation_along();
}

/// An escalation the user approved runs outside the sandbox, as full access does; its
/// survivors die with a SIGKILLed server too.
fn check_sigkill_takes_an_approved_escalation_along() {
    let mark = marker();
    // It writes outside the workspace first: it runs outside the sandbox, or not at all.
    let outside = tempfile::tempdir_in(rein_test_support::unprivileged::outside_base(Path::new(
        env!("CARGO_TARGET_TMPDIR"),
    )))
    .unwrap();
    let hang = format!(
        "touch {}/escalated && {} && exec sleep {mark}",
        outside.path().display(),
        leave_survivors(&mark)
    );
    let model = model(vec![
        json!({"call_id": "esc", "name": "shell", "arguments": {
        "command": ["/bin/bash", "-c", hang], "with_escalated_permissions": true,
        "justification": "needs the network"}}),
    ]);
    let home = home_for(&model);
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let ws = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({
        "cwd": ws.path(), "approvalPolicy": "on-request", "sandbox": "workspace-write"
    }));
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "go"}]}),
    );
    let seen = server.until(|m| method(m) == "item/commandExecution/requestApproval");
    let ask = seen.last().unwrap();
    server.send(&json!({ "id": ask["id"], "result": { "decision": "accept" } }));
    assert!(
        wait_for_at_least(&mark, 3),
        "the escalated command did not start: {:?}",
        processes_with(&mark)
    );
    assert!(outside.path().join("escalated").exists());
    signal(server.pid(), "KILL");
    server.wait_exit();
    let gone = all_gone(&mark);
    let left = processes_with(&mark);
    kill_all(&mark);
    assert!(
        gone,
        "survivors of SIGKILL of an approved escalation: {left:?}"
    );
}

fn check_sandbox_policy_fields_are_honoured_or_refused() {
    // Outside the temp dirs, which workspace-write leaves writable (as `nobody`, a
    // directory made for it).
    let base =
        rein_test_support::unprivileged::outside_base(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let extra = tempfile::tempdir_in(&base).unwrap();
    let mark = marker();
    let slash_tmp = format!("/tmp/rein-hostile-{mark}");
    let script = format!(
        "echo x > {extra}/granted && echo GRANTED_$((1+1)); \
         echo x > {slash_tmp} && echo TMP_WRITTEN_$((1+1)); \
         echo x > in-ws && echo WS_WRITTEN_$((1+1))",
        extra = extra.path().display()
    );
    let model = model(vec![shell("write", &script)]);
    let mut s = session(&model, "read-only", &[]);
    for (policy, field) in [
        (
            json!({"type": "workspaceWrite", "writableRoots": ["relative/dir"]}),
            "writableRoots",
        ),
        (
            json!({"type": "readOnly", "readOnlyAccess": {"type": "fullAccess"}}),
            "readOnlyAccess",
        ),
    ] {
        let id = s.turn(json!({ "sandboxPolicy": policy }));
        let answer = s.server.response(&id);
        assert_eq!(answer["error"]["code"], -32602, "{answer:#}");
        assert!(
            answer["error"]["message"].as_str().unwrap().contains(field),
            "{answer:#}"
        );
    }
    s.turn(json!({"sandboxPolicy": {
        "type": "workspaceWrite", "writableRoots": [extra.path()],
        "excludeSlashTmp": true, "excludeTmpdirEnvVar": true
    }}));
    s.until_turn_completed();
    let saw = model_saw(&model);
    // (The script's own text holds each word, but not followed by `_2`.)
    assert!(saw.contains("GRANTED_2"), "{saw}");
    assert!(saw.contains("WS_WRITTEN_2"), "{saw}");
    assert!(
        !saw.contains("TMP_WRITTEN_2"),
        "/tmp stayed writable: {saw}"
    );
    assert!(extra.path().join("granted").exists());
    assert!(s.ws.path().join("in-ws").exists());
    assert!(!Path::new(&slash_tmp).exists());
    assert!(s.server.finish().success());
}

#[test]
fn initialize_names_the_active_sandbox() {
    check_initialize_names_the_active_sandbox();
}

#[test]
fn provider_key_and_secrets_stay_out_of_reach() {
    check_provider_key_and_secrets_stay_out_of_reach();
}

#[test]
fn processes_die_with_their_call() {
    check_processes_die_with_their_call();
}

#[test]
fn processes_die_with_the_interrupt() {
    check_processes_die_with_the_interrupt();
}

#[test]
fn sigterm_and_sigint_stop_everything_and_exit_0() {
    check_sigterm_and_sigint_stop_everything_and_exit_0();
}

#[test]
fn sigkill_of_the_server_takes_its_commands_along() {
    check_sigkill_of_the_server_takes_its_commands_along();
    check_sandbox_policy_fields_are_honoured_or_refused();
}

#[test]
fn sandbox_policy_fields_are_honoured_or_refused() {
    check_sandbox_policy_fields_are_honoured_or_refused();
}

/// When the suite runs as root, run it again as `nobody`, through copies of the test
/// binary, the `rein` binary and the schema fixtures that `nobody` can reach.
#[test]
#[cfg_attr(
    not(rein_is_root),
    ignore = "run as root, it reruns the suite as nobody (run as a user, the other tests are that run)"
)]
fn the_suite_holds_as_an_unprivileged_user() {
    if !is_root() {
        eprintln!("running as a user already: the other tests are the unprivileged run");
        return;
    }
    let status =
        rein_test_support::unprivileged::rerun_as_nobody(module_path!(), "as_an_unprivileged_user");
    assert!(
        status.success(),
        "the hostile suite as nobody failed: {status}"
    );
}

/// Run only by the test above, as `nobody`.
#[test]
#[ignore = "run as an unprivileged user by the_suite_holds_as_an_unprivileged_user"]
fn as_an_unprivileged_user() {
    assert!(!is_root());
    check_initialize_names_the_active_sandbox();
    check_provider_key_and_secrets_stay_out_of_reach();
    check_processes_die_with_their_call();
    check_processes_die_with_the_interrupt();
    check_sigterm_and_sigint_stop_everything_and_exit_0();
    check_sigkill_of_the_server_takes_its_commands_along();
    check_sandbox_policy_fields_are_honoured_or_refused();
}
