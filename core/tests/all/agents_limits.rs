//! Sub-agent limits against the scripted model: `max_threads` and `max_depth` refuse with
//! a readable error, `max_concurrent_turns` queues without deadlock (at 1 and 2), the tree
//! budget refuses new agents and stops running ones `BudgetLimited`, an interrupt cascades
//! to running children, and closing ends a subtree leaves first.
#![allow(clippy::unwrap_used)]

use rein_test_support::agents as agents_support;
use rein_test_support::kernel as support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agents_support::{
    completed, is_turn_end, manager, next_child, offered, settings, spawn, tool_outputs, wait,
    MODEL,
};
use pretty_assertions::assert_eq;
use rein_core::agents::{AgentState, AgentsConfig};
use rein_core::model::scripted::ScriptedModel;
use rein_core::thread::state::TurnStatus;
use rein_core::ThreadOptions;
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{EventMsg, Op, TurnAbortReason};
use serde_json::json;
use support::until;

#[tokio::test]
async fn spawns_past_max_threads_or_max_depth_are_refused_with_a_readable_error() {
    let root = ScriptedModel::replies(vec![
        spawn("child", "first"),
        spawn("child", "second"),
        ScriptedReply::tool_call("close_agent", json!({"target": "Ada"})),
        spawn("child", "third"),
        ScriptedReply::text("done"),
    ]);
    let child = ScriptedModel::replies(vec![
        // The child tries anyway: the tool is not offered, so the call fails as unknown.
        ScriptedReply::tool_call("spawn_agent", json!({"message": "grandchild"})),
        ScriptedReply::text("ok"),
    ]);
    let child_held = child.hold_reply(0);
    let config = AgentsConfig {
        max_threads: 1,
        ..AgentsConfig::default()
    };
    let m = manager(&[(MODEL, &root), ("child", &child)], config);
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    completed(&mut t.events).await;
    child_held.open();
    let outputs = tool_outputs(&root.requests().pop().unwrap());
    assert_eq!(outputs.len(), 4);
    assert_eq!(outputs[0]["nickname"], "Ada");
    assert_eq!(
        outputs[1],
        json!("agent thread limit reached: 1 agents are open (agents.max_threads = 1); close one you no longer need with close_agent")
    );
    assert_eq!(outputs[2], json!({"previous_status": "running"}));
    // Closing freed the slot.
    assert_eq!(outputs[3]["nickname"], "Babbage");
    let parent = t.handle.state().await.unwrap();
    let open: Vec<bool> = parent.children.iter().map(|c| c.open).collect();
    assert_eq!(open, vec![false, true]);
}

#[tokio::test]
async fn a_parent_at_depth_one_may_spawn_when_max_depth_allows_and_not_beyond() {
    let root = ScriptedModel::replies(vec![
        spawn("a", "delegate"),
        wait(&["Ada"]),
        ScriptedReply::text("root done"),
    ]);
    let a = ScriptedModel::replies(vec![spawn("b", "leaf work"), ScriptedReply::text("a done")]);
    let b = ScriptedModel::replies(vec![ScriptedReply::text("b done")]);
    let config = AgentsConfig {
        max_depth: 2,
        ..AgentsConfig::default()
    };
    let m = manager(&[(MODEL, &root), ("a", &a), ("b", &b)], config);
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    completed(&mut t.events).await;
    b.wait_for_requests(1).await;
    assert!(offered(&a.requests()[0]).contains(&"spawn_agent".to_owned()));
    assert!(!offered(&b.requests()[0]).contains(&"spawn_agent".to_owned()));
    assert_eq!(tool_outputs(&a.requests()[1])[0]["nickname"], "Babbage");
}

/// root → A → B, where A waits on B and root waits on A: with the tree's running-turn
/// limit at `limit`, B can only run while A's wait holds no capacity.
async fn nested_waits_finish_under(limit: usize) {
    let root = ScriptedModel::replies(vec![
        spawn("a", "delegate"),
        wait(&["Ada"]),
        ScriptedReply::text("root done"),
    ]);
    let a = ScriptedModel::replies(vec![
        spawn("b", "leaf work"),
        wait(&["Babbage"]),
        ScriptedReply::text("a done"),
    ]);
    let b = ScriptedModel::replies(vec![ScriptedReply::text("b done")]);
    let config = AgentsConfig {
        max_depth: 2,
        max_concurrent_turns: Some(limit),
        ..AgentsConfig::default()
    };
    let m = manager(&[(MODEL, &root), ("a", &a), ("b", &b)], config);
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), completed(&mut t.events))
        .await
        .expect("the tree deadlocked on its own limit");
    // Each result reaches its parent exactly once: in the wait's answer, or (when the
    // child was quicker than the wait) as mail next to an answer that does not repeat it.
    assert_eq!(results_in(&a.requests()[2], "b done"), 1);
    assert_eq!(results_in(&root.requests()[2], "a done"), 1);
}

