//! Sub-agents on the wire. A child thread is created inside the kernel (a model's
//! `spawn_agent`, or a resumed root bringing its children back), so no request loads it:
//! the kernel hands every new thread to an observer with a stream of its events from the
//! first one, and a child whose parent this server has loaded is loaded too, with a pump of
//! its own that shares the parent's subscribers. So the child's notifications reach every
//! connection subscribed to its root, tagged with the child's `threadId`, its approval
//! requests are put to them (the answer reaches the child's pump, hence the child), and
//! `thread/started` for the child is sent before any of them.
//!
//! A child created before its parent is registered (a resume restores the children before
//! the server has the root) waits here until the parent is registered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rein_app_server_protocol::{ServerNotification, ThreadStartedNotification, ThreadStatus};
use rein_bootstrap::Kernel;
use rein_core::{EventStream, ThreadCreated, ThreadOrigin};
use rein_protocol::ThreadId;
use tokio::sync::mpsc;

use crate::event_map::EventMapper;
use crate::loaded::{LoadedThread, ThreadMeta};
use crate::outbound::now_secs;
use crate::pump::Pump;
use crate::subscribers::Hub;

/// How many requests may wait for one thread's pump before the server says "overloaded".
pub const PUMP_QUEUE: usize = 64;

type Waiting = Vec<(ThreadCreated, EventStream)>;

/// The sub-agents of one server (one per [`Hub`]).
#[derive(Default)]
pub struct SubAgents {
    installed: OnceLock<()>,
    /// Children by parent, created before the parent was registered.
    waiting: Mutex<HashMap<ThreadId, Waiting>>,
}

impl SubAgents {
    fn waiting(&self) -> MutexGuard<'_, HashMap<ThreadId, Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Watch `kernel` for sub-agents, once per server (every connection calls it).
pub fn install(hub: &Arc<Hub>, kernel: &Arc<Kernel>) {
    hub.sub_agents.installed.get_or_init(|| {
        let (tx, mut rx) = mpsc::unbounded_channel::<(ThreadCreated, EventStream)>();
        kernel
            .manager
            .observe_created(Arc::new(move |created: ThreadCreated, events| {
                if created.agent.is_some() {
                    let _ = tx.send((created, events));
                }
            }));
        let (hub, kernel) = (Arc::downgrade(hub), Arc::downgrade(kernel));
        tokio::spawn(async move {
            while let Some((created, events)) = rx.recv().await {
                let (Some(hub), Some(kernel)) = (hub.upgrade(), kernel.upgrade()) else {
                    break;
                };
                arrived(&hub, &kernel, created, events);
            }
        });
    });
}

/// A child was created: load it if its parent is loaded, else keep it for when it is.
fn arrived(hub: &Arc<Hub>, kernel: &Arc<Kernel>, created: ThreadCreated, events: EventStream) {
    let Some(parent) = created.agent.as_ref().map(|a| a.parent_thread_id) else {
        return;
    };
    // Checked under the lock `adopt` takes after the parent is inserted: the child is
    // either found loaded here or found waiting there.
    let mut waiting = hub.sub_agents.waiting();
    match hub.threads.get(parent) {
        Some(parent) => {
            drop(waiting);
            tokio::spawn(attach(
                Arc::clone(hub),
                Arc::clone(kernel),
                parent,
                created,
                events,
            ));
        }
        None => waiting.entry(parent).or_default().push((created, events)),
    }
}

/// Thread `id` was registered: load the children that waited for it.
pub fn adopt(hub: &Arc<Hub>, kernel: &Arc<Kernel>, id: ThreadId) {
    let children = hub.sub_agents.waiting().remove(&id).unwrap_or_default();
    let Some(parent) = hub.threads.get(id) else {
        return;
    };
    for (created, events) in children {
        tokio::spawn(attach(
            Arc::clone(hub),
            Arc::clone(kernel),
            parent.clone(),
            created,
            events,
        ));
    }
}

/// How large a thread's model's context is, for token usage notifications.
pub fn context_window(kernel: &Kernel, model: &str) -> Option<i64> {
    kernel
        .models
        .models()
        .into_iter()
        .find(|m| m.id == model)
        .and_then(|m| m.context_window)
        .and_then(|w| i64::try_from(w).ok())
}

async fn attach(
    hub: Arc<Hub>,
    kernel: Arc<Kernel>,
    parent: LoadedThread,
    created: ThreadCreated,
    events: EventStream,
) {
    let handle = created.handle;
    let id = handle.id();
    // A child a model just spawned comes after its parent's `spawnAgent` item (a child
    // restored or reopened has no such event to wait for).
    if matches!(created.origin, ThreadOrigin::Spawned { .. }) {
        parent.spawned.until_forwarded(id).await;
    }
    let settings = match handle.state().await.ok().and_then(|s| s.settings) {
        Some(settings) => settings,
        None => parent.meta().settings.clone(),
    };
    let now = now_secs();
    let meta = ThreadMeta {
        id,
        provider: kernel.provider.clone(),
        settings,
        created_at: now,
        updated_at: now,
        name: None,
        preview: String::new(),
        ephemeral: parent.meta().ephemeral,
        status: ThreadStatus::Idle,
        path: None,
        forked_from: None,
        agent: created.agent,
        closing: false,
    };
    let thread = meta.to_wire();
    let (tx, rx) = mpsc::channel(PUMP_QUEUE);
    let entry = LoadedThread {
        handle,
        meta: Arc::new(Mutex::new(meta)),
        pump: tx,
        subscribers: parent.subscribers.clone(),
        spawned: Arc::default(),
    };
    hub.threads.insert(entry.clone());
    // Before the pump forwards anything of the child.
    let started = ServerNotification::ThreadStarted(Box::new(ThreadStartedNotification {
        thread: thread.clone(),
    }));
    for subscriber in parent.subscribers.current() {
        subscriber.out.notify(started.clone()).await;
    }
    let pump = Pump {
        mapper: EventMapper::new(
            thread.id.clone(),
            context_window(&kernel, &thread_model(&entry)),
        ),
        thread: entry,
        events,
        cmds: rx,
        threads: Arc::clone(&hub.threads),
        idle_unload: hub.idle_unload,
        sub_agent: true,
        gate: None,
    };
    tokio::spawn(pump.run());
    adopt(&hub, &kernel, id);
}

fn thread_model(thread: &LoadedThread) -> String {
    thread.meta().settings.model.clone()
}
