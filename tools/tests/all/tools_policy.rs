//! The policy engine: every approval policy × sandbox policy cell for commands and
//! patches, the sandbox-unavailable refusal, approve-for-session, deny, abort and
//! cancellation of a parked approval.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::tools::testing::{settings, RecordingHost, ScriptedAnswer};
use rein_protocol::{ApprovalDecision, ApprovalPolicy, ClientRequest, SandboxPolicy, ThreadId};
use rein_tools::policy::{
    judge, Action, ExecSandbox, JudgeInput, PolicyConfig, PolicyEngine, Refusal, SessionApprovals,
    Verdict,
};
use tokio_util::sync::CancellationToken;

use ApprovalPolicy::{Never, OnFailure, OnRequest, Untrusted};
use SandboxPolicy::{DangerFullAccess as Full, ReadOnly as Ro, WorkspaceWrite as Ww};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum V {
    A,
    D,
    N,
}

fn kind(v: &Verdict) -> V {
    match v {
        Verdict::Allowed => V::A,
        Verdict::DeniedBySandbox { .. } => V::D,
        Verdict::NeedsApproval { .. } => V::N,
    }
}

fn cmd(words: &[&str], escalate: bool) -> Action {
    Action::Command {
        argv: words.iter().map(|w| (*w).to_owned()).collect(),
        env: std::collections::BTreeMap::new(),
        cwd: PathBuf::from("/"),
        escalate,
        justification: None,
    }
}

fn patch(path: &str) -> Action {
    Action::Patch {
        paths: vec![PathBuf::from(path)],
    }
}

fn verdict(
    ws: &Path,
    approval: ApprovalPolicy,
    sandbox: SandboxPolicy,
    unavailable: Option<&str>,
    action: &Action,
) -> Verdict {
    let session = SessionApprovals::default();
    let input = JudgeInput {
        approval,
        sandbox,
        cwd: ws,
        options: &Default::default(),
        sandbox_unavailable: unavailable,
        session: &session,
    };
    judge(&input, action)
}

#[test]
fn every_approval_and_sandbox_cell() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join(".git")).unwrap();
    let actions = [
        ("safe command", cmd(&["ls", "-l"], false)),
        ("unsafe command", cmd(&["touch", "x"], false)),
        ("escalated command", cmd(&["touch", "x"], true)),
        ("patch inside", patch("src/a.rs")),
        ("patch outside", patch("/etc/rein-x")),
        ("patch into .git", patch(".git/config")),
        ("patch via ..", patch("sub/../../../escape.txt")),
    ];
    use V::{A, D, N};
    // Rows: approval policy; for each action, the verdict under [read-only,
    // workspace-write, danger-full-access].
    let table: [(ApprovalPolicy, [[V; 3]; 7]); 4] = [
        (
            Untrusted,
            [
                [A, A, A],
                [N, N, N],
                [N, N, N],
                [N, N, N],
                [N, N, N],
                [N, N, N],
                [N, N, N],
            ],
        ),
        (
            OnRequest,
            [
                [A, A, A],
                [A, A, A],
                [N, N, A],
                [N, A, A],
                [N, N, A],
                [N, N, A],
                [N, N, A],
            ],
        ),
        (
            OnFailure,
            [
                [A, A, A],
                [A, A, A],
                [N, N, A],
                [N, A, A],
                [N, N, A],
                [N, N, A],
                [N, N, A],
            ],
        ),
        (
            Never,
            [
                [A, A, A],
                [A, A, A],
                [D, D, A],
                [D, A, A],
                [D, D, A],
                [D, D, A],
                [D, D, A],
            ],
        ),
    ];
    for (approval, rows) in table {
        for ((name, action), expected) in actions.iter().zip(rows) {
            for (sandbox, want) in [Ro, Ww, Full].into_iter().zip(expected) {
                let got = verdict(&ws, approval, sandbox, None, action);
                assert_eq!(
                    kind(&got),
                    want,
                    "{approval:?} × {sandbox:?}: {name} → {got:?}"
                );
            }
        }
    }
}

#[test]
fn sandboxed_commands_are_refused_when_no_sandbox_is_available() {
    let ws = Path::new("/");
    for approval in [Untrusted, OnRequest, OnFailure, Never] {
        for sandbox in [Ro, Ww] {
            let v = verdict(
                ws,
                approval,
                sandbox,
                Some("landlock not supported"),
                &cmd(&["ls"], false),
            );
            match v {
                Verdict::DeniedBySandbox { reason } => {
                    assert!(reason.contains("landlock not supported"))
                }
                other => panic!("{approval:?} × {sandbox:?}: {other:?}"),
            }
        }
        let v = verdict(ws, approval, Full, Some("x"), &cmd(&["ls"], false));
        assert_eq!(kind(&v), V::A);
    }
}

fn engine() -> Arc<PolicyEngine> {
    Arc::new(PolicyEngine::new(PolicyConfig::default(), None))
}

