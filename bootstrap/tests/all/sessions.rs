//! Threads across a restart: a thread written by one kernel and resumed by a fresh one
//! sends exactly the request the original would have; forks branch without touching the
//! parent. Real rollout files, a real model server on 127.0.0.1.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use rein_bootstrap::sessions::Persistence;
use rein_bootstrap::{bootstrap, BootstrapOptions, Kernel};
use rein_mock_model::{serve, MockServer};
use rein_protocol::script::{Script, WhenExhausted};
use rein_protocol::{Event, EventMsg, Op};

fn is_turn_end(e: &Event) -> bool {
    matches!(
        e.msg,
        EventMsg::TurnCompleted { .. } | EventMsg::TurnAborted { .. } | EventMsg::TurnFailed { .. }
    )
}

async fn echo_server() -> MockServer {
    let script = Script {
        replies: vec![],
        when_exhausted: WhenExhausted::Echo,
        asides: Vec::new(),
    };
    serve(script, "127.0.0.1:0".parse().unwrap(), None)
        .await
        .unwrap()
}

fn kernel(home: &Path, server: &MockServer) -> Kernel {
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"mock\"\nmodel_provider = \"mock\"\n[model_providers.mock]\nbase_url = \"{}\"\nwire_api = \"responses\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let env = |_: &str| None;
    bootstrap(
        BootstrapOptions {
            home: Some(home.to_owned()),
            ..BootstrapOptions::default()
        },
        &env,
    )
    .unwrap()
}

async fn start(k: &Kernel, cwd: &Path, persistence: Persistence) -> rein_core::NewThread {
    k.start_thread(k.default_settings(cwd.to_owned()), persistence)
        .await
        .unwrap()
}

async fn turn(thread: &mut rein_core::NewThread, text: &str) {
    thread.handle.submit(Op::user_text(text)).await.unwrap();
    let end = thread.events.wait_for(is_turn_end).await.unwrap();
    assert!(
        matches!(end.msg, EventMsg::TurnCompleted { .. }),
        "{:?}",
        end.msg
    );
}

