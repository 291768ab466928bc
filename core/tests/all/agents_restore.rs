//! Mail that waits for the tree's capacity survives a crash: it is recorded in the
//! receiving child's rollout (`MailQueued`) before `spawn_agent` answers, and a restore
//! delivers it exactly once (the turn it starts records `MailTaken`).

use rein_test_support::agents as agents_support;
use rein_test_support::kernel as support;
use rein_test_support::PATIENCE;

use std::sync::{Arc, Mutex};

use agents_support::{is_turn_end, manager, settings, spawn, wait, MODEL};
use pretty_assertions::assert_eq;
use rein_core::agents::{AgentState, AgentsConfig};
use rein_core::model::scripted::ScriptedModel;
use rein_core::recorder::NullRecorder;
use rein_core::ThreadOptions;
use rein_protocol::script::ScriptedReply;
use rein_protocol::{Event, EventMsg, Op, ThreadId};
use support::{request_user_texts, until, user_texts};
use tokio::sync::mpsc;

fn one_slot() -> AgentsConfig {
    AgentsConfig {
        max_concurrent_turns: Some(1),
        ..AgentsConfig::default()
    }
}

#[tokio::test]
async fn mail_waiting_for_capacity_is_delivered_once_after_a_crash() {
    let mut both = spawn("child", "task one");
    both.tool_calls
        .extend(spawn("child", "task two").tool_calls);
    let root = ScriptedModel::replies(vec![both, wait(&["Ada", "Babbage"])]);
    let child = ScriptedModel::replies(vec![ScriptedReply::text("first answer")]);
    // The first child runs and holds the tree's one slot until the "crash".
    let _held = child.hold_reply(0);
    let m = manager(&[(MODEL, &root), ("child", &child)], one_slot());
    let control = Arc::clone(m.agents().unwrap());
    // What each sub-agent's rollout would hold: its events, from the first.
    let recorded: Arc<Mutex<Vec<(ThreadId, Event)>>> = Arc::default();
    let (tx, mut seen) = mpsc::unbounded_channel::<(ThreadId, EventMsg)>();
    let log = Arc::clone(&recorded);
    m.observe_created(Arc::new(move |created, mut events| {
        let (log, tx, id) = (Arc::clone(&log), tx.clone(), created.handle.id());
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                log.lock().unwrap().push((id, Event::clone(&event)));
                let _ = tx.send((id, event.msg.clone()));
            }
        });
    }));
    let t = m.create_thread(ThreadOptions::new(settings())).unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    // Both spawns answered (the root asks again, to wait): the second child's task waits
    // for capacity, and is in its rollout already.
    root.wait_for_requests(2).await;
    child.wait_for_requests(1).await;
    let queued = async {
        loop {
            let (id, msg) = seen.recv().await.expect("the child's events");
            if matches!(msg, EventMsg::MailQueued { .. })
                && control.state_of(id) == AgentState::PendingInit
            {
                return id;
            }
        }
    };
    let pending = tokio::time::timeout(PATIENCE, queued)
        .await
        .expect("the waiting task is recorded in the child's rollout");
    assert_eq!(child.request_count(), 1);
    let events: Vec<Event> = recorded
        .lock()
        .unwrap()
        .iter()
        .filter(|(id, _)| *id == pending)
        .map(|(_, e)| e.clone())
        .collect();
    assert!(events.iter().all(|e| !is_turn_end(e)), "it never ran");

    // kill -9: a new process resumes the child from what was recorded.
    let child2 = ScriptedModel::replies(vec![ScriptedReply::text("second answer")]);
    let root2 = ScriptedModel::replies(Vec::new());
    let m2 = manager(&[(MODEL, &root2), ("child", &child2)], one_slot());
    let mut resumed = m2
        .create_thread(ThreadOptions::resume(events, Box::new(NullRecorder)))
        .unwrap();
    let state = resumed.handle.state().await.unwrap();
    assert_eq!(state.pending_mail.len(), 1);
    m2.agents().unwrap().restore(&resumed.handle).await;
    until(&mut resumed.events, is_turn_end).await;
    let state = resumed.handle.state().await.unwrap();
    assert_eq!(user_texts(&state.history), vec!["task two".to_owned()]);
    assert_eq!(state.pending_mail, Vec::new());
    assert_eq!(state.turns.len(), 1);
    assert_eq!(child2.request_count(), 1);
    assert_eq!(
        request_user_texts(&child2.requests()[0]),
        vec!["task two".to_owned()]
    );
}
