//! The advisor inside real turns, its own request answered by the scripted model too: a
//! rejection declines the whole batch (nothing runs, the model reads why), a warning lets
//! it go on and is recorded, `lightweight` leaves low-risk batches alone, a broken
//! advisor (error, timeout, garbage) fails open, and an approval never relaxes the policy.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rein_core::model::scripted::ScriptedModel;
use rein_core::{KernelConfig, ThreadManager, ThreadOptions};
use rein_protocol::advisor::{AdvisorConfig, AdvisorMode};
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{
    AdvisorFailure, AdvisorRisk, AdvisorVerdict, ApprovalPolicy, Decliner, Event, EventMsg, Item,
    Op, SandboxPolicy, ToolOutcome,
};
use rein_tools::builtin::{builtin_tools, BuiltinConfig};
use serde_json::json;
use support::*;

fn manager(model: Arc<ScriptedModel>, mode: AdvisorMode, timeout: Duration) -> ThreadManager {
    ThreadManager::builder(catalog(model))
        .tools(builtin_tools(BuiltinConfig::default()))
        .config(KernelConfig {
            advisor: AdvisorConfig {
                mode,
                model: None,
                timeout,
            },
            ..fast_config()
        })
        .build()
}

fn shell(script: &str) -> ScriptedReply {
    ScriptedReply::tool_call("shell", json!({ "command": ["sh", "-c", script] }))
}

fn advisor(decision: &str, reason: &str) -> ScriptedReply {
    ScriptedReply::text(json!({ "decision": decision, "reason": reason }).to_string())
}

/// Run one turn in `dir` under full access (so the policy lets everything through) and
/// return its events.
async fn turn(m: &ThreadManager, dir: &Path, sandbox: SandboxPolicy) -> Vec<Arc<Event>> {
    let mut s = settings();
    s.cwd = dir.canonicalize().unwrap();
    s.approval_policy = ApprovalPolicy::Never;
    s.sandbox_policy = sandbox;
    let mut t = m.create_thread(ThreadOptions::new(s)).unwrap();
    t.handle.submit(Op::user_text("clean up")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(
        matches!(events.last().unwrap().msg, EventMsg::TurnCompleted { .. }),
        "{:?}",
        events.last()
    );
    events
}

fn verdicts(events: &[Arc<Event>]) -> Vec<AdvisorVerdict> {
    events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::AdvisorReviewCompleted { verdict, .. } => Some(verdict.clone()),
            _ => None,
        })
        .collect()
}

fn outcomes(events: &[Arc<Event>]) -> Vec<ToolOutcome> {
    events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ToolCallEnd { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

fn warnings(events: &[Arc<Event>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_rejection_declines_the_whole_batch_and_the_model_reads_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut batch = shell("touch one");
    batch = batch.with_tool_call("shell", json!({ "command": ["sh", "-c", "touch two"] }));
    let model = ScriptedModel::replies(vec![
        batch,
        advisor(
            "reject",
            "touching files was not asked for; list them instead",
        ),
        ScriptedReply::text("ok, listing instead"),
    ]);
    let m = manager(model.clone(), AdvisorMode::Full, Duration::from_secs(30));
    let events = turn(&m, dir.path(), SandboxPolicy::DangerFullAccess).await;

    assert!(!dir.path().join("one").exists() && !dir.path().join("two").exists());
    let reason = "the advisor rejected this batch of tool calls, so none of them ran: \
                  touching files was not asked for; list them instead";
    let declined = ToolOutcome::Declined {
        by: Decliner::Advisor,
        reason: reason.into(),
    };
    assert_eq!(outcomes(&events), vec![declined.clone(), declined]);
    assert_eq!(
        verdicts(&events),
        vec![AdvisorVerdict::Reject {
            reason: "touching files was not asked for; list them instead".into()
        }]
    );
    let started = events.iter().find_map(|e| match &e.msg {
        EventMsg::AdvisorReviewStarted { calls, risk, .. } => Some((calls.len(), *risk)),
        _ => None,
    });
    assert_eq!(started, Some((2, AdvisorRisk::Low)));

    // The advisor's own request: its instructions, no tools, a strict JSON answer.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let review = &requests[1];
    assert!(review.tools.is_empty());
    assert!(review.instructions.starts_with("You review the tool calls"));
    assert_eq!(
        review.output_schema.as_deref().unwrap()["required"],
        json!(["decision", "reason"])
    );
    let asked = review.last_user_text().unwrap();
    assert!(
        asked.contains("clean up") && asked.contains("touch two"),
        "{asked}"
    );
    // The model's next request carries the reason as both calls' output.
    let outputs: Vec<_> = requests[2]
        .input
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput {
                output, success, ..
            } => Some((output.clone(), *success)),
            _ => None,
        })
        .collect();
    assert_eq!(
        outputs,
        vec![(reason.into(), false), (reason.into(), false)]
    );
}

#[tokio::test]
async fn approve_with_warnings_lets_the_batch_run_and_records_the_warning() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        shell("touch made"),
        advisor("approve_with_warnings", "creates a file in the workspace"),
        ScriptedReply::text("done"),
    ]);
    let m = manager(model.clone(), AdvisorMode::Full, Duration::from_secs(30));
    let events = turn(&m, dir.path(), SandboxPolicy::DangerFullAccess).await;
    assert!(dir.path().join("made").exists());
    assert_eq!(
        verdicts(&events),
        vec![AdvisorVerdict::ApproveWithWarnings {
            reason: "creates a file in the workspace".into()
        }]
    );
    assert!(outcomes(&events)[0].succeeded());
    // The review completes before any call of the batch is announced.
    let position = |pred: &dyn Fn(&EventMsg) -> bool| events.iter().position(|e| pred(&e.msg));
    let reviewed = position(&|m| matches!(m, EventMsg::AdvisorReviewCompleted { .. }));
    let begun = position(&|m| matches!(m, EventMsg::ToolCallBegin { .. }));
    assert!(reviewed.unwrap() < begun.unwrap());
}

