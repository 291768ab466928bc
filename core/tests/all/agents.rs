//! Sub-agents against the scripted model: spawn / send / wait, the task as a user message,
//! the phase rule, idle wake-up and mail. Limits, the budget, the interrupt cascade and
//! closing are in `agents_limits.rs`. Each agent runs its own scripted model (the `model`
//! argument of `spawn_agent`), so every thread's replies are deterministic; timing is
//! controlled with gates and events, never sleeps.
#![allow(clippy::unwrap_used)]

use rein_test_support::agents as agents_support;
use rein_test_support::kernel as support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use agents_support::{
    catalog, completed, fast_config, is_v4, manager, next_child, offered, settings, spawn,
    tool_outputs, wait, MODEL,
};
use pretty_assertions::assert_eq;
use rein_core::agents::AgentsConfig;
use rein_core::model::scripted::ScriptedModel;
use rein_core::turn::stop_hook::{StopContext, StopDecision, StopHook};
use rein_core::{ThreadManager, ThreadOptions, ThreadOrigin};
use rein_protocol::script::ScriptedReply;
use rein_protocol::{EventMsg, InputOutcome, InputPart, Op, OpResult, ThreadId};
use serde_json::json;
use support::until;

#[tokio::test]
async fn a_child_gets_its_task_as_a_user_message_and_wait_returns_its_answer() {
    let root = ScriptedModel::replies(vec![
        spawn("child", "count the files"),
        wait(&["Ada"]),
        ScriptedReply::text("all done"),
    ]);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("there are 3 files")]);
    // The child answers only once the parent waits: the wait takes the result.
    let held = child.hold_reply(0);
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
    m.agents().unwrap().until_waiting(t.handle.id()).await;
    held.open();
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
    // Exactly once: the wait had it, so no notification was mailed as well.
    assert!(
        !support::request_user_texts(&last)
            .iter()
            .any(|t| t.contains("subagent_notification")),
        "{:?}",
        support::request_user_texts(&last)
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

#[tokio::test]
async fn a_result_mailed_before_the_wait_is_claimed_into_its_answer_once() {
    let root = ScriptedModel::replies(vec![
        spawn("child", "count the files"),
        wait(&["Ada"]),
        ScriptedReply::text("all done"),
    ]);
    // The parent's wait call is held until the child's result is in its mailbox.
    let held = root.hold_reply(1);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("there are 3 files")]);
    let m = manager(
        &[(MODEL, &root), ("child", &child)],
        AgentsConfig::default(),
    );
    let mut created = m.subscribe_created();
    let mut t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let child_id = next_child(&mut created).await.handle.id();
    until(
        &mut t.events,
        |e| matches!(&e.msg, EventMsg::MailQueued { from, .. } if *from == child_id),
    )
    .await;
    held.open();
    completed(&mut t.events).await;

    let last = root.requests().pop().unwrap();
    assert_eq!(
        tool_outputs(&last),
        vec![
            json!({"agent_id": child_id.to_string(), "nickname": "Ada"}),
            // Issue 23 item 12: the model has not read the mail yet, so the wait takes it
            // out of the mailbox into its answer ...
            json!({
                "status": {child_id.to_string(): {"completed": "there are 3 files"}},
                "timed_out": false,
            }),
        ]
    );
    // ... and it never becomes a notification.
    let notes: Vec<String> = root
        .requests()
        .iter()
        .flat_map(support::request_user_texts)
        .filter(|t| t.contains("subagent_notification"))
        .collect();
    assert_eq!(notes, Vec::<String>::new());
    // Taken out of the mailbox for good: a restore does not deliver it again.
    let state = t.handle.state().await.unwrap();
    assert_eq!(state.pending_mail, Vec::new());
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