/// How often `answer` reaches the model in `request`, in tool outputs and user messages.
fn results_in(request: &rein_core::model::ModelRequest, answer: &str) -> usize {
    let needle = format!(r#""completed":"{answer}""#);
    let in_outputs = tool_outputs(request)
        .iter()
        .filter(|o| o.to_string().contains(&needle))
        .count();
    let in_mail = agents_support::request_user_texts(request)
        .iter()
        .filter(|t| t.contains(&needle))
        .count();
    in_outputs + in_mail
}

#[tokio::test]
async fn a_waiting_parent_holds_no_capacity_with_the_limit_at_one() {
    nested_waits_finish_under(1).await;
}

#[tokio::test]
async fn a_waiting_parent_holds_no_capacity_with_the_limit_at_two() {
    nested_waits_finish_under(2).await;
}

#[tokio::test]
async fn turns_over_max_concurrent_turns_wait_for_capacity() {
    let mut both = spawn("child", "task one");
    both.tool_calls
        .extend(spawn("child", "task two").tool_calls);
    let root = ScriptedModel::replies(vec![
        both,
        wait(&["Ada", "Babbage"]),
        wait(&["Babbage"]),
        ScriptedReply::text("done"),
    ]);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("child answer")]);
    let held = child.hold_reply(0);
    let config = AgentsConfig {
        max_concurrent_turns: Some(1),
        ..AgentsConfig::default()
    };
    let m = manager(&[(MODEL, &root), ("child", &child)], config);
    let control = Arc::clone(m.agents().unwrap());
    let mut created = m.subscribe_created();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let first = next_child(&mut created).await.handle;
    let second = next_child(&mut created).await.handle;
    child.wait_for_requests(1).await;
    // One child runs (held); the other waits for capacity, visibly pending. The root is
    // not waiting yet (its first wait only starts after both spawns returned), so the
    // running child holds the tree's one slot.
    let states = [control.state_of(first.id()), control.state_of(second.id())];
    assert!(
        states.contains(&AgentState::Running) && states.contains(&AgentState::PendingInit),
        "{states:?}"
    );
    assert_eq!(child.request_count(), 1);
    held.open();
    completed(&mut t.events).await;
    assert_eq!(child.request_count(), 2);
    assert_eq!(
        control.state_of(first.id()),
        AgentState::Completed(Some("child answer".into()))
    );
    assert_eq!(
        control.state_of(second.id()),
        AgentState::Completed(Some("child answer".into()))
    );
}

#[tokio::test]
async fn interrupting_a_parent_interrupts_its_running_children() {
    let root = ScriptedModel::replies(vec![spawn("child", "work forever"), wait(&["Ada"])]);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("never").with_fault(Fault::Hang)]);
    let m = manager(
        &[(MODEL, &root), ("child", &child)],
        AgentsConfig::default(),
    );
    let mut created = m.subscribe_created();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let kid = next_child(&mut created).await.handle;
    let mut kid_events = kid.subscribe();
    child.wait_for_requests(1).await;
    root.wait_for_requests(2).await;
    t.handle.submit(Op::Interrupt).await.unwrap();
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(
        end.msg,
        EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted
        }
    ));
    let kid_end = until(&mut kid_events, is_turn_end).await;
    assert!(
        matches!(
            kid_end.msg,
            EventMsg::TurnAborted {
                reason: TurnAbortReason::Interrupted
            }
        ),
        "{kid_end:?}"
    );
    // An interrupted child sends no result: the interrupted parent stays idle.
    assert_eq!(root.request_count(), 2);
    assert!(t.handle.state().await.unwrap().is_idle());
}

