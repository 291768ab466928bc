//! Sub-agents against the scripted model: spawn / send / wait / close / resume, the phase
//! rule, idle wake-up, both limits (and no deadlock with `max_concurrent_turns` at 1 and
//! 2), the interrupt cascade, and a tree restored from its rollouts. Each agent runs its own
//! scripted model (the `model` argument of `spawn_agent`), so every thread's replies are
//! deterministic; timing is controlled with gates and events, never sleeps.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use rein_core::agents::{AgentState, AgentsConfig};
use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, ModelRequest, StaticCatalog};
use rein_core::turn::stop_hook::{StopContext, StopDecision, StopHook};
use rein_core::{ThreadCreated, ThreadManager, ThreadOptions, ThreadOrigin};
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{
    Event, EventMsg, InputOutcome, InputPart, Item, Op, OpResult, ThreadId, TurnAbortReason,
};
use serde_json::{json, Value};
use support::{fast_config, is_turn_end, settings, until, MODEL};
use tokio::sync::broadcast;

/// A catalog of one scripted model per name (`MODEL` is the root's).
fn catalog(models: &[(&str, &Arc<ScriptedModel>)]) -> Arc<StaticCatalog> {
    let mut catalog = StaticCatalog::new();
    for (name, model) in models {
        catalog.insert(
            ModelInfo {
                id: (*name).into(),
                provider: "scripted".into(),
                context_window: Some(200_000),
            },
            Arc::clone(model) as Arc<dyn rein_core::model::ModelClient>,
        );
    }
    Arc::new(catalog)
}

fn manager(models: &[(&str, &Arc<ScriptedModel>)], config: AgentsConfig) -> Arc<ThreadManager> {
    ThreadManager::builder(catalog(models))
        .config(fast_config())
        .agents(config)
        .build_shared()
}

fn spawn(model: &str, message: &str) -> ScriptedReply {
    ScriptedReply::tool_call("spawn_agent", json!({"message": message, "model": model}))
}

fn wait(targets: &[&str]) -> ScriptedReply {
    ScriptedReply::tool_call(
        "wait_agent",
        json!({"targets": targets, "timeout_ms": 60_000}),
    )
}

/// The outputs of tool calls the model was sent, in order, parsed as JSON when they are.
fn tool_outputs(request: &ModelRequest) -> Vec<Value> {
    request
        .input
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput { output, .. } => {
                Some(serde_json::from_str(output).unwrap_or_else(|_| Value::String(output.clone())))
            }
            _ => None,
        })
        .collect()
}

fn offered(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|s| s.name.clone()).collect()
}

async fn next_child(created: &mut broadcast::Receiver<ThreadCreated>) -> ThreadCreated {
    loop {
        let c = created.recv().await.unwrap();
        if matches!(c.origin, ThreadOrigin::Spawned { .. }) {
            return c;
        }
    }
}

fn is_v4(id: rein_protocol::TurnId) -> bool {
    id.as_uuid().get_version_num() == 4
}

async fn completed(events: &mut rein_core::EventStream) -> Arc<Event> {
    let end = until(events, is_turn_end).await;
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }), "{end:?}");
    end
}

#[tokio::test]
async fn a_child_gets_its_task_as_a_user_message_and_wait_returns_its_answer() {
    let root = ScriptedModel::replies(vec![
        spawn("child", "count the files"),
        wait(&["Ada"]),
        ScriptedReply::text("all done"),
    ]);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("there are 3 files")]);
    let m = manager(
        &[(MODEL, &root), ("child", &child)],
        AgentsConfig::default(),
    );
    let mut created = m.subscribe_created();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle
        .submit(Op::user_text("use a sub-agent"))
        .await
        .unwrap();
    let spawned = next_child(&mut created).await;
    completed(&mut t.events).await;

    let child_id = spawned.handle.id();
    assert_eq!(
        spawned.origin,
        ThreadOrigin::Spawned {
            parent: t.handle.id()
        }
    );
    // The task is the child's first (and only) user message: no envelope, no role games.
    let first = &child.requests()[0];
    assert_eq!(support::request_user_texts(first), vec!["count the files"]);
    // A child at the depth limit is not offered spawn_agent; the root is.
    assert!(!offered(first).contains(&"spawn_agent".to_owned()));
    assert!(offered(first).contains(&"wait_agent".to_owned()));
    assert!(offered(&root.requests()[0]).contains(&"spawn_agent".to_owned()));

    let last = root.requests().pop().unwrap();
    let outputs = tool_outputs(&last);
    assert_eq!(
        outputs,
        vec![
            json!({"agent_id": child_id.to_string(), "nickname": "Ada"}),
            json!({"status": {child_id.to_string(): {"completed": "there are 3 files"}}, "timed_out": false}),
        ]
    );
    // The child's rollout-to-be says where it comes from, and shares the root's session.
    let state = spawned.handle.state().await.unwrap();
    assert_eq!(
        state.agent.as_ref().unwrap().parent_thread_id,
        t.handle.id()
    );
    assert_eq!(state.agent.as_ref().unwrap().depth, 1);
    assert_eq!(
        state.agent.as_ref().unwrap().nickname.as_deref(),
        Some("Ada")
    );
    assert_eq!(state.session_id.unwrap().as_uuid(), t.handle.id().as_uuid());
    let parent = t.handle.state().await.unwrap();
    assert_eq!(parent.children.len(), 1);
    assert_eq!(parent.children[0].thread_id, child_id);
    assert_eq!(parent.children[0].last_task, "count the files");
    assert!(parent.children[0].open);
}