#[tokio::test]
async fn approve_for_session_is_remembered_per_thread_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new()
        .answering([ScriptedAnswer::Decide(ApprovalDecision::ApproveForSession)]);
    let thread = ThreadId::new();
    let ctx = host.context(
        thread,
        settings(dir.path(), Untrusted, Ww),
        CancellationToken::new(),
    );
    let policy = engine();
    let permit = policy
        .authorize(&ctx, cmd(&["cargo", "build"], false))
        .await
        .unwrap();
    assert!(permit.approved_by_user);
    assert_eq!(permit.sandbox, ExecSandbox::Enforced(Ww));
    // Same prefix: no second prompt (the host would deny it).
    let permit = policy
        .authorize(&ctx, cmd(&["cargo", "build", "--release"], false))
        .await
        .unwrap();
    assert!(!permit.approved_by_user);
    assert_eq!(host.approval_requests().len(), 1);
    // A different command is asked about (and denied by the exhausted script).
    let refused = policy
        .authorize(&ctx, cmd(&["cargo", "publish"], false))
        .await;
    assert_eq!(refused, Err(Refusal::DeniedByUser));
    // Another thread has its own session.
    let other = host.context(
        ThreadId::new(),
        settings(dir.path(), Untrusted, Ww),
        CancellationToken::new(),
    );
    assert_eq!(
        policy
            .authorize(&other, cmd(&["cargo", "build"], false))
            .await,
        Err(Refusal::DeniedByUser)
    );
    // A thread's approvals go with its tool state.
    host.forget_thread(thread);
    let fresh = host.context(
        thread,
        settings(dir.path(), Untrusted, Ww),
        CancellationToken::new(),
    );
    assert_eq!(
        policy
            .authorize(&fresh, cmd(&["cargo", "build"], false))
            .await,
        Err(Refusal::DeniedByUser)
    );
}

#[tokio::test]
async fn approved_patch_path_is_remembered_for_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new()
        .answering([ScriptedAnswer::Decide(ApprovalDecision::ApproveForSession)]);
    let ctx = host.context(
        ThreadId::new(),
        settings(dir.path(), OnRequest, Ro),
        CancellationToken::new(),
    );
    let policy = engine();
    policy.authorize(&ctx, patch("notes.txt")).await.unwrap();
    policy.authorize(&ctx, patch("notes.txt")).await.unwrap();
    assert_eq!(host.approval_requests().len(), 1);
    match &host.approval_requests()[0] {
        ClientRequest::Patch { files, reason } => {
            assert_eq!(files, &[PathBuf::from("notes.txt")]);
            assert!(reason.contains("read-only"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_context_without_session_grants_ignores_what_the_session_approved() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new().answering([
        ScriptedAnswer::Decide(ApprovalDecision::ApproveForSession),
        ScriptedAnswer::Decide(ApprovalDecision::ApproveForSession),
    ]);
    let thread = ThreadId::new();
    let ctx = host.context(
        thread,
        settings(dir.path(), OnRequest, Ro),
        CancellationToken::new(),
    );
    let policy = engine();
    policy.authorize(&ctx, patch("notes.txt")).await.unwrap();
    policy
        .authorize(&ctx, cmd(&["make", "deploy"], true))
        .await
        .unwrap();
    // A review turn of the same thread: read-only, never asking, and blind to both grants.
    let review = host
        .context(
            thread,
            settings(dir.path(), Never, Ro),
            CancellationToken::new(),
        )
        .without_session_grants();
    assert!(matches!(
        policy.authorize(&review, patch("notes.txt")).await,
        Err(Refusal::DeniedBySandbox { .. })
    ));
    assert!(matches!(
        policy
            .authorize(&review, cmd(&["make", "deploy"], true))
            .await,
        Err(Refusal::DeniedBySandbox { .. })
    ));
    assert_eq!(
        host.approval_requests().len(),
        2,
        "the review asked nothing"
    );
}

#[tokio::test]
async fn escalation_approved_runs_without_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let host = RecordingHost::new().answering([ScriptedAnswer::Decide(ApprovalDecision::Approve)]);
    let ctx = host.context(
        ThreadId::new(),
        settings(dir.path(), OnRequest, Ww),
        CancellationToken::new(),
    );
    let permit = engine()
        .authorize(&ctx, cmd(&["make"], true))
        .await
        .unwrap();
    assert_eq!(permit.sandbox, ExecSandbox::None);
    assert!(permit.approved_by_user);
}

#[tokio::test]
async fn abort_and_cancellation_refuse_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let policy = engine();
    let host = RecordingHost::new().answering([
        ScriptedAnswer::Decide(ApprovalDecision::Abort),
        ScriptedAnswer::Drop,
    ]);
    let ctx = host.context(
        ThreadId::new(),
        settings(dir.path(), Untrusted, Ww),
        CancellationToken::new(),
    );
    assert_eq!(
        policy.authorize(&ctx, cmd(&["rm", "x"], false)).await,
        Err(Refusal::Aborted)
    );
    assert_eq!(
        policy.authorize(&ctx, cmd(&["rm", "x"], false)).await,
        Err(Refusal::Cancelled)
    );

    // A parked request resolves as cancelled when the turn is cancelled.
    let host = RecordingHost::new().answering([ScriptedAnswer::Park]);
    let cancel = CancellationToken::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(dir.path(), Untrusted, Ww),
        cancel.clone(),
    );
    let pending = {
        let policy = Arc::clone(&policy);
        tokio::spawn(async move { policy.authorize(&ctx, cmd(&["rm", "x"], false)).await })
    };
    cancel.cancel();
    assert_eq!(pending.await.unwrap(), Err(Refusal::Cancelled));
}