#[tokio::test]
async fn closing_an_agent_ends_its_subtree_leaves_first() {
    let root = ScriptedModel::replies(vec![
        spawn("a", "manage"),
        ScriptedReply::text("spawned"),
        ScriptedReply::tool_call("close_agent", json!({"target": "Ada"})),
        ScriptedReply::text("closed"),
    ]);
    let a = ScriptedModel::replies(vec![
        spawn("b", "hang"),
        ScriptedReply::text("a waits").with_fault(Fault::Hang),
    ]);
    let b = ScriptedModel::replies(vec![ScriptedReply::text("b").with_fault(Fault::Hang)]);
    let config = AgentsConfig {
        max_depth: 2,
        ..AgentsConfig::default()
    };
    let m = manager(&[(MODEL, &root), ("a", &a), ("b", &b)], config);
    let mut created = m.subscribe_created();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let a_handle = next_child(&mut created).await.handle;
    let b_handle = next_child(&mut created).await.handle;
    let order = Arc::new(Mutex::new(Vec::new()));
    let record = |name: &'static str, mut events: rein_core::EventStream| {
        let order = Arc::clone(&order);
        tokio::spawn(async move {
            events
                .wait_for(|e| matches!(e.msg, EventMsg::ShutdownComplete))
                .await;
            order.lock().unwrap().push(name);
        })
    };
    let a_down = record("a", a_handle.subscribe());
    let b_down = record("b", b_handle.subscribe());
    b.wait_for_requests(1).await;
    a.wait_for_requests(2).await;
    completed(&mut t.events).await;
    t.handle.submit(Op::user_text("close it")).await.unwrap();
    completed(&mut t.events).await;
    a_down.await.unwrap();
    b_down.await.unwrap();
    assert_eq!(*order.lock().unwrap(), vec!["b", "a"]);
    assert!(m.get(a_handle.id()).is_none());
    assert!(m.get(b_handle.id()).is_none());
    let outputs = tool_outputs(&root.requests().pop().unwrap());
    assert_eq!(
        outputs.last().unwrap(),
        &json!({"previous_status": "running"})
    );
    let control = m.agents().unwrap();
    assert_eq!(control.state_of(b_handle.id()), AgentState::Shutdown);
    let parent = t.handle.state().await.unwrap();
    assert!(!parent.children[0].open);
}

#[tokio::test]
async fn a_spent_tree_budget_refuses_new_agents() {
    // The root's own requests report no usage: only the child spends.
    let free = |mut r: ScriptedReply| {
        r.usage = Some(rein_protocol::TokenUsage::default());
        r
    };
    let root = ScriptedModel::replies(vec![
        free(spawn("child", "spend")),
        free(wait(&["Ada"])),
        free(spawn("child", "more")),
        free(ScriptedReply::text("done")),
    ]);
    let mut costly = ScriptedReply::text("spent it");
    costly.usage = Some(rein_protocol::TokenUsage {
        input_tokens: 40,
        output_tokens: 10,
        total_tokens: 50,
        ..Default::default()
    });
    let child = ScriptedModel::replies(vec![costly]);
    let config = AgentsConfig {
        max_tree_tokens: Some(10),
        ..AgentsConfig::default()
    };
    let m = manager(&[(MODEL, &root), ("child", &child)], config);
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    completed(&mut t.events).await;
    let outputs = tool_outputs(&root.requests().pop().unwrap());
    assert_eq!(
        outputs[2],
        json!(
            "the tree's token budget is spent (50 tokens, agents.max_tree_tokens); no new agents"
        )
    );
}

#[tokio::test]
async fn a_spent_tree_budget_stops_running_children_budget_limited() {
    let free = |mut r: ScriptedReply| {
        r.usage = Some(rein_protocol::TokenUsage::default());
        r
    };
    let root = ScriptedModel::replies(vec![
        free(spawn("busy", "work on")),
        free(spawn("costly", "spend")),
        free(wait(&["Ada"])),
        free(ScriptedReply::text("done")),
    ]);
    let busy = ScriptedModel::replies(vec![ScriptedReply::text("never").with_fault(Fault::Hang)]);
    let mut spend = ScriptedReply::text("spent it");
    spend.usage = Some(rein_protocol::TokenUsage {
        input_tokens: 40,
        output_tokens: 10,
        total_tokens: 50,
        ..Default::default()
    });
    let costly = ScriptedModel::replies(vec![spend]);
    let config = AgentsConfig {
        max_tree_tokens: Some(10),
        ..AgentsConfig::default()
    };
    let m = manager(
        &[(MODEL, &root), ("busy", &busy), ("costly", &costly)],
        config,
    );
    let mut created = m.subscribe_created();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let ada = next_child(&mut created).await.handle;
    completed(&mut t.events).await;
    // Ada's turn may have ended before anyone could subscribe: its folded state says how.
    let last = ada.state().await.unwrap().turns.last().unwrap().status;
    assert_eq!(
        last,
        TurnStatus::Aborted(TurnAbortReason::BudgetLimited),
        "stopped by the tree's budget, not interrupted"
    );
    let outputs = tool_outputs(&root.requests()[3]);
    assert_eq!(
        outputs[2],
        json!({"status": {ada.id().to_string(): "interrupted"}, "timed_out": false})
    );
}
