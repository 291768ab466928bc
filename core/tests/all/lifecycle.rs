//! Thread lifecycle: shutdown from every status, implicit shutdown when handles are gone,
//! backpressure of the bounded queue, and state as a pure fold of the events.
#![allow(clippy::unwrap_used)]

use rein_test_support::kernel as support;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::thread::state::ThreadState;
use rein_core::{KernelConfig, ThreadError, ThreadManager, ThreadOptions};
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{AgentStatus, Event, EventMsg, InputOutcome, Op, OpResult};
use serde_json::json;
use support::*;

/// Drive a fresh thread into `status`, then shut it down and check the goodbye.
async fn shutdown_from(status: AgentStatus) {
    let model = ScriptedModel::replies(vec![match status {
        AgentStatus::Running | AgentStatus::Interrupted => {
            ScriptedReply::text("x").with_fault(Fault::Hang)
        }
        AgentStatus::Errored => ScriptedReply::default().with_fault(Fault::HttpError {
            status: 401,
            message: None,
        }),
        _ => ScriptedReply::text("ok"),
    }]);
    let m = manager(model, vec![]);
    let mut t = start(&m);
    if status != AgentStatus::PendingInit {
        t.handle.submit(Op::user_text("go")).await.unwrap();
        if status == AgentStatus::Running {
            until(&mut t.events, |e| {
                matches!(e.msg, EventMsg::AgentMessageDelta { .. })
            })
            .await;
        } else {
            if status == AgentStatus::Interrupted {
                until(&mut t.events, |e| {
                    matches!(e.msg, EventMsg::AgentMessageDelta { .. })
                })
                .await;
                t.handle.submit(Op::Interrupt).await.unwrap();
            }
            until(&mut t.events, is_turn_end).await;
        }
    }
    assert_eq!(
        t.handle.state().await.unwrap().status,
        status,
        "set-up reached {status:?}"
    );
    assert_eq!(
        t.handle.submit(Op::Shutdown).await.unwrap(),
        OpResult::Accepted
    );
    let rest = collect_all(&mut t.events).await;
    assert_eq!(
        rest.last().unwrap().msg,
        EventMsg::ShutdownComplete,
        "from {status:?}"
    );
    if status == AgentStatus::Running {
        assert!(rest
            .iter()
            .any(|e| matches!(e.msg, EventMsg::TurnAborted { .. })));
    }
    assert_eq!(
        t.handle.submit(Op::user_text("more")).await,
        Err(ThreadError::Closed(t.handle.id()))
    );
    assert!(m.list_loaded().is_empty());
}

async fn collect_all(events: &mut rein_core::EventStream) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    while let Some(e) = events.recv().await {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn shutdown_works_from_every_status() {
    for status in [
        AgentStatus::PendingInit,
        AgentStatus::Running,
        AgentStatus::Completed,
        AgentStatus::Interrupted,
        AgentStatus::Errored,
    ] {
        shutdown_from(status).await;
    }
}

#[tokio::test]
async fn the_manager_owns_a_thread_until_it_is_shut_down() {
    let model = ScriptedModel::replies(vec![ScriptedReply::tool_call("stubborn", json!({}))]);
    let tool = Arc::new(StubbornTool::default());
    let m = manager(model, vec![tool.clone()]);
    let mut t = start(&m);
    let id = t.handle.id();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    tool.started.notified().await;
    // No client holds it any more: the manager still does, and the turn goes on.
    drop(t.handle);
    assert_eq!(m.list_loaded(), vec![id]);
    let handle = m.get(id).expect("still loaded");
    assert!(!handle.is_closed());
    drop(handle);
    assert!(m.shutdown_thread(id).await);
    let rest = collect_all(&mut t.events).await;
    assert!(rest
        .iter()
        .any(|e| matches!(e.msg, EventMsg::TurnAborted { .. })));
    assert_eq!(rest.last().unwrap().msg, EventMsg::ShutdownComplete);
    assert!(
        tool.dropped.load(Ordering::SeqCst),
        "the running call was released"
    );
    // The background process the call started died with the thread.
    let pid = tool.background_pid.lock().unwrap().unwrap();
    wait_dead(pid, "background process survived its thread");
    assert!(m.get(id).is_none());
    assert!(m.list_loaded().is_empty());
}

#[tokio::test]
async fn cleaning_background_work_reaches_what_each_tool_keeps_for_the_thread() {
    let model = ScriptedModel::replies(vec![ScriptedReply::tool_call("stubborn", json!({}))]);
    let tool = Arc::new(StubbornTool::default());
    let m = manager(model, vec![tool.clone()]);
    let t = start(&m);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    tool.started.notified().await;
    let pid = tool.background_pid.lock().unwrap().unwrap();
    assert_eq!(
        t.handle.submit(Op::CleanBackgroundTerminals).await.unwrap(),
        OpResult::Accepted
    );
    // The tool's per-thread state heard the hook while its call still runs.
    wait_dead(pid, "background process survived the clean-up");
    assert!(!tool.dropped.load(Ordering::SeqCst));
    t.handle.shutdown().await.unwrap();
}

/// Waits (5 s at most) until `pid` is gone or a zombie.
fn wait_dead(pid: u32, survived: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim().starts_with('Z'))
    {
        assert!(std::time::Instant::now() < deadline, "{pid}: {survived}");
        std::thread::yield_now();
    }
}

#[tokio::test]
async fn dropping_the_manager_ends_threads_nobody_else_holds() {
    let m = manager(ScriptedModel::echo(), vec![]);
    let mut t = start(&m);
    drop(t.handle);
    drop(m);
    let rest = collect_all(&mut t.events).await;
    assert_eq!(rest.last().unwrap().msg, EventMsg::ShutdownComplete);
}

