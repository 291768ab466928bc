//! Escape attempts against the real Linux sandbox, through the shell tool, each with a
//! control run that shows the same command succeeds without the sandbox (danger-full-
//! access): writing outside the workspace (by path, `..`, a symlink, a grandchild), into
//! any `.git` (nested ones, `gitdir:` targets), changing metadata outside (chmod, utime,
//! xattr, chown, setuid bits), device nodes, file handles, signalling and reading other
//! processes, Unix-domain sockets (pathname and abstract), the network, and processes
//! that outlive their call. Run against Landlock + seccomp + namespaces, against
//! bubblewrap, as root and as an unprivileged user (`nobody`, in a child test process).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::tools::testing::{call, settings, RecordingHost};
use rein_core::tools::Tool;
use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadId};
use rein_tools::policy::{PolicyConfig, PolicyEngine};
use rein_tools::sandbox::{Sandbox, SandboxMechanism};
use rein_tools::shell::ShellConfig;
use rein_tools::shell_tool::ShellTool;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const PWNED: &str = "PWNED";

/// Marks a command line so the test can find the processes it left behind.
fn marker() -> String {
    format!("{}.{}", 3000 + std::process::id() % 500, rand_suffix())
}

fn rand_suffix() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A python that any user can run (a version manager's shim under /root is not).
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

struct World {
    ws: PathBuf,
    outside: PathBuf,
    listener: TcpListener,
    _unix: UnixListener,
    _abstract: UnixListener,
    abstract_name: String,
    _dirs: Vec<tempfile::TempDir>,
}

/// A workspace with a `.git`, a nested repository, a worktree whose repository is found
/// only through its `gitdir:`, a directory outside it with a file and a Unix socket, links
/// pointing out, and an abstract socket. Both directories live under the target dir, not
/// the temp dir (which is itself writable under workspace-write).
fn world() -> World {
    let ws = outside_temp();
    let outside = outside_temp();
    let mut w = world_in(ws.path(), outside.path());
    w._dirs = vec![ws, outside];
    w
}

fn world_in(ws: &Path, outside: &Path) -> World {
    for dir in [
        ".git",
        "sub/.git",
        "src",
        "wt",
        "repos/main.git/worktrees/wt",
    ] {
        fs::create_dir_all(ws.join(dir)).unwrap();
    }
    fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    fs::write(ws.join("sub/.git/config"), "[core]\n").unwrap();
    fs::write(ws.join("repos/main.git/config"), "[core]\n").unwrap();
    fs::write(ws.join("repos/main.git/worktrees/wt/HEAD"), "ref\n").unwrap();
    fs::write(ws.join("repos/main.git/worktrees/wt/commondir"), "../..\n").unwrap();
    fs::write(
        ws.join("wt/.git"),
        format!(
            "gitdir: {}\n",
            ws.join("repos/main.git/worktrees/wt").display()
        ),
    )
    .unwrap();
    fs::write(outside.join("file.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside, ws.join("out-link")).unwrap();
    let abstract_name = format!("rein-sandbox-test-{}-{}", std::process::id(), rand_suffix());
    let abstract_addr = {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap()
    };
    World {
        ws: ws.to_path_buf(),
        outside: outside.to_path_buf(),
        listener: TcpListener::bind("127.0.0.1:0").unwrap(),
        _unix: UnixListener::bind(outside.join("daemon.sock")).unwrap(),
        _abstract: UnixListener::bind_addr(&abstract_addr).unwrap(),
        abstract_name,
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

mod attacks;
use attacks::{attacks, py, Bystander, Control};
mod lifetimes;
use lifetimes::{survivors_die, tree_dies_on_timeout_and_cancel};
mod vanished;
use rein_test_support::processes;

async fn escapes_fail(sandbox: Sandbox) {
    escapes_fail_in(sandbox, world()).await;
}

async fn escapes_fail_in(sandbox: Sandbox, w: World) {
    // bubblewrap run by root empties every set but the bounding set; no-new-privs makes
    // what is left there unreachable (no exec can raise a capability).
    let bounding_kept = sandbox.mechanism() == Some(SandboxMechanism::Bubblewrap) && is_root();
    let tool = shell(sandbox);
    let ws = w.ws.as_path();
    let ww = SandboxPolicy::WorkspaceWrite;

    // Ordinary work inside the workspace and the temp dir succeeds, FIFOs and socket
    // pairs included.
    let (ok, text) = run(
        &tool,
        ws,
        ww,
        &format!(
            "echo hi > src/a.txt && t=$(mktemp) && echo t > $t && rm $t && mkfifo src/fifo && \
             rm src/fifo && chmod 640 src/a.txt && touch src/a.txt && \
             {} && cat src/a.txt",
            py("import socket; a, b = socket.socketpair(); a.send(b\"x\"); assert b.recv(1) == b\"x\"")
        ),
    )
    .await;
    assert!(ok, "{text}");
    assert_eq!(text, "hi\n");
    assert_eq!(fs::read_to_string(ws.join("src/a.txt")).unwrap(), "hi\n");
    let (ok, text) = run(
        &tool,
        ws,
        ww,
        "echo top > new-at-root.txt && cat < /dev/null",
    )
    .await;
    assert!(ok, "{text}");
    // No capability in any set, no way to gain one, and the filter in place.
    let (ok, text) = run(
        &tool,
        ws,
        ww,
        "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status",
    )
    .await;
    assert!(ok, "{text}");
    let fields: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k, v.trim()))
        .collect();
    let zero = "0000000000000000";
    let bounding = fields
        .iter()
        .find(|(k, _)| *k == "CapBnd")
        .map_or("", |(_, v)| *v);
    let bounding = if bounding_kept { bounding } else { zero };
    assert_eq!(
        fields,
        [
            ("CapInh", zero),
            ("CapPrm", zero),
            ("CapEff", zero),
            ("CapBnd", bounding),
            ("CapAmb", zero),
            ("NoNewPrivs", "1"),
            ("Seccomp", "2"),
        ],
        "{text}"
    );

    let mut bystander = Bystander::start();
    let attacks = attacks(&w, bystander.0.id());
    for a in &attacks {
        let (_, text) = run(&tool, ws, a.policy, &a.script).await;
        if std::env::var_os("REIN_SANDBOX_SHOW").is_some() {
            eprintln!("{}: {}", a.name, text.trim());
        }
        assert!(
            !text.contains(PWNED),
            "{} succeeded in the sandbox: {text}",
            a.name
        );
    }
    assert!(bystander.alive());
    let (_, text) = run(
        &tool,
        ws,
        ww,
        &format!("kill -9 {} && echo {PWNED}", bystander.0.id()),
    )
    .await;
    assert!(!text.contains(PWNED), "killing an outside process: {text}");
    assert!(bystander.alive(), "the sandbox killed an outside process");
    assert!(!w.outside.join("pwned").exists());
    for (file, text) in [
        (".git/config", "[core]\n"),
        ("sub/.git/config", "[core]\n"),
        ("repos/main.git/config", "[core]\n"),
        ("repos/main.git/worktrees/wt/HEAD", "ref\n"),
    ] {
        assert_eq!(fs::read_to_string(ws.join(file)).unwrap(), text, "{file}");
    }
    assert!(!ws.join(".git/hooks-pwned").exists());
    assert!(!ws.join("src/b.txt").exists());
    assert!(!ws.join("src/disk").exists());
    assert!(fs::read_to_string(ws.join("wt/.git"))
        .unwrap()
        .contains("repos/main.git"));

    // Read-only: reading works.
    let (ok, text) = run(&tool, ws, SandboxPolicy::ReadOnly, "cat src/a.txt").await;
    assert!(ok, "{text}");

    // Controls: each attack works without the sandbox, so each block is real.
    let full = SandboxPolicy::DangerFullAccess;
    for a in &attacks {
        let (_, text) = run(&tool, ws, full, &a.script).await;
        match a.control {
            Control::RootOnly if !is_root() => {
                assert!(
                    !text.contains(PWNED),
                    "{} (needs root) worked as a user: {text}",
                    a.name
                );
            }
            _ => assert!(text.contains(PWNED), "control of {}: {text}", a.name),
        }
    }
    let (_, text) = run(
        &tool,
        ws,
        full,
        &format!("kill -9 {} && echo {PWNED}", bystander.0.id()),
    )
    .await;
    assert!(text.contains(PWNED), "control kill: {text}");
}

#[tokio::test]
async fn landlock_sandbox_blocks_every_escape() {
    let sandbox = Sandbox::landlock().unwrap();
    assert_eq!(sandbox.mechanism(), Some(SandboxMechanism::Landlock));
    assert!(sandbox.has_namespaces(), "{:?}", sandbox.report());
    escapes_fail(sandbox).await;
}

#[tokio::test]
#[cfg_attr(
    not(rein_has_bwrap),
    ignore = "needs bubblewrap (scripts/test-setup.sh installs it)"
)]
async fn bubblewrap_sandbox_blocks_every_escape() {
    let sandbox = Sandbox::bubblewrap().unwrap_or_else(|why| panic!("bubblewrap: {why}"));
    escapes_fail(sandbox).await;
}

#[test]
fn detection_finds_the_best_mechanism_on_this_kernel() {
    let sandbox = Sandbox::detect();
    assert_eq!(sandbox.unavailable_reason(), None);
    assert_eq!(sandbox.mechanism(), Some(SandboxMechanism::Landlock));
    let report = sandbox.report();
    for feature in [
        "pid-namespace",
        "read-only-mounts",
        "no-capabilities",
        "seccomp",
        "own-proc",
    ] {
        assert!(report.features.iter().any(|f| f == feature), "{report:?}");
    }
    assert!(
        report
            .summary()
            .starts_with("sandbox: landlock (Landlock ABI "),
        "{}",
        report.summary()
    );
}

#[tokio::test]
async fn without_namespaces_git_stays_read_only_by_granting_around_it() {
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
        "echo evil > sub/.git/config",
        "echo evil > repos/main.git/config",
    ] {
        let (ok, text) = run(&tool, ws, ww, script).await;
        assert!(!ok, "{script}: {text}");
    }
    assert_eq!(
        fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        fs::read_to_string(ws.join("sub/.git/config")).unwrap(),
        "[core]\n"
    );
    // The documented cost: nothing new directly in a directory on the way to a `.git`.
    let (ok, _) = run(&tool, ws, ww, "echo x > new-at-root.txt").await;
    assert!(!ok);
    let (ok, text) = run(&tool, ws, ww, "echo x > src/new.txt").await;
    assert!(ok, "{text}");
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
        matches!(&requests[0], ClientRequest::Command { reason, .. } if reason.contains("Read-only file system")),
        "{requests:?}"
    );
}

