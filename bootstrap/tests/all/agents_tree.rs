//! Sub-agent trees that outlive their process: a resumed root brings back its open
//! children with their statuses (a completed child stays completed), a closed child stays
//! closed, and `resume_agent` reopens one from its rollout. Real rollout files under a
//! temporary `$REIN_HOME`; each agent runs its own scripted model.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use pretty_assertions::assert_eq;
use rein_bootstrap::sessions::Persistence;
use rein_bootstrap::Kernel;

use agents_support::{
    catalog, completed, fast_config, is_v4, next_child, request_user_texts, settings, spawn,
    tool_outputs, wait, MODEL,
};
use rein_core::agents::{AgentState, AgentsConfig};
use rein_core::model::scripted::ScriptedModel;
use rein_core::ThreadManager;
use rein_protocol::script::{Fault, ScriptedReply};
use rein_protocol::{EventMsg, Op};
use rein_test_support::agents as agents_support;
use serde_json::json;

/// A kernel over scripted models whose threads live in rollouts under `home`.
fn kernel(home: &std::path::Path, models: &[(&str, &Arc<ScriptedModel>)]) -> Kernel {
    use rein_rollout::{Durability, RolloutService, ServiceOptions};
    let catalog = catalog(models);
    let store: Arc<dyn rein_core::store::SessionStore> =
        RolloutService::start(home.to_owned(), ServiceOptions::default());
    let manager =
        ThreadManager::builder(Arc::clone(&catalog) as Arc<dyn rein_core::model::ModelCatalog>)
            .config(fast_config())
            .store(Arc::clone(&store))
            .agents(AgentsConfig::default())
            .build_shared();
    Kernel::from_parts(
        manager,
        home.to_owned(),
        MODEL.into(),
        "scripted".into(),
        catalog,
        Durability::default(),
        store,
    )
}

#[tokio::test]
async fn resuming_the_root_restores_its_open_children_with_their_statuses() {
    let home = tempfile::tempdir().unwrap();
    let root = ScriptedModel::replies(vec![
        spawn("done", "finish this"),
        wait(&["Ada"]),
        spawn("busy", "keep going"),
        ScriptedReply::tool_call("close_agent", json!({"target": "Babbage"})),
        spawn("busy", "keep going too"),
        ScriptedReply::text("root answers"),
    ]);
    let done = ScriptedModel::replies(vec![ScriptedReply::text("child result")]);
    let busy = ScriptedModel::replies(vec![ScriptedReply::text("never").with_fault(Fault::Hang)]);
    let (root_id, done_id, closed_id, busy_id) = {
        let k = kernel(
            home.path(),
            &[(MODEL, &root), ("done", &done), ("busy", &busy)],
        );
        let mut created = k.manager.subscribe_created();
        let mut t = k
            .start_thread(settings(), Persistence::Rollout)
            .await
            .unwrap();
        t.handle.submit(Op::user_text("go")).await.unwrap();
        let done_id = next_child(&mut created).await.handle.id();
        let closed_id = next_child(&mut created).await.handle.id();
        let busy_id = next_child(&mut created).await.handle.id();
        completed(&mut t.events).await;
        busy.wait_for_requests(2).await;
        // A clean exit: the running child's turn is aborted on the way out.
        k.manager.shutdown_all().await;
        (t.handle.id(), done_id, closed_id, busy_id)
    };

    let root2 = ScriptedModel::replies(vec![wait(&["Ada"]), ScriptedReply::text("again")]);
    let done2 = ScriptedModel::replies(vec![]);
    let busy2 = ScriptedModel::replies(vec![ScriptedReply::text("resumed work")]);
    let k = kernel(
        home.path(),
        &[(MODEL, &root2), ("done", &done2), ("busy", &busy2)],
    );
    let mut resumed = k.resume_thread(root_id).await.unwrap();
    let control = Arc::clone(k.manager.agents().unwrap());
    assert!(k.manager.get(done_id).is_some());
    assert!(k.manager.get(busy_id).is_some());
    assert!(
        k.manager.get(closed_id).is_none(),
        "a closed child stays closed"
    );
    // A completed child stays completed, with its answer.
    assert_eq!(
        control.state_of(done_id),
        AgentState::Completed(Some("child result".into()))
    );
    assert_eq!(control.state_of(busy_id), AgentState::Interrupted);
    let child_state = k.manager.get(busy_id).unwrap().state().await.unwrap();
    assert_eq!(
        child_state.agent.unwrap().nickname.as_deref(),
        Some("Curie")
    );
    // The resumed root reaches its old children by nickname.
    resumed
        .thread
        .handle
        .submit(Op::user_text("check on Ada"))
        .await
        .unwrap();
    completed(&mut resumed.thread.events).await;
    let outputs = tool_outputs(&root2.requests()[1]);
    assert_eq!(
        outputs.last().unwrap(),
        &json!({"status": {done_id.to_string(): {"completed": "child result"}}, "timed_out": false})
    );
    k.manager.shutdown_all().await;
}

