//! The policy-checked shell tool: approval prompts, denials, refusal without a sandbox,
//! and approve-for-session, with real processes.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rein_core::tools::testing::{call, settings, RecordingHost, ScriptedAnswer};
use rein_core::tools::Tool;
use rein_protocol::{ApprovalDecision, ApprovalPolicy, ClientRequest, SandboxPolicy, ThreadId};
use rein_tools::policy::{PolicyConfig, PolicyEngine};
use rein_tools::sandbox::Sandbox;
use rein_tools::shell::ShellConfig;
use rein_tools::shell_tool::ShellTool;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn tool(sandbox: Sandbox) -> ShellTool {
    let sandbox = Arc::new(sandbox);
    let policy = Arc::new(PolicyEngine::new(
        PolicyConfig::default(),
        sandbox.unavailable_reason().map(str::to_owned),
    ));
    ShellTool::new(ShellConfig::default(), policy, sandbox)
}

#[tokio::test]
async fn untrusted_asks_before_a_writing_command_and_a_denial_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new().answering([ScriptedAnswer::Decide(ApprovalDecision::Deny)]);
    let ctx = host.context(
        ThreadId::new(),
        settings(
            dir.path(),
            ApprovalPolicy::Untrusted,
            SandboxPolicy::DangerFullAccess,
        ),
        CancellationToken::new(),
    );
    let shell = tool(Sandbox::unavailable("test"));
    let result = shell
        .run(
            call("shell", json!({"command": ["touch", "made"]})),
            ctx.clone(),
        )
        .await;
    assert!(!result.success);
    assert!(result.output.contains("denied"), "{}", result.output);
    assert!(!dir.path().join("made").exists());
    match &host.approval_requests()[..] {
        [ClientRequest::Command { command, cwd, .. }] => {
            assert_eq!(command, &["touch", "made"]);
            assert_eq!(cwd, dir.path());
        }
        other => panic!("{other:?}"),
    }
    // A known-safe command runs without asking.
    let result = shell
        .run(call("shell", json!({"command": "ls"})), ctx)
        .await;
    assert!(result.success, "{}", result.output);
    assert_eq!(host.approval_requests().len(), 1);
}

#[tokio::test]
async fn approve_for_session_covers_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new()
        .answering([ScriptedAnswer::Decide(ApprovalDecision::ApproveForSession)]);
    let ctx = host.context(
        ThreadId::new(),
        settings(
            dir.path(),
            ApprovalPolicy::Untrusted,
            SandboxPolicy::DangerFullAccess,
        ),
        CancellationToken::new(),
    );
    let shell = tool(Sandbox::unavailable("test"));
    // The second command starts with the approved argv: covered by the same approval.
    for argv in [json!(["touch", "one"]), json!(["touch", "one", "two"])] {
        let result = shell
            .run(call("shell", json!({"command": argv})), ctx.clone())
            .await;
        assert!(result.success, "{}", result.output);
    }
    assert!(dir.path().join("one").exists() && dir.path().join("two").exists());
    assert_eq!(host.approval_requests().len(), 1);
}

#[tokio::test]
async fn sandboxed_commands_are_refused_without_a_sandbox_never_run_bare() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new();
    for sandbox in [SandboxPolicy::ReadOnly, SandboxPolicy::WorkspaceWrite] {
        let ctx = host.context(
            ThreadId::new(),
            settings(dir.path(), ApprovalPolicy::Never, sandbox),
            CancellationToken::new(),
        );
        let result = tool(Sandbox::unavailable("landlock is not enabled"))
            .run(call("shell", json!({"command": ["touch", "made"]})), ctx)
            .await;
        assert!(!result.success);
        assert!(
            result.output.contains("landlock is not enabled"),
            "{}",
            result.output
        );
        assert!(!dir.path().join("made").exists());
    }
}

#[tokio::test]
async fn escalation_under_never_is_denied_by_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(
            dir.path(),
            ApprovalPolicy::Never,
            SandboxPolicy::WorkspaceWrite,
        ),
        CancellationToken::new(),
    );
    let result = tool(Sandbox::detect())
        .run(
            call(
                "shell",
                json!({"command": ["touch", "made"], "with_escalated_permissions": true}),
            ),
            ctx,
        )
        .await;
    assert!(!result.success);
    assert!(
        result.output.contains("denied by the sandbox policy"),
        "{}",
        result.output
    );
    assert!(host.approval_requests().is_empty());
    assert!(!dir.path().join("made").exists());
}

#[tokio::test]
async fn a_patch_sent_through_the_shell_is_applied_in_process_under_the_patch_policy() {
    let dir = outside_temp();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(
            dir.path(),
            ApprovalPolicy::Never,
            SandboxPolicy::WorkspaceWrite,
        ),
        CancellationToken::new(),
    );
    // No sandbox is needed: the patch never reaches a process.
    let shell = tool(Sandbox::unavailable("test"));
    let script = "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\nEOF\n";
    let result = shell
        .run(
            call("shell", json!({"command": ["bash", "-lc", script]})),
            ctx.clone(),
        )
        .await;
    assert!(result.success, "{}", result.output);
    assert!(result.output.contains("A hello.txt"), "{}", result.output);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/hello.txt")).unwrap(),
        "hi\n"
    );

    let into_git = "*** Begin Patch\n*** Add File: ../.git/hooks/pre-commit\n+evil\n*** End Patch";
    let result = shell
        .run(
            call(
                "shell",
                json!({"command": ["apply_patch", into_git], "workdir": "sub"}),
            ),
            ctx,
        )
        .await;
    assert!(!result.success, "{}", result.output);
    assert!(
        result.output.contains("denied by the sandbox policy"),
        "{}",
        result.output
    );
    assert!(!dir.path().join(".git/hooks").exists());
}

#[tokio::test]
async fn parallel_calls_wait_for_their_approvals_independently() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new().answering([ScriptedAnswer::Park, ScriptedAnswer::Park]);
    let shell = Arc::new(tool(Sandbox::unavailable("test")));
    let spawn_call = |name: &'static str| {
        let ctx = host.context(
            ThreadId::new(),
            settings(
                dir.path(),
                ApprovalPolicy::Untrusted,
                SandboxPolicy::DangerFullAccess,
            ),
            CancellationToken::new(),
        );
        let shell = Arc::clone(&shell);
        tokio::spawn(async move {
            shell
                .run(call("shell", json!({"command": ["touch", name]})), ctx)
                .await
        })
    };
    let first = spawn_call("first");
    host.wait_for_requests(1).await;
    let second = spawn_call("second");
    host.wait_for_requests(2).await;
    // Answer the second first: it finishes while the first still waits.
    assert!(host.answer_parked(1, ApprovalDecision::Approve));
    let second = second.await.unwrap();
    assert!(second.success, "{}", second.output);
    assert!(dir.path().join("second").exists());
    assert!(!first.is_finished());
    assert!(host.answer_parked(0, ApprovalDecision::Deny));
    let first = first.await.unwrap();
    assert!(!first.success);
    assert!(!dir.path().join("first").exists());
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
