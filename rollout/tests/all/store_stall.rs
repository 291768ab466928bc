//! One thread's slow fsync stalls nobody else, on a tokio runtime with ONE worker: every
//! thread loop of the process runs on that worker, so store I/O done there (a write, an
//! fsync, a SQLite call) would block every thread at once. Thread A's turn-ending fsync is
//! held (as a slow or hung disk would hold it); thread B, in the same store, must still run
//! a whole turn, its end made durable, meanwhile. The control shows the test can fail: the
//! same held call made on the worker (what store I/O on the executor would be) stalls B.
//!
//! The tests drive the runtime from the test's own thread and wait with `recv_timeout` on
//! std channels, so a stalled runtime is a failure, never a hang.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, StaticCatalog};
use rein_core::store::SessionMeta;
use rein_core::store::SessionStore;
use rein_core::{NewThread, ThreadManager, ThreadOptions};
use rein_protocol::{
    ApprovalPolicy, Event, EventMsg, Op, SandboxPolicy, SessionId, ThreadId, ThreadSettings,
    TurnBudget,
};
use rein_rollout::{RolloutService, ServiceOptions};

const MODEL: &str = "scripted";

fn settings() -> ThreadSettings {
    ThreadSettings {
        model: MODEL.into(),
        cwd: std::env::temp_dir(),
        approval_policy: ApprovalPolicy::OnRequest,
        sandbox_policy: SandboxPolicy::WorkspaceWrite,
        sandbox_options: None,
        reasoning_effort: None,
        budget: TurnBudget::default(),
        instructions: "You are a test agent.".into(),
    }
}

fn is_turn_end(e: &Event) -> bool {
    matches!(
        e.msg,
        EventMsg::TurnCompleted { .. } | EventMsg::TurnAborted { .. } | EventMsg::TurnFailed { .. }
    )
}

/// How long a turn may take before it counts as stalled (a debug build on a loaded
/// machine runs one in a few milliseconds).
const PATIENCE: Duration = Duration::from_secs(20);

/// A held call: `wait` blocks until `release`; `entered` hears about every caller.
struct Hold {
    released: Mutex<bool>,
    wake: Condvar,
    entered: Mutex<mpsc::Sender<String>>,
}

impl Hold {
    fn new() -> (Arc<Self>, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel();
        let hold = Arc::new(Hold {
            released: Mutex::new(false),
            wake: Condvar::new(),
            entered: Mutex::new(tx),
        });
        (hold, rx)
    }

    fn wait(&self, who: String) {
        let _ = self.entered.lock().unwrap().send(who);
        let mut released = self.released.lock().unwrap();
        while !*released {
            released = self.wake.wait(released).unwrap();
        }
    }

    fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.wake.notify_all();
    }
}

fn one_worker() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A store in `home` whose fsyncs of the rollout of the thread named in `slow` wait on
/// `hold`, and a manager over it.
fn store_and_manager(
    home: &Path,
    slow: Arc<Mutex<Option<ThreadId>>>,
    hold: Arc<Hold>,
) -> (Arc<RolloutService>, ThreadManager) {
    let before_sync = move |path: &Path| {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let held = slow
            .lock()
            .unwrap()
            .is_some_and(|t| name.contains(&t.to_string()));
        if held {
            hold.wait(name);
        }
    };
    let store = RolloutService::start(
        home,
        ServiceOptions {
            before_sync: Some(Arc::new(before_sync)),
            ..ServiceOptions::default()
        },
    );
    let catalog = StaticCatalog::new().with(
        ModelInfo {
            id: MODEL.into(),
            provider: "scripted".into(),
            context_window: Some(200_000),
            traits: Default::default(),
        },
        ScriptedModel::echo(),
    );
    let manager = ThreadManager::builder(Arc::new(catalog))
        .store(Arc::clone(&store) as Arc<dyn SessionStore>)
        .build();
    (store, manager)
}

async fn persisted_thread(store: &RolloutService, manager: &ThreadManager) -> NewThread {
    let id = ThreadId::new();
    let s = settings();
    let meta = SessionMeta::new(
        id,
        SessionId::from(id),
        s.cwd.clone(),
        s.model.clone(),
        "scripted",
    );
    let created = store.create(meta).await.unwrap();
    let mut options = ThreadOptions::new(s).with_recorder(created.recorder);
    options.thread_id = Some(id);
    manager.create_thread(options).unwrap()
}

