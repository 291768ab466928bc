//! Processes never outlive their call: `setsid` children and double-forked daemons die
//! with the command, on timeout and on cancel, under full access too (its supervisor).

use super::processes::{all_gone, processes_with};
use super::*;

/// A script that leaves a `setsid` child and a double-forked daemon behind, each running
/// once the script ends (each says so through a pipe before it goes quiet).
fn leave_survivors(marker: &str) -> String {
    let quiet = format!("exec sleep {marker} </dev/null >/dev/null 2>&1");
    format!(
        "read -r _ < <(setsid sh -c 'echo ready; {quiet}') && \
         read -r _ < <(sh -c '(echo ready; {quiet}) &') && echo started"
    )
}

#[tokio::test]
async fn nothing_a_sandboxed_command_starts_outlives_it() {
    survivors_die().await;
}

pub(super) async fn survivors_die() {
    let w = world();
    let tool = shell(Sandbox::landlock().unwrap());
    let ws = w.ws.as_path();
    // Full access too: its supervisor kills what the command left (`supervise.rs`).
    for policy in [
        SandboxPolicy::DangerFullAccess,
        SandboxPolicy::WorkspaceWrite,
        SandboxPolicy::ReadOnly,
    ] {
        let mark = marker();
        let (ok, text) = run(&tool, ws, policy, &leave_survivors(&mark)).await;
        assert!(ok, "{text}");
        assert!(
            all_gone(&mark),
            "survivors of a {policy:?} command: {:?}",
            processes_with(&mark)
        );
    }
}

#[tokio::test]
async fn a_sandboxed_command_tree_is_killed_on_timeout_and_on_cancel() {
    tree_dies_on_timeout_and_cancel().await;
}

pub(super) async fn tree_dies_on_timeout_and_cancel() {
    let w = world();
    let tool = shell(Sandbox::landlock().unwrap());
    let host = RecordingHost::new();
    let mark = marker();
    let script = format!("{} ; sleep {mark}", leave_survivors(&mark));
    let ctx = host.context(
        ThreadId::new(),
        settings(
            w.ws.as_path(),
            ApprovalPolicy::Never,
            SandboxPolicy::WorkspaceWrite,
        ),
        CancellationToken::new(),
    );
    let result = tool
        .run(
            call(
                "shell",
                json!({"command": ["/bin/bash", "-c", script], "timeout_ms": 1000}),
            ),
            ctx,
        )
        .await;
    assert!(!result.success);
    let body: Value = serde_json::from_str(&result.output).unwrap();
    assert_eq!(body["metadata"]["exit_code"], 124);
    assert!(body["output"].as_str().unwrap().contains("timed out"));
    assert!(
        all_gone(&mark),
        "survivors after the timeout: {:?}",
        processes_with(&mark)
    );

    let mark = marker();
    let script = format!("{} ; sleep {mark}", leave_survivors(&mark));
    let cancel = CancellationToken::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(
            w.ws.as_path(),
            ApprovalPolicy::Never,
            SandboxPolicy::WorkspaceWrite,
        ),
        cancel.clone(),
    );
    // bash, not the user's $SHELL: the script uses process substitution, and CI has no
    // $SHELL (so the string form would run dash).
    let run = tool.run(
        call("shell", json!({"command": ["/bin/bash", "-c", script]})),
        ctx,
    );
    tokio::pin!(run);
    // Cancel once the survivors exist.
    loop {
        tokio::select! {
            _ = &mut run => panic!("the command ended by itself"),
            () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
        if processes_with(&mark).len() >= 3 {
            break;
        }
    }
    cancel.cancel();
    let result = run.await;
    assert!(!result.success);
    assert!(
        all_gone(&mark),
        "survivors after cancel: {:?}",
        processes_with(&mark)
    );
}