#[tokio::test]
async fn lightweight_reviews_only_batches_with_a_high_risk_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim"), "x").unwrap();
    let model = ScriptedModel::replies(vec![shell("ls"), ScriptedReply::text("listed")]);
    let m = manager(
        model.clone(),
        AdvisorMode::Lightweight,
        Duration::from_secs(30),
    );
    let events = turn(&m, dir.path(), SandboxPolicy::DangerFullAccess).await;
    assert_eq!(verdicts(&events), vec![]);
    assert_eq!(model.request_count(), 2);

    let model = ScriptedModel::replies(vec![
        shell("rm -f victim"),
        advisor("reject", "deleting files was not asked for"),
        ScriptedReply::text("kept it"),
    ]);
    let m = manager(
        model.clone(),
        AdvisorMode::Lightweight,
        Duration::from_secs(30),
    );
    let events = turn(&m, dir.path(), SandboxPolicy::DangerFullAccess).await;
    assert!(dir.path().join("victim").exists());
    let risk = events.iter().find_map(|e| match &e.msg {
        EventMsg::AdvisorReviewStarted { risk, calls, .. } => Some((*risk, calls[0].risk.clone())),
        _ => None,
    });
    assert_eq!(
        risk,
        Some((AdvisorRisk::High, Some("destructive command: rm".into())))
    );
    assert_eq!(model.request_count(), 3);
}

/// The advisor fails in the way `reply` makes it fail; the batch must run anyway.
async fn fails_open(reply: ScriptedReply, timeout: Duration) -> (AdvisorFailure, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let model =
        ScriptedModel::replies(vec![shell("touch ran"), reply, ScriptedReply::text("done")]);
    let m = manager(model.clone(), AdvisorMode::Full, timeout);
    let events = turn(&m, dir.path(), SandboxPolicy::DangerFullAccess).await;
    assert!(dir.path().join("ran").exists(), "the batch did not run");
    let [AdvisorVerdict::FailedOpen { failure, .. }] = verdicts(&events)[..] else {
        panic!("{:?}", verdicts(&events));
    };
    (failure, warnings(&events))
}

#[tokio::test]
async fn an_advisor_that_errors_fails_open_with_a_warning() {
    let reply = ScriptedReply::default().with_fault(Fault::HttpError {
        status: 400,
        message: Some("no such model".into()),
    });
    let (failure, warnings) = fails_open(reply, Duration::from_secs(30)).await;
    assert_eq!(failure, AdvisorFailure::Error);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("no such model"), "{warnings:?}");
}

#[tokio::test]
async fn an_advisor_that_answers_garbage_fails_open_with_a_warning() {
    let reply = ScriptedReply::text("Sure, looks fine to me!");
    let (failure, warnings) = fails_open(reply, Duration::from_secs(30)).await;
    assert_eq!(failure, AdvisorFailure::Garbage);
    assert!(
        warnings[0].contains("Sure, looks fine to me!"),
        "{warnings:?}"
    );
    // Valid JSON of the wrong shape is garbage too.
    let reply = ScriptedReply::text(r#"{"decision": "maybe", "reason": "?"}"#);
    assert_eq!(
        fails_open(reply, Duration::from_secs(30)).await.0,
        AdvisorFailure::Garbage
    );
}

#[tokio::test]
async fn an_advisor_that_never_answers_times_out_and_fails_open() {
    let reply = ScriptedReply::text("{").with_fault(Fault::Hang);
    let (failure, warnings) = fails_open(reply, Duration::from_millis(200)).await;
    assert_eq!(failure, AdvisorFailure::Timeout);
    assert!(
        warnings[0].contains("no answer within 200 ms"),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn an_approval_never_relaxes_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** End Patch\n";
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("apply_patch", json!({ "input": patch })),
        advisor("approve", "a harmless new file"),
        ScriptedReply::text("could not"),
    ]);
    let m = manager(model.clone(), AdvisorMode::Full, Duration::from_secs(30));
    let events = turn(&m, dir.path(), SandboxPolicy::ReadOnly).await;
    assert!(!dir.path().join("new.txt").exists());
    assert_eq!(
        verdicts(&events),
        vec![AdvisorVerdict::Approve {
            reason: "a harmless new file".into()
        }]
    );
    assert!(
        matches!(
            &outcomes(&events)[..],
            [ToolOutcome::Declined {
                by: Decliner::Policy,
                ..
            }]
        ),
        "{:?}",
        outcomes(&events)
    );
}