#[tokio::test]
async fn a_finished_child_wakes_its_idle_parent_with_a_v4_turn() {
    let root = ScriptedModel::replies(vec![
        spawn("child", "look around"),
        ScriptedReply::text("I will hear from Ada"),
        ScriptedReply::text("Ada reported"),
    ]);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("found a README")]);
    let held = child.hold_reply(0);
    let m = manager(
        &[(MODEL, &root), ("child", &child)],
        AgentsConfig::default(),
    );
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let first = completed(&mut t.events).await;
    assert!(!is_v4(first.turn_id.unwrap()));
    // The parent is idle; the child answers now.
    held.open();
    let woke = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::TurnStarted { .. })
    })
    .await;
    assert!(is_v4(woke.turn_id.unwrap()), "{woke:?}");
    completed(&mut t.events).await;
    let wake_request = root.requests().pop().unwrap();
    let texts = support::request_user_texts(&wake_request);
    let note = texts.last().unwrap();
    assert!(note.starts_with("<subagent_notification>"), "{note}");
    assert!(note.contains(r#""completed":"found a README""#), "{note}");
    assert!(note.contains(r#""nickname":"Ada""#), "{note}");
}

/// Holds the first final answer of a turn at the stop hooks until the test lets go.
struct Pause {
    reached: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<Option<mpsc::Receiver<()>>>,
}

impl StopHook for Pause {
    fn on_stop(&self, _ctx: &StopContext<'_>) -> StopDecision {
        if let Some(reached) = self.reached.lock().unwrap().take() {
            reached.send(()).unwrap();
            let release = self.release.lock().unwrap().take().unwrap();
            // Off the executor: the thread's loop must keep running meanwhile.
            tokio::task::block_in_place(|| release.recv().unwrap());
        }
        StopDecision::Stop
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_after_the_final_answer_waits_for_the_next_turn() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("first answer"),
        ScriptedReply::text("answer to the mail"),
    ]);
    let (reached_tx, reached_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    let hook = Arc::new(Pause {
        reached: Mutex::new(Some(reached_tx)),
        release: Mutex::new(Some(release_rx)),
    });
    let m = ThreadManager::builder(catalog(&[(MODEL, &model)]))
        .config(fast_config())
        .stop_hook(hook)
        .build();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("hello")).await.unwrap();
    tokio::task::spawn_blocking(move || reached_rx.recv().unwrap())
        .await
        .unwrap();
    // The final answer is out; the turn has not ended.
    let outcome = t
        .handle
        .submit(Op::AgentMail {
            from: ThreadId::new(),
            items: vec![InputPart::text("late result")],
        })
        .await
        .unwrap();
    let first_turn = t.handle.state().await.unwrap().active_turn.unwrap().id;
    assert_eq!(
        outcome,
        OpResult::Input(InputOutcome::Steered {
            turn_id: first_turn
        })
    );
    release_tx.send(()).unwrap();
    let end = completed(&mut t.events).await;
    assert_eq!(end.turn_id, Some(first_turn));
    // The answered turn was not revived: it made one request. The mail opened the next.
    let next = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::TurnStarted { .. })
    })
    .await;
    assert!(is_v4(next.turn_id.unwrap()));
    completed(&mut t.events).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        support::request_user_texts(&requests[1]),
        vec!["hello", "late result"]
    );
}

#[tokio::test]
async fn mail_to_an_idle_thread_starts_a_turn_and_to_a_running_one_steers() {
    let model = ScriptedModel::replies(vec![
        ScriptedReply::text("one"),
        ScriptedReply::text("two"),
        ScriptedReply::text("three"),
    ]);
    let held = model.hold_reply(1);
    let m = ThreadManager::builder(catalog(&[(MODEL, &model)]))
        .config(fast_config())
        .build();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    let mail = |text: &str| Op::AgentMail {
        from: ThreadId::new(),
        items: vec![InputPart::text(text)],
    };
    let started = t.handle.submit(mail("first mail")).await.unwrap();
    let OpResult::Input(InputOutcome::Started { turn_id }) = started else {
        panic!("{started:?}");
    };
    assert!(is_v4(turn_id));
    completed(&mut t.events).await;
    t.handle.submit(mail("second mail")).await.unwrap();
    model.wait_for_requests(2).await;
    let steered = t.handle.submit(mail("steer")).await.unwrap();
    assert!(
        matches!(steered, OpResult::Input(InputOutcome::Steered { .. })),
        "{steered:?}"
    );
    held.open();
    completed(&mut t.events).await;
    // Drained at the next step boundary of the running turn (not the next turn).
    assert_eq!(
        support::request_user_texts(&model.requests()[2]),
        vec!["first mail", "second mail", "steer"]
    );
    let empty = t
        .handle
        .submit(Op::AgentMail {
            from: ThreadId::new(),
            items: vec![InputPart::text("  ")],
        })
        .await
        .unwrap();
    assert!(matches!(
        empty,
        OpResult::Input(InputOutcome::Rejected { .. })
    ));
}

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
    let a_out = tool_outputs(&a.requests()[2]);
    assert_eq!(a_out[1]["status"].as_object().unwrap().len(), 1);
    assert!(
        a_out[1].to_string().contains(r#"{"completed":"b done"}"#),
        "{a_out:?}"
    );
    let root_out = tool_outputs(&root.requests()[2]);
    assert!(
        root_out[1]
            .to_string()
            .contains(r#"{"completed":"a done"}"#),
        "{root_out:?}"
    );
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
