//! The threads this server has loaded (shared by all its connections): for each, the kernel
//! handle, the channel to its [`pump`](crate::pump), its subscribers and what the `Thread` object shows (name, preview, status).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_app_server_protocol::{Thread, ThreadHistoryMode, ThreadStatus};
use rein_core::ThreadHandle;
use rein_protocol::{AgentOrigin, ThreadId, ThreadSettings};
use tokio::sync::mpsc;

use crate::pump::PumpRequest;
use crate::subscribers::Subscribers;

/// What a `Thread` object says beyond the kernel's state.
#[derive(Clone, Debug)]
pub struct ThreadMeta {
    pub id: ThreadId,
    pub provider: String,
    pub settings: ThreadSettings,
    pub created_at: i64,
    pub updated_at: i64,
    pub name: Option<String>,
    pub preview: String,
    pub ephemeral: bool,
    pub status: ThreadStatus,
    /// The rollout file, for persisted threads.
    pub path: Option<String>,
    pub forked_from: Option<String>,
    /// Where a sub-agent comes from.
    pub agent: Option<AgentOrigin>,
    /// Being archived: the connection that asked waits for the answer, so no question
    /// is put to anyone (each is answered no at once).
    pub closing: bool,
}

impl ThreadMeta {
    pub fn to_wire(&self) -> Thread {
        Thread {
            id: self.id.to_string(),
            session_id: self.id.to_string(),
            forked_from_id: self.forked_from.clone(),
            parent_thread_id: self.agent.as_ref().map(|a| a.parent_thread_id.to_string()),
            preview: self.preview.clone(),
            ephemeral: self.ephemeral,
            project_id: None,
            history_mode: ThreadHistoryMode::Legacy,
            model_provider: self.provider.clone(),
            model: Some(self.settings.model.clone()),
            reasoning_effort: self
                .settings
                .reasoning_effort
                .as_ref()
                .map(ToString::to_string),
            created_at: self.created_at,
            updated_at: self.updated_at,
            recency_at: Some(self.updated_at),
            status: self.status.clone(),
            path: self.path.clone(),
            cwd: self.settings.cwd.display().to_string(),
            cli_version: env!("CARGO_PKG_VERSION").into(),
            originator: Some("rein".into()),
            source: match &self.agent {
                None => "vscode".into(),
                Some(a) => serde_json::json!({"subAgent": {"thread_spawn": {
                    "parent_thread_id": a.parent_thread_id.to_string(),
                    "depth": a.depth,
                    "agent_path": null,
                    "agent_nickname": a.nickname,
                    "agent_role": a.role,
                }}}),
            },
            thread_source: self.agent.as_ref().map(|_| "subagent".to_owned()),
            agent_nickname: self.agent.as_ref().and_then(|a| a.nickname.clone()),
            agent_role: self.agent.as_ref().and_then(|a| a.role.clone()),
            git_info: None,
            name: self.name.clone(),
            turns: Vec::new(),
        }
    }
}

#[derive(Clone)]
pub struct LoadedThread {
    pub handle: ThreadHandle,
    pub meta: Arc<Mutex<ThreadMeta>>,
    pub pump: mpsc::Sender<PumpRequest>,
    pub subscribers: Subscribers,
    /// The children whose spawn this thread's pump has forwarded.
    pub spawned: Arc<Spawned>,
}

/// Which children's spawn a thread's pump has passed on to its subscribers: a child
/// spawned by a model is announced (`thread/started`, then its own notifications) only
/// after its parent's `spawnAgent` item, so a client never hears of a child before the
/// call that made it. The two pumps are separate tasks; without this the child's pump
/// could run ahead of its parent's.
#[derive(Default)]
pub struct Spawned {
    inner: Mutex<SpawnedInner>,
    changed: tokio::sync::Notify,
}

#[derive(Default)]
struct SpawnedInner {
    forwarded: std::collections::HashSet<rein_protocol::ThreadId>,
    /// The pump ended: nothing more will be forwarded, so nobody waits.
    closed: bool,
}

impl Spawned {
    fn lock(&self) -> MutexGuard<'_, SpawnedInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The pump forwarded the spawn of `child`.
    pub fn forwarded(&self, child: rein_protocol::ThreadId) {
        self.lock().forwarded.insert(child);
        self.changed.notify_waiters();
    }

    /// The pump is gone.
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_waiters();
    }

    /// Resolves once the spawn of `child` was forwarded (or the pump is gone); forgets it.
    pub async fn until_forwarded(&self, child: rein_protocol::ThreadId) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut inner = self.lock();
                if inner.forwarded.remove(&child) || inner.closed {
                    return;
                }
            }
            changed.await;
        }
    }
}

impl LoadedThread {
    pub fn meta(&self) -> MutexGuard<'_, ThreadMeta> {
        self.meta
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Default)]
pub struct LoadedThreads {
    inner: Mutex<BTreeMap<ThreadId, LoadedThread>>,
}

impl LoadedThreads {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<ThreadId, LoadedThread>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn insert(&self, thread: LoadedThread) {
        let id = thread.handle.id();
        self.lock().insert(id, thread);
    }

    pub fn get(&self, id: ThreadId) -> Option<LoadedThread> {
        self.lock().get(&id).cloned()
    }

    pub fn remove(&self, id: ThreadId) -> Option<LoadedThread> {
        self.lock().remove(&id)
    }

    /// Remove `id` only if it is still the thread `pump` serves (it may have been
    /// unloaded and loaded again since).
    pub fn remove_served_by(&self, id: ThreadId, pump: &mpsc::Sender<PumpRequest>) {
        let mut threads = self.lock();
        if threads.get(&id).is_some_and(|t| t.pump.same_channel(pump)) {
            threads.remove(&id);
        }
    }

    /// Loaded thread ids, oldest first (ids are time-ordered).
    pub fn ids(&self) -> Vec<ThreadId> {
        self.lock().keys().copied().collect()
    }

    pub fn all(&self) -> Vec<LoadedThread> {
        self.lock().values().cloned().collect()
    }

    /// The loaded sub-agents of root `thread`: the other threads sharing its subscribers.
    pub fn sub_agents_of(&self, thread: &LoadedThread) -> Vec<LoadedThread> {
        let id = thread.handle.id();
        self.lock()
            .values()
            .filter(|t| t.handle.id() != id && t.subscribers.is_shared_with(&thread.subscribers))
            .cloned()
            .collect()
    }
}
