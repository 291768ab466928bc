//! The built-in tools inside real turns: a patch edits a real file and the turn reports
//! per-file and aggregated diffs; a shell command's output reaches the model; a grant
//! "for the session" is folded from the thread's events, so a resumed thread keeps it.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::recorder::{MemoryRecorder, NullRecorder};
use rein_core::{ThreadManager, ThreadOptions};
use rein_protocol::script::ScriptedReply;
use rein_protocol::{
    ApprovalDecision, ApprovalOutcome, ApprovalPolicy, Event, EventMsg, FileChangeKind, Item, Op,
    SandboxPolicy,
};
use rein_tools::builtin::{builtin_tools, BuiltinConfig};
use serde_json::json;
use support::*;

fn manager_with_builtins(model: Arc<ScriptedModel>) -> ThreadManager {
    ThreadManager::builder(catalog(model))
        .tools(builtin_tools(BuiltinConfig::default()))
        .config(fast_config())
        .build()
}

#[tokio::test]
async fn a_patch_in_a_turn_edits_the_file_and_reports_its_diffs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greet.txt"), "hello\nworld\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: greet.txt\n@@\n hello\n-world\n+rein\n*** Add File: new.txt\n+fresh\n*** End Patch\n";
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("apply_patch", json!({ "input": patch })),
        ScriptedReply::text("patched"),
    ]);
    let m = manager_with_builtins(model.clone());
    let mut s = settings();
    s.cwd = dir.path().canonicalize().unwrap();
    s.approval_policy = ApprovalPolicy::Never;
    s.sandbox_policy = SandboxPolicy::WorkspaceWrite;
    let mut t = m.create_thread(ThreadOptions::new(s)).unwrap();
    t.handle
        .submit(Op::user_text("rename world"))
        .await
        .unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(
        matches!(events.last().unwrap().msg, EventMsg::TurnCompleted { .. }),
        "{:?}",
        events.last()
    );

    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.txt")).unwrap(),
        "hello\nrein\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "fresh\n"
    );
    let changes = events.iter().find_map(|e| match &e.msg {
        EventMsg::ToolCallEnd {
            outcome: rein_protocol::ToolOutcome::Patched { changes },
            ..
        } => Some(changes.clone()),
        _ => None,
    });
    let changes = changes.unwrap();
    assert_eq!(changes[0].path, s_cwd(&events).join("greet.txt"));
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].kind, FileChangeKind::Update);
    assert!(
        changes[0].unified_diff.contains("-world") && changes[0].unified_diff.contains("+rein")
    );
    assert_eq!(changes[1].kind, FileChangeKind::Add);
    let turn_diff = events.iter().find_map(|e| match &e.msg {
        EventMsg::TurnDiff { unified_diff } => Some(unified_diff.clone()),
        _ => None,
    });
    let turn_diff = turn_diff.unwrap();
    assert!(turn_diff.contains("+rein") && turn_diff.contains("+fresh"));
}

#[tokio::test]
async fn a_shell_call_runs_a_real_process_and_its_output_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call(
            "shell",
            json!({ "command": ["sh", "-c", "echo from-the-shell"] }),
        ),
        ScriptedReply::text("seen"),
    ]);
    let m = manager_with_builtins(model.clone());
    let mut s = settings();
    s.cwd = dir.path().canonicalize().unwrap();
    s.approval_policy = ApprovalPolicy::Never;
    s.sandbox_policy = SandboxPolicy::DangerFullAccess;
    let mut t = m.create_thread(ThreadOptions::new(s)).unwrap();
    t.handle.submit(Op::user_text("run it")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(events.iter().any(|e| matches!(&e.msg, EventMsg::ToolOutputDelta { delta, .. } if delta.contains("from-the-shell"))));
    let second = &model.requests()[1];
    assert!(second.input.iter().any(|i| matches!(i.as_ref(), Item::ToolOutput { output, success: true, .. } if output.contains("from-the-shell"))));
}