/// Users are rarely root: as an unprivileged user the sandbox enters a user namespace.
/// When the suite runs as root, rerun the escape and lifetime tests as `nobody` in a child
/// test process.
#[test]
#[cfg_attr(
    not(rein_is_root),
    ignore = "run as root, it reruns the tests as nobody (run as a user, the other tests are that run)"
)]
fn the_sandbox_holds_as_an_unprivileged_user() {
    if !is_root() {
        // Already unprivileged: the other tests cover this case.
        eprintln!("running as a user already: the other tests are the unprivileged run");
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
    rein_test_support::executables::install_executable(&std::env::current_exe().unwrap(), &runner);
    for test in ["unprivileged_escape_attempts", "unprivileged_survivors"] {
        let status = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&runner)
            // The test's full name in this binary (its module path without the crate).
            .args([
                "--exact",
                &rein_test_support::test_name(module_path!(), test),
            ])
            .args(["--ignored", "--test-threads=1"])
            .env("TMPDIR", &tmp)
            .env("REIN_SANDBOX_WS", &ws)
            .env("REIN_SANDBOX_OUTSIDE", &outside)
            .status()
            .unwrap();
        assert!(status.success(), "{test} as nobody failed: {status}");
    }
}

/// Run only by the test above, as `nobody`.
#[tokio::test]
#[ignore = "run as an unprivileged user by the_sandbox_holds_as_an_unprivileged_user"]
async fn unprivileged_escape_attempts() {
    let ws = PathBuf::from(std::env::var_os("REIN_SANDBOX_WS").unwrap());
    let outside = PathBuf::from(std::env::var_os("REIN_SANDBOX_OUTSIDE").unwrap());
    let sandbox = Sandbox::landlock().unwrap();
    assert!(sandbox.has_namespaces(), "{:?}", sandbox.report());
    escapes_fail_in(sandbox, world_in(&ws, &outside)).await;
}

/// Run only by the test above, as `nobody`.
#[tokio::test]
#[ignore = "run as an unprivileged user by the_sandbox_holds_as_an_unprivileged_user"]
async fn unprivileged_survivors() {
    survivors_die().await;
    tree_dies_on_timeout_and_cancel().await;
}

/// A fresh directory outside the temp dir (which workspace-write leaves writable).
fn outside_temp() -> tempfile::TempDir {
    // As `nobody` (see above), under the directory made for it.
    if let Some(dir) = std::env::var_os("REIN_SANDBOX_OUTSIDE") {
        return tempfile::tempdir_in(dir).unwrap();
    }
    let base = rein_core::tools::testing::base_outside_temp([
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        Path::new("/var/tmp"),
    ])
    .unwrap();
    tempfile::tempdir_in(base).unwrap()
}
