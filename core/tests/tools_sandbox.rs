//! Escape attempts against the real Linux sandbox, through the shell tool: writing
//! outside the workspace, into `.git`, through a symlink, via `..`, from a grandchild,
//! and opening a network socket — each must fail, while ordinary work inside the
//! workspace succeeds. Run against Landlock + seccomp, and against bubblewrap when it is
//! installed.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::tools::policy::{PolicyConfig, PolicyEngine};
use rein_core::tools::sandbox::{Sandbox, SandboxMechanism};
use rein_core::tools::shell::ShellConfig;
use rein_core::tools::shell_tool::ShellTool;
use rein_core::tools::testing::{call, settings, RecordingHost};
use rein_core::tools::Tool;
use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadId};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct World {
    ws: PathBuf,
    outside: PathBuf,
    listener: TcpListener,
    _dirs: Vec<tempfile::TempDir>,
}

/// A workspace with a `.git`, a directory outside it, and links pointing out. Both live
/// under the target dir, not the temp dir (which is itself writable under
/// workspace-write).
fn world() -> World {
    let ws = outside_temp();
    let outside = outside_temp();
    let mut w = world_in(ws.path(), outside.path());
    w._dirs = vec![ws, outside];
    w
}

fn world_in(ws: &Path, outside: &Path) -> World {
    fs::create_dir(ws.join(".git")).unwrap();
    fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    fs::create_dir(ws.join("src")).unwrap();
    std::os::unix::fs::symlink(outside, ws.join("out-link")).unwrap();
    World {
        ws: ws.to_path_buf(),
        outside: outside.to_path_buf(),
        listener: TcpListener::bind("127.0.0.1:0").unwrap(),
        _dirs: Vec::new(),
    }
}

fn shell(sandbox: Sandbox) -> ShellTool {
    let sandbox = Arc::new(sandbox);
    let policy = Arc::new(PolicyEngine::new(
        PolicyConfig::default(),
        sandbox.unavailable_reason().map(str::to_owned),
    ));
    ShellTool::new(ShellConfig::default(), policy, sandbox)
}