/// The request body without its last input item (the new user message, whose id is fresh
/// in each process).
fn without_last_input(body: &serde_json::Value) -> serde_json::Value {
    let mut body = body.clone();
    body["input"].as_array_mut().unwrap().pop();
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_thread_sends_the_request_the_original_would_have() {
    let home = tempfile::tempdir().unwrap();
    let server = echo_server().await;
    let cwd = home.path().to_owned();

    // The original process: two turns, then it goes away.
    let a = kernel(home.path(), &server);
    let mut t = a
        .start_thread(a.default_settings(cwd.clone()), Persistence::Rollout)
        .await
        .unwrap();
    let id = t.handle.id();
    turn(&mut t, "one").await;
    turn(&mut t, "two").await;
    let live_next = server.requests().last().unwrap().body.clone();
    // Undo turn two so the resumed thread stands where the original stood before it.
    t.handle.submit(Op::Rollback { turns: 1 }).await.unwrap();
    t.handle.shutdown().await.unwrap();
    drop(a);

    // A new process resumes it and sends the same next input.
    let b = kernel(home.path(), &server);
    let mut resumed = b.resume_thread(id).await.unwrap();
    assert!(resumed.diagnostics.is_empty());
    turn(&mut resumed.thread, "two").await;
    let resumed_next = server.requests().last().unwrap().body.clone();
    assert_eq!(
        without_last_input(&resumed_next),
        without_last_input(&live_next)
    );
    assert_eq!(
        resumed_next["input"].as_array().unwrap().len(),
        live_next["input"].as_array().unwrap().len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_branches_at_a_turn_and_leaves_the_parent_alone() {
    let home = tempfile::tempdir().unwrap();
    let server = echo_server().await;
    let k = kernel(home.path(), &server);
    let mut parent = start(&k, home.path(), Persistence::Rollout).await;
    turn(&mut parent, "one").await;
    turn(&mut parent, "two").await;
    let parent_state = parent.handle.state().await.unwrap();
    let parent_file = parent.path.clone().unwrap();
    let before = std::fs::read(&parent_file).unwrap();

    let mut fork = k.fork_thread(parent.handle.id(), Some(0)).await.unwrap();
    let fork_state = fork.handle.state().await.unwrap();
    assert_ne!(fork.handle.id(), parent.handle.id());
    assert_eq!(fork_state.forked_from, Some(parent.handle.id()));
    assert_eq!(
        fork_state.history[..],
        parent_state.history[..2],
        "history up to turn one"
    );
    turn(&mut fork, "branch").await;
    assert_eq!(
        std::fs::read(&parent_file).unwrap(),
        before,
        "the parent file is untouched"
    );
    let texts: Vec<String> = fork
        .handle
        .state()
        .await
        .unwrap()
        .history
        .iter()
        .filter_map(|i| i.message_text())
        .collect();
    assert_eq!(texts, vec!["one", "echo: one", "branch", "echo: branch"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_threads_write_nothing() {
    let home = tempfile::tempdir().unwrap();
    let server = echo_server().await;
    let k = kernel(home.path(), &server);
    let mut t = start(&k, home.path(), Persistence::Ephemeral).await;
    turn(&mut t, "one").await;
    assert!(t.path.is_none());
    assert!(k.store().read(t.handle.id()).await.is_err());
    assert!(!home.path().join("sessions").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_down_thread_can_be_resumed_at_once() {
    let home = tempfile::tempdir().unwrap();
    let server = echo_server().await;
    let k = kernel(home.path(), &server);
    let mut t = start(&k, home.path(), Persistence::Rollout).await;
    let id = t.handle.id();
    turn(&mut t, "one").await;
    t.handle.shutdown().await.unwrap();
    // The writer lock is released before the shutdown is answered, so this cannot race.
    let mut resumed = k.resume_thread(id).await.unwrap();
    turn(&mut resumed.thread, "two").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_name_survives_a_restart_and_is_listed_and_searched() {
    let home = tempfile::tempdir().unwrap();
    let server = echo_server().await;
    let a = kernel(home.path(), &server);
    let mut t = start(&a, home.path(), Persistence::Rollout).await;
    let id = t.handle.id();
    turn(&mut t, "one").await;
    assert_eq!(
        t.handle
            .submit(Op::SetName { name: "   ".into() })
            .await
            .unwrap(),
        rein_protocol::OpResult::Refused {
            message: "a thread name must not be blank".into()
        }
    );
    t.handle
        .submit(Op::SetName {
            name: " Parser rewrite ".into(),
        })
        .await
        .unwrap();
    let named = t
        .events
        .wait_for(|e| matches!(e.msg, EventMsg::ThreadNamed { .. }))
        .await
        .unwrap();
    assert!(matches!(&named.msg, EventMsg::ThreadNamed { name } if name == "Parser rewrite"));
    t.handle.shutdown().await.unwrap();
    drop(a);

    let b = kernel(home.path(), &server);
    let search = |text: &str| rein_core::store::ListQuery {
        search: Some(text.into()),
        ..Default::default()
    };
    let page = b.store().list(search("parser REWRITE")).await.unwrap();
    assert_eq!(
        page.threads.len(),
        1,
        "found by its name, not its first message"
    );
    assert_eq!(page.threads[0].name.as_deref(), Some("Parser rewrite"));
    assert_eq!(page.threads[0].title.as_deref(), Some("one"));
    // The rollout is the source of truth: an index rebuilt from the files knows it too.
    b.store().reindex().await.unwrap();
    let page = b.store().list(search("rewrite")).await.unwrap();
    assert_eq!(page.threads[0].name.as_deref(), Some("Parser rewrite"));
    let resumed = b.resume_thread(id).await.unwrap();
    let state = resumed.thread.handle.state().await.unwrap();
    assert_eq!(state.name.as_deref(), Some("Parser rewrite"));
}