/// Runs a turn on `thread` and reports its end (or that the thread ended first).
async fn turn(thread: &mut NewThread, text: &str) -> Result<(), String> {
    thread.handle.submit(Op::user_text(text)).await.unwrap();
    match thread.events.wait_for(is_turn_end).await {
        Some(e) if matches!(e.msg, EventMsg::TurnCompleted { .. }) => Ok(()),
        other => Err(format!("{other:?}")),
    }
}

fn rollout_text(home: &Path, thread: ThreadId) -> String {
    let path = rein_rollout::layout::rollout_files(&home.join("sessions"))
        .unwrap()
        .into_iter()
        .find(|p| rein_rollout::layout::thread_id_of(p) == Some(thread))
        .unwrap();
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_thread_whose_fsync_is_held_does_not_stall_another_threads_turn() {
    let home = tempfile::tempdir().unwrap();
    let rt = one_worker();
    let (hold, entered) = Hold::new();
    let slow = Arc::new(Mutex::new(None));
    let (store, manager) = rt.block_on(async {
        let (store, manager) = store_and_manager(home.path(), Arc::clone(&slow), Arc::clone(&hold));
        (store, Arc::new(manager))
    });
    let (mut a, mut b) = rt.block_on(async {
        (
            persisted_thread(&store, &manager).await,
            persisted_thread(&store, &manager).await,
        )
    });
    let (a_id, b_id) = (a.handle.id(), b.handle.id());
    *slow.lock().unwrap() = Some(a_id);

    // A's turn ends; its fsync is held, so its end is not published.
    let (a_done_tx, a_done) = mpsc::channel();
    rt.spawn(async move {
        let _ = a_done_tx.send(turn(&mut a, "thread A's turn").await);
    });
    let held = entered
        .recv_timeout(PATIENCE)
        .expect("thread A's turn never reached its fsync");
    assert!(held.contains(&a_id.to_string()), "{held}");

    // Meanwhile B runs a whole turn, its end durable, on the same store and worker.
    let (b_done_tx, b_done) = mpsc::channel();
    rt.spawn(async move {
        let _ = b_done_tx.send(turn(&mut b, "thread B's turn").await);
    });
    let b_result = b_done.recv_timeout(PATIENCE);
    let a_waiting = a_done.try_recv().is_err();
    hold.release();
    assert_eq!(
        b_result,
        Ok(Ok(())),
        "thread B's turn stalled behind thread A's fsync"
    );
    assert!(
        a_waiting,
        "thread A's turn end was published before its fsync"
    );
    assert!(rollout_text(home.path(), b_id).contains("\"type\":\"turn_completed\""));

    // Released, A's turn ends too, durably.
    assert_eq!(a_done.recv_timeout(PATIENCE), Ok(Ok(())));
    assert!(rollout_text(home.path(), a_id).contains("\"type\":\"turn_completed\""));
    rt.block_on(manager.shutdown_all());
}

/// The control: the same held call, made on the runtime's one worker instead of a store
/// thread, stalls thread B's turn until it is released. This is what the test above would
/// see if any store I/O ran on the executor.
#[test]
fn control_a_call_held_on_the_worker_stalls_every_thread() {
    let home = tempfile::tempdir().unwrap();
    let rt = one_worker();
    let (hold, entered) = Hold::new();
    let (store, manager) = rt.block_on(async {
        store_and_manager(home.path(), Arc::new(Mutex::new(None)), Arc::clone(&hold))
    });
    let mut b = rt.block_on(persisted_thread(&store, &manager));

    let on_worker = Arc::clone(&hold);
    rt.spawn(async move { on_worker.wait("a task on the worker".into()) });
    entered.recv_timeout(PATIENCE).unwrap();
    let (b_done_tx, b_done) = mpsc::channel();
    rt.spawn(async move {
        let _ = b_done_tx.send(turn(&mut b, "thread B's turn").await);
    });
    // A stalled turn cannot end, however long we wait; a second is plenty to see it.
    let stalled = b_done.recv_timeout(Duration::from_secs(1));
    hold.release();
    assert_eq!(stalled, Err(mpsc::RecvTimeoutError::Timeout));
    assert_eq!(b_done.recv_timeout(PATIENCE), Ok(Ok(())));
    rt.block_on(manager.shutdown_all());
}