async fn run(tool: &ShellTool, ws: &Path, policy: SandboxPolicy, script: &str) -> (bool, String) {
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(ws, ApprovalPolicy::Never, policy),
        CancellationToken::new(),
    );
    let result = tool
        .run(
            call("shell", json!({"command": ["/bin/bash", "-c", script]})),
            ctx,
        )
        .await;
    let body: Value =
        serde_json::from_str(&result.output).unwrap_or_else(|_| json!({"output": result.output}));
    (
        result.success,
        body["output"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn escapes_fail(sandbox: Sandbox) {
    escapes_fail_in(sandbox, world()).await;
}

async fn escapes_fail_in(sandbox: Sandbox, w: World) {
    let tool = shell(sandbox);
    let ws = w.ws.as_path();
    let out = w.outside.as_path();
    let out_name = out.file_name().unwrap().to_string_lossy().into_owned();
    let port = w.listener.local_addr().unwrap().port();
    let ww = SandboxPolicy::WorkspaceWrite;

    // Ordinary work inside the workspace and the temp dir succeeds.
    let (ok, text) = run(
        &tool,
        ws,
        ww,
        "echo hi > src/a.txt && t=$(mktemp) && echo t > $t && rm $t && cat src/a.txt",
    )
    .await;
    assert!(ok, "{text}");
    assert_eq!(text, "hi\n");
    assert_eq!(fs::read_to_string(ws.join("src/a.txt")).unwrap(), "hi\n");
    let (ok, text) = run(&tool, ws, ww, "echo top > new-at-root.txt").await;
    assert!(ok, "{text}");

    let attempts = [
        (
            "outside by absolute path",
            format!("echo x > {}/pwned", out.display()),
        ),
        ("outside via ..", format!("echo x > ../{out_name}/pwned")),
        (
            "outside via a symlink",
            "echo x > out-link/pwned".to_owned(),
        ),
        (
            "outside from a grandchild",
            format!("bash -c 'sh -c \"echo x > {}/pwned\"'", out.display()),
        ),
        ("into .git", "echo evil > .git/config".to_owned()),
        (
            "new file in .git",
            "echo evil > .git/hooks-pwned".to_owned(),
        ),
        ("delete in .git", "rm .git/config".to_owned()),
        (
            "into .git via ..",
            "echo evil > src/../.git/config".to_owned(),
        ),
        (
            "network socket",
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ),
    ];
    for (name, script) in &attempts {
        let (ok, text) = run(&tool, ws, ww, script).await;
        assert!(!ok, "{name} succeeded: {text}");
        assert!(!text.contains("connected"), "{name}: {text}");
    }
    assert!(!out.join("pwned").exists());
    assert_eq!(
        fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.join(".git/hooks-pwned").exists());

    // Read-only: even the workspace is not writable, but reading works.
    let (ok, text) = run(&tool, ws, SandboxPolicy::ReadOnly, "cat src/a.txt").await;
    assert!(ok, "{text}");
    let (ok, _) = run(&tool, ws, SandboxPolicy::ReadOnly, "echo x > src/b.txt").await;
    assert!(!ok);
    assert!(!ws.join("src/b.txt").exists());

    // Control: the same connection works outside the sandbox, so the block is real.
    let (ok, text) = run(
        &tool,
        ws,
        SandboxPolicy::DangerFullAccess,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    )
    .await;
    assert!(ok && text.contains("connected"), "{text}");
}

#[tokio::test]
async fn landlock_sandbox_blocks_every_escape() {
    let sandbox = Sandbox::landlock().unwrap();
    assert_eq!(sandbox.mechanism(), Some(SandboxMechanism::Landlock));
    escapes_fail(sandbox).await;
}

#[tokio::test]
async fn bubblewrap_sandbox_blocks_every_escape() {
    match Sandbox::bubblewrap() {
        Ok(sandbox) => escapes_fail(sandbox).await,
        // `.ci/run` installs bubblewrap; a developer machine may lack it.
        Err(why) => eprintln!("bubblewrap escape tests not run: {why}"),
    }
}

#[test]
fn detection_finds_a_mechanism_on_this_kernel() {
    let sandbox = Sandbox::detect();
    assert_eq!(sandbox.unavailable_reason(), None);
    assert!(sandbox.mechanism().is_some());
}

#[tokio::test]
async fn without_mount_namespaces_git_stays_read_only_by_granting_around_it() {
    let w = world();
    let tool = shell(Sandbox::landlock_without_namespaces().unwrap());
    let ws = w.ws.as_path();
    let ww = SandboxPolicy::WorkspaceWrite;
    let (ok, text) = run(&tool, ws, ww, "echo hi > src/a.txt").await;
    assert!(ok, "{text}");
    for script in [
        "echo evil > .git/config",
        "rm .git/config",
        "echo x > .git/new",
    ] {
        let (ok, text) = run(&tool, ws, ww, script).await;
        assert!(!ok, "{script}: {text}");
    }
    assert_eq!(
        fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // The documented cost: nothing new directly in a root that holds `.git`.
    let (ok, _) = run(&tool, ws, ww, "echo x > new-at-root.txt").await;
    assert!(!ok);
}

#[tokio::test]
async fn a_sandboxed_command_tree_is_still_killed_on_timeout() {
    let w = world();
    let tool = shell(Sandbox::landlock().unwrap());
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(
            w.ws.as_path(),
            ApprovalPolicy::Never,
            SandboxPolicy::WorkspaceWrite,
        ),
        CancellationToken::new(),
    );
    let script = "sleep 300 & echo pid=$!; wait";
    let result = tool
        .run(
            call("shell", json!({"command": script, "timeout_ms": 1000})),
            ctx,
        )
        .await;
    assert!(!result.success);
    let body: Value = serde_json::from_str(&result.output).unwrap();
    assert_eq!(body["metadata"]["exit_code"], 124);
    let text = body["output"].as_str().unwrap();
    assert!(text.contains("timed out"), "{text}");
    let pid: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let state = stat
            .as_deref()
            .and_then(|s| s.rsplit(')').next())
            .map(|r| r.trim().chars().next());
        if matches!(state, None | Some(Some('Z'))) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "grandchild {pid} survived"
        );
        std::thread::yield_now();
    }
}