#[tokio::test]
async fn send_input_list_close_and_resume_an_agent_through_the_tools() {
    let home = tempfile::tempdir().unwrap();
    let root = ScriptedModel::replies(vec![
        spawn("child", "first task"),
        wait(&["Ada"]),
        ScriptedReply::tool_call(
            "send_input",
            json!({"target": "Ada", "message": "second task"}),
        ),
        wait(&["Ada"]),
        ScriptedReply::tool_call("list_agents", json!({})),
        ScriptedReply::tool_call("close_agent", json!({"target": "Ada"})),
        ScriptedReply::tool_call("resume_agent", json!({"id": "Ada"})),
        ScriptedReply::text("done"),
    ]);
    let child = ScriptedModel::replies(vec![
        ScriptedReply::text("first answer"),
        ScriptedReply::text("second answer"),
    ]);
    // Each answer comes once the parent waits for it, so the waits take the results.
    let first = child.hold_reply(0);
    let second = child.hold_reply(1);
    let k = kernel(home.path(), &[(MODEL, &root), ("child", &child)]);
    let agents = Arc::clone(k.manager.agents().unwrap());
    let mut created = k.manager.subscribe_created();
    let mut t = k
        .start_thread(settings(), Persistence::Rollout)
        .await
        .unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let kid = next_child(&mut created).await.handle;
    let mut kid_events = kid.subscribe();
    agents.until_waiting(t.handle.id()).await;
    first.open();
    child.wait_for_requests(2).await;
    agents.until_waiting(t.handle.id()).await;
    second.open();
    completed(&mut t.events).await;
    let id = kid.id().to_string();

    let second = &child.requests()[1];
    assert_eq!(
        request_user_texts(second),
        vec!["first task", "second task"]
    );
    let outputs = tool_outputs(&root.requests().pop().unwrap());
    assert_eq!(outputs[2]["submission_id"].as_str().map(str::len), Some(36));
    assert_eq!(
        outputs[3],
        json!({"status": {id.clone(): {"completed": "second answer"}}, "timed_out": false})
    );
    assert_eq!(
        outputs[4],
        json!({"agents": [{"id": id, "nickname": "Ada", "status": {"completed": "second answer"}, "last_task": "second task"}]})
    );
    assert_eq!(
        outputs[5],
        json!({"previous_status": {"completed": "second answer"}})
    );
    assert_eq!(
        outputs[6],
        json!({"status": {"completed": "second answer"}})
    );
    // The task sent to the idle child started its turn under a v4 id.
    let turns: Vec<_> = std::iter::from_fn(|| kid_events.try_recv())
        .filter(|e| matches!(e.msg, EventMsg::TurnStarted { .. }))
        .map(|e| e.turn_id.unwrap())
        .collect();
    assert!(turns.iter().all(|t| is_v4(*t)), "{turns:?}");
    let parent = t.handle.state().await.unwrap();
    assert!(parent.children[0].open, "reopened");
    assert_eq!(parent.children[0].last_task, "second task");
    assert!(k.manager.get(kid.id()).is_some());
    k.manager.shutdown_all().await;
}