#[tokio::test]
async fn a_review_reads_with_a_clean_context_cannot_write_and_its_findings_stay() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "fn main() {}\n").unwrap();
    let patch = "*** Begin Patch\n*** Add File: sneaky.txt\n+no\n*** End Patch\n";
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("hello back"),
        ScriptedReply::tool_call("apply_patch", json!({ "input": patch })),
        ScriptedReply::tool_call("read_file", json!({ "path": "lib.rs" })),
        ScriptedReply::text("lib.rs:1: main does nothing"),
        ScriptedReply::text("fixing it"),
    ]);
    let m = manager_with_builtins(model.clone());
    let mut s = settings();
    s.cwd = dir.path().canonicalize().unwrap();
    s.approval_policy = ApprovalPolicy::OnRequest;
    s.sandbox_policy = SandboxPolicy::WorkspaceWrite;
    let mut t = m.create_thread(ThreadOptions::new(s)).unwrap();
    t.handle.submit(Op::user_text("hello")).await.unwrap();
    t.events.wait_for(is_turn_end).await.unwrap();

    let res = t
        .handle
        .submit(Op::Review {
            target: rein_protocol::ReviewTarget::UncommittedChanges,
        })
        .await
        .unwrap();
    assert_eq!(res, rein_protocol::OpResult::Accepted);
    let events = t.events.collect_until(is_turn_end).await;
    match &events[0].msg {
        EventMsg::TurnStarted { kind, settings, .. } => {
            assert_eq!(*kind, rein_protocol::TaskKind::Review);
            assert_eq!(settings.sandbox_policy, SandboxPolicy::ReadOnly);
            assert_eq!(settings.approval_policy, ApprovalPolicy::Never);
        }
        other => panic!("expected TurnStarted, got {other:?}"),
    }
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("lib.rs:1: main does nothing".into())
        }
    );
    assert!(
        !dir.path().join("sneaky.txt").exists(),
        "a review never writes"
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e.msg, EventMsg::ClientRequested { .. })));
    let reqs = model.requests();
    // The reviewer saw only the review request, not the conversation before it.
    let first_review = &reqs[1];
    assert_eq!(first_review.input.len(), 1);
    let offered: Vec<&str> = first_review.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        offered.contains(&"read_file") && !offered.contains(&"apply_patch"),
        "{offered:?}"
    );
    assert!(request_user_texts(first_review)[0].contains("uncommitted changes"));

    // The next regular turn sees the review and its findings, and runs with the thread's
    // own settings again.
    t.handle.submit(Op::user_text("fix it")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    match &events[0].msg {
        EventMsg::TurnStarted { settings, .. } => {
            assert_eq!(settings.sandbox_policy, SandboxPolicy::WorkspaceWrite)
        }
        other => panic!("expected TurnStarted, got {other:?}"),
    }
    let last = model.requests().pop().unwrap();
    let texts: Vec<String> = last.input.iter().filter_map(|i| i.message_text()).collect();
    assert_eq!(texts[0], "hello");
    assert!(texts.iter().any(|t| t == "lib.rs:1: main does nothing"));
    assert_eq!(texts.last().unwrap(), "fix it");
}

/// The cwd the thread was configured with.
fn s_cwd(events: &[std::sync::Arc<rein_protocol::Event>]) -> std::path::PathBuf {
    events
        .iter()
        .find_map(|e| match &e.msg {
            EventMsg::TurnStarted { settings, .. } => Some(settings.cwd.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_grant_for_the_session_survives_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let touch = json!({ "command": ["touch", "granted.txt"] });
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("shell", touch.clone()),
        ScriptedReply::text("first done"),
        ScriptedReply::tool_call("shell", touch),
        ScriptedReply::text("second done"),
    ]);
    let m = ThreadManager::builder(catalog(
        model.clone() as Arc<dyn rein_core::model::ModelClient>
    ))
    .tools(builtin_tools(BuiltinConfig::default()))
    .config(fast_config())
    .build();
    let mut s = settings();
    s.cwd = dir.path().canonicalize().unwrap();
    s.approval_policy = ApprovalPolicy::Untrusted;
    s.sandbox_policy = SandboxPolicy::DangerFullAccess;
    let recorder = MemoryRecorder::default();
    let mut t = m
        .create_thread(ThreadOptions::new(s).with_recorder(Box::new(recorder.clone())))
        .unwrap();
    t.handle.submit(Op::user_text("touch it")).await.unwrap();
    let asked = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ClientRequested { .. })
    })
    .await;
    let EventMsg::ClientRequested { request_id, .. } = &asked.msg else {
        unreachable!()
    };
    t.handle
        .submit(Op::ApprovalAnswer {
            approval_id: request_id.clone(),
            decision: ApprovalDecision::ApproveForSession,
        })
        .await
        .unwrap();
    let mut events = t.events.collect_until(is_turn_end).await;
    events.insert(0, asked);
    assert!(events.iter().any(|e| matches!(
        &e.msg,
        EventMsg::ClientRequestResolved {
            outcome: ApprovalOutcome::ApprovedForSession,
            grant: Some(_),
            ..
        }
    )));
    assert!(dir.path().join("granted.txt").exists());

    // A new life of the thread, from its events alone.
    let all = t.handle.state().await.unwrap();
    assert!(all
        .session_grants
        .covers_command(&["touch".into(), "granted.txt".into()]));
    t.handle.shutdown().await.unwrap();
    let history: Vec<Event> = recorder.events();
    drop(t);
    let resumed = m
        .create_thread(ThreadOptions::resume(history, Box::new(NullRecorder)))
        .unwrap();
    let mut r = resumed;
    r.handle.submit(Op::user_text("again")).await.unwrap();
    let events = r.events.collect_until(is_turn_end).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::ClientRequested { .. })),
        "the resumed thread did not ask again: {events:?}"
    );
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
}