#[tokio::test]
async fn on_failure_asks_to_rerun_outside_the_sandbox() {
    use rein_core::tools::testing::ScriptedAnswer;
    use rein_protocol::{ApprovalDecision, ClientRequest};

    let w = world();
    let tool = shell(Sandbox::landlock().unwrap());
    let target = w.outside.as_path().join("allowed-after-approval");
    let script = format!("echo x > {}", target.display());
    let host = RecordingHost::new().answering([
        ScriptedAnswer::Decide(ApprovalDecision::Deny),
        ScriptedAnswer::Decide(ApprovalDecision::Approve),
    ]);
    let ctx = host.context(
        ThreadId::new(),
        settings(
            w.ws.as_path(),
            ApprovalPolicy::OnFailure,
            SandboxPolicy::WorkspaceWrite,
        ),
        CancellationToken::new(),
    );
    let denied = tool
        .run(call("shell", json!({"command": script})), ctx.clone())
        .await;
    assert!(!denied.success);
    assert!(
        denied.output.contains("not rerun outside the sandbox"),
        "{}",
        denied.output
    );
    assert!(!target.exists());
    let approved = tool
        .run(call("shell", json!({"command": script})), ctx)
        .await;
    assert!(approved.success, "{}", approved.output);
    assert!(target.exists());
    let requests = host.approval_requests();
    assert_eq!(requests.len(), 2);
    assert!(
        matches!(&requests[0], ClientRequest::Command { reason, .. } if reason.contains("Permission denied"))
    );
}

/// Users are rarely root: as an unprivileged user the sandbox enters a user namespace to
/// make `.git` read-only. When the suite runs as root, rerun the escape attempts as
/// `nobody` in a child test process.
#[test]
fn landlock_sandbox_blocks_every_escape_as_an_unprivileged_user() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        // Already unprivileged: the main escape test covers this case.
        return;
    }
    // The build may live where `nobody` cannot reach (e.g. under /root), so the test
    // binary and the directories go to /var/tmp: reachable by anyone, and outside the
    // temp dir that workspace-write leaves writable.
    let base = tempfile::tempdir_in("/var/tmp").unwrap();
    let ws = base.path().join("ws");
    let outside = base.path().join("outside");
    // The child's own temp dir: writable for nobody, and beside (not above) the others.
    let tmp = base.path().join("tmp");
    for dir in [base.path(), &ws, &outside, &tmp] {
        fs::create_dir_all(dir).unwrap();
        std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
    }
    let runner = base.path().join("runner");
    fs::copy(std::env::current_exe().unwrap(), &runner).unwrap();
    fs::set_permissions(&runner, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let status = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&runner)
        .args([
            "--exact",
            "unprivileged_escape_attempts",
            "--ignored",
            "--test-threads=1",
        ])
        .env("TMPDIR", &tmp)
        .env("REIN_SANDBOX_WS", &ws)
        .env("REIN_SANDBOX_OUTSIDE", &outside)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the unprivileged escape attempts failed: {status}"
    );
}

/// Run only by the test above, as `nobody`.
#[tokio::test]
#[ignore = "run as an unprivileged user by landlock_sandbox_blocks_every_escape_as_an_unprivileged_user"]
async fn unprivileged_escape_attempts() {
    let ws = PathBuf::from(std::env::var_os("REIN_SANDBOX_WS").unwrap());
    let outside = PathBuf::from(std::env::var_os("REIN_SANDBOX_OUTSIDE").unwrap());
    let sandbox = Sandbox::landlock().unwrap();
    escapes_fail_in(sandbox, world_in(&ws, &outside)).await;
}

/// A fresh directory outside the temp dir (which workspace-write leaves writable).
fn outside_temp() -> tempfile::TempDir {
    let base = rein_core::tools::testing::base_outside_temp([
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        std::path::Path::new("/var/tmp"),
    ])
    .unwrap();
    tempfile::tempdir_in(base).unwrap()
}