#[tokio::test]
async fn every_created_thread_is_broadcast() {
    let m = manager(ScriptedModel::echo(), vec![]);
    let mut created = m.subscribe_created();
    let t = start(&m);
    let announced = created.recv().await.unwrap();
    assert_eq!(announced.handle.id(), t.handle.id());
    assert_eq!(announced.origin, rein_core::ThreadOrigin::New);
}

/// A tool that ignores cancellation until the test releases it: while an interrupt waits
/// for it (the grace period), the loop takes no Op, so the queue can be filled
/// deterministically.
#[derive(Default)]
struct GatedTool {
    started: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

impl rein_core::tools::Tool for GatedTool {
    fn spec(&self) -> rein_core::tools::ToolSpec {
        support::spec("gated")
    }

    fn run<'a>(
        &'a self,
        _call: rein_core::tools::ToolCall,
        _ctx: rein_core::tools::ToolContext,
    ) -> futures::future::BoxFuture<'a, rein_core::tools::ToolResult> {
        Box::pin(async move {
            self.started.notify_one();
            self.release.notified().await;
            rein_core::tools::ToolResult::ok("released")
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_applies_backpressure_without_losing_an_op() {
    let model = ScriptedModel::new(rein_protocol::script::Script {
        replies: vec![ScriptedReply::tool_call("gated", json!({}))],
        when_exhausted: rein_protocol::script::WhenExhausted::Echo,
        asides: Vec::new(),
    });
    let tool = Arc::new(GatedTool::default());
    let m = ThreadManager::builder(catalog(model.clone()))
        .tool(tool.clone())
        .config(KernelConfig {
            op_queue_capacity: 2,
            interrupt_grace: std::time::Duration::from_secs(60),
            ..fast_config()
        })
        .build();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();

    // Op 1 starts a turn whose tool holds on; the interrupt then keeps the loop waiting
    // for it (the grace period), taking no further Op.
    t.handle.submit(Op::user_text("m1")).await.unwrap();
    tool.started.notified().await;
    t.handle.submit(Op::Interrupt).await.unwrap();
    // Ops 2 and 3 fill the queue; op 4 must wait, not be dropped.
    t.handle.enqueue(Op::user_text("m2")).await.unwrap();
    t.handle.enqueue(Op::user_text("m3")).await.unwrap();
    assert_eq!(t.handle.queued(), 2);
    let h = t.handle.clone();
    let mut fourth = Box::pin(async move { h.enqueue(Op::user_text("m4")).await });
    assert!(
        futures::poll!(&mut fourth).is_pending(),
        "a full queue makes submit wait"
    );
    tool.release.notify_one();
    fourth.await.unwrap();

    // Every input reaches history, in order.
    loop {
        let state = t.handle.state().await.unwrap();
        if user_texts(&state.history).len() == 4 && state.is_idle() {
            assert_eq!(user_texts(&state.history), vec!["m1", "m2", "m3", "m4"]);
            break;
        }
        until(&mut t.events, is_turn_end).await;
    }
}

#[tokio::test]
async fn status_and_state_are_a_fold_of_the_events() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("one"),
        ScriptedReply::text("two").with_fault(Fault::Hang),
        ScriptedReply::tool_call("order", json!({"name": "a"})),
        ScriptedReply::text("three"),
    ]);
    let m = manager(model, vec![Arc::new(OrderTool::default())]);
    let mut t = start(&m);
    let mut seen: Vec<Arc<Event>> = Vec::new();
    t.handle.submit(Op::user_text("first")).await.unwrap();
    seen.extend(t.events.collect_until(is_turn_end).await);
    t.handle.submit(Op::user_text("second")).await.unwrap();
    seen.extend(
        t.events
            .collect_until(|e| matches!(e.msg, EventMsg::AgentMessageDelta { .. }))
            .await,
    );
    t.handle.submit(Op::Interrupt).await.unwrap();
    seen.extend(t.events.collect_until(is_turn_end).await);
    let res = t.handle.submit(Op::Recover).await.unwrap();
    assert!(matches!(res, OpResult::Input(InputOutcome::Started { .. })));
    seen.extend(t.events.collect_until(is_turn_end).await);

    let live = t.handle.state().await.unwrap();
    let folded = ThreadState::from_events(seen.iter().map(std::convert::AsRef::as_ref));
    assert_eq!(folded, live);
    assert_eq!(folded.status, AgentStatus::Completed);
    assert_eq!(
        folded.turns.len(),
        2,
        "the recovered turn continues its record"
    );
}

#[tokio::test]
async fn rollback_drops_the_last_turns_from_model_visible_history() {
    let model = ScriptedModel::echo();
    let m = manager(model.clone(), vec![]);
    let mut t = start(&m);
    for text in ["a", "b", "c"] {
        t.handle.submit(Op::user_text(text)).await.unwrap();
        until(&mut t.events, is_turn_end).await;
    }
    assert_eq!(
        t.handle.submit(Op::Rollback { turns: 2 }).await.unwrap(),
        OpResult::Accepted
    );
    let state = t.handle.state().await.unwrap();
    assert_eq!(user_texts(&state.history), vec!["a"]);
    assert!(matches!(
        t.handle.submit(Op::Rollback { turns: 5 }).await.unwrap(),
        OpResult::Refused { .. }
    ));
    t.handle.submit(Op::user_text("d")).await.unwrap();
    until(&mut t.events, is_turn_end).await;
    let last = model.requests().pop().unwrap();
    assert_eq!(request_user_texts(&last), vec!["a", "d"]);
}
