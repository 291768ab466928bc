//! The process-wide owner of threads and of what they share: the model catalog, the tool
//! sources every thread starts with, stop hooks and kernel settings. Creating a thread spawns its submission loop;
//! the manager keeps only weak references, so a thread whose every handle is dropped
//! shuts itself down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use rein_protocol::{Event, EventMsg, SessionId, ThreadId, ThreadSettings};

use crate::error::KernelError;
use crate::kernel_config::KernelConfig;
use crate::model::ModelCatalog;
use crate::recorder::{EventRecorder, NullRecorder};
use crate::thread::bus::{EventBus, EventStream};
use crate::thread::emitter::Emitter;
use crate::thread::handle::{HandleInner, ThreadHandle};
use crate::thread::state::ThreadState;
use crate::thread::submission_loop::SubmissionLoop;
use crate::tools::{StaticTools, ThreadTools, ToolSource, ToolSources};
use crate::turn::stop_hook::StopHook;

/// Shared by every thread of a manager.
pub struct KernelServices {
    pub models: Arc<dyn ModelCatalog>,
    /// The tool sources every thread consults (the built-ins first).
    pub tool_sources: Vec<Arc<dyn ToolSource>>,
    pub stop_hooks: Arc<[Arc<dyn StopHook>]>,
    pub config: KernelConfig,
}

/// Where a thread's history comes from.
pub enum ThreadStart {
    /// A new, empty thread.
    New { settings: ThreadSettings },
    /// Continue a thread from the events of an earlier life (read back from its rollout and
    /// repaired, so no turn is left open). They are folded, not re-emitted or re-recorded.
    Resume { events: Vec<Event> },
    /// A new thread whose history starts as a copy of these events (already rewritten to
    /// the new thread id). They are recorded into the new thread's rollout.
    Fork { events: Vec<Event> },
}

pub struct ThreadOptions {
    pub start: ThreadStart,
    pub recorder: Box<dyn EventRecorder>,
    /// The id of a new thread (so its rollout can be created first); generated when `None`.
    pub thread_id: Option<ThreadId>,
}

impl ThreadOptions {
    pub fn new(settings: ThreadSettings) -> Self {
        Self {
            start: ThreadStart::New { settings },
            recorder: Box::new(NullRecorder),
            thread_id: None,
        }
    }

    /// Continue a thread from the events of an earlier life (already recorded).
    pub fn resume(events: Vec<Event>, recorder: Box<dyn EventRecorder>) -> Self {
        Self {
            start: ThreadStart::Resume { events },
            recorder,
            thread_id: None,
        }
    }

    pub fn with_recorder(mut self, recorder: Box<dyn EventRecorder>) -> Self {
        self.recorder = recorder;
        self
    }
}

/// A freshly created thread: its handle and a stream subscribed before its first event.
pub struct NewThread {
    pub handle: ThreadHandle,
    pub events: EventStream,
}

pub struct ThreadManager {
    services: Arc<KernelServices>,
    threads: Mutex<HashMap<ThreadId, Weak<HandleInner>>>,
}

impl ThreadManager {
    pub fn new(services: KernelServices) -> Self {
        Self {
            services: Arc::new(services),
            threads: Mutex::new(HashMap::new()),
        }
    }

    pub fn builder(models: Arc<dyn ModelCatalog>) -> ThreadManagerBuilder {
        ThreadManagerBuilder {
            models,
            tools: Vec::new(),
            sources: Vec::new(),
            stop_hooks: Vec::new(),
            config: KernelConfig::default(),
        }
    }

    pub fn services(&self) -> &Arc<KernelServices> {
        &self.services
    }

    fn threads(&self) -> MutexGuard<'_, HashMap<ThreadId, Weak<HandleInner>>> {
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Create (or resume, or fork) a thread and spawn its loop. Must run inside a tokio
    /// runtime.
    pub fn create_thread(&self, options: ThreadOptions) -> Result<NewThread, KernelError> {
        let (state, thread_id, fresh, replayed) = match options.start {
            ThreadStart::New { settings } => {
                self.services.models.client(&settings.model)?;
                if !settings.cwd.is_absolute() {
                    return Err(KernelError::InvalidSettings(format!(
                        "cwd must be an absolute path: {}",
                        settings.cwd.display()
                    )));
                }
                let id = options.thread_id.unwrap_or_default();
                (ThreadState::new(), id, Some(settings), Vec::new())
            }
            ThreadStart::Resume { events } => {
                let state = replay(events)?;
                let id = state.thread_id.unwrap_or_default();
                (state, id, None, Vec::new())
            }
            ThreadStart::Fork { events } => {
                let state = replay(events.clone())?;
                let id = state.thread_id.unwrap_or_default();
                (state, id, None, events)
            }
        };
        if self.get(thread_id).is_some() {
            return Err(KernelError::AlreadyLoaded(thread_id));
        }
        let bus = Arc::new(EventBus::default());
        let events = bus.subscribe();
        let mut emitter = Emitter::new(thread_id, Arc::clone(&bus), options.recorder);
        if !replayed.is_empty() {
            emitter.record_replayed(&replayed)?;
        }
        let (tx, rx) = async_channel::bounded(self.services.config.op_queue_capacity.max(1));
        let mut state = state;
        state.thread_id = Some(thread_id);
        let tools = Arc::new(ThreadTools::new(ToolSources::new(
            self.services.tool_sources.clone(),
        )));
        tools.set_grants(state.session_grants.clone());
        let mut submission_loop = SubmissionLoop::new(
            state,
            emitter,
            Arc::clone(&self.services),
            Arc::clone(&tools),
            rx,
        );
        if let Some(settings) = fresh {
            submission_loop.emit(
                None,
                EventMsg::ThreadConfigured {
                    session_id: SessionId::from(thread_id),
                    settings,
                    forked_from: None,
                },
            );
        }
        tokio::spawn(submission_loop.run());
        let inner = Arc::new(HandleInner {
            thread_id,
            inbox: tx,
            bus,
            tools,
        });
        self.threads().insert(thread_id, Arc::downgrade(&inner));
        Ok(NewThread {
            handle: ThreadHandle { inner },
            events,
        })
    }

    /// A handle to a loaded thread, if it is still running.
    pub fn get(&self, id: ThreadId) -> Option<ThreadHandle> {
        let mut threads = self.threads();
        let inner = threads.get(&id).and_then(Weak::upgrade);
        match inner {
            Some(inner) if !inner.inbox.is_closed() => Some(ThreadHandle { inner }),
            _ => {
                threads.remove(&id);
                None
            }
        }
    }

    /// Ids of the threads still running, oldest first.
    pub fn list_loaded(&self) -> Vec<ThreadId> {
        let mut threads = self.threads();
        threads.retain(|_, w| w.upgrade().is_some_and(|i| !i.inbox.is_closed()));
        let mut ids: Vec<ThreadId> = threads.keys().copied().collect();
        ids.sort();
        ids
    }

    /// Shut one thread down and wait for it. `false` if it was not loaded.
    pub async fn shutdown_thread(&self, id: ThreadId) -> bool {
        match self.get(id) {
            Some(handle) => {
                let _ = handle.shutdown().await;
                self.threads().remove(&id);
                true
            }
            None => false,
        }
    }

    pub async fn shutdown_all(&self) {
        for id in self.list_loaded() {
            self.shutdown_thread(id).await;
        }
    }
}

/// Fold an earlier life's events by value: history items move into the state instead of
/// being cloned, which halves the memory a large resume needs.
fn replay(events: Vec<Event>) -> Result<ThreadState, KernelError> {
    let mut state = ThreadState::new();
    for event in events {
        state.apply_owned(event);
    }
    if state.settings.is_none() {
        return Err(KernelError::InvalidHistory(
            "no thread_configured event: the history does not say how the thread was set up".into(),
        ));
    }
    if let Some(turn) = &state.active_turn {
        return Err(KernelError::InvalidHistory(format!(
            "turn {} is still open; repair the history before resuming",
            turn.id
        )));
    }
    Ok(state)
}

pub struct ThreadManagerBuilder {
    models: Arc<dyn ModelCatalog>,
    tools: Vec<Arc<dyn crate::tools::Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    stop_hooks: Vec<Arc<dyn StopHook>>,
    config: KernelConfig,
}

impl ThreadManagerBuilder {
    /// Every thread consults `source` too, after the tools given with [`tool`](Self::tool).
    pub fn tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    pub fn tool(mut self, tool: Arc<dyn crate::tools::Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn crate::tools::Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    pub fn stop_hook(mut self, hook: Arc<dyn StopHook>) -> Self {
        self.stop_hooks.push(hook);
        self
    }

    pub fn config(mut self, config: KernelConfig) -> Self {
        self.config = config;
        self
    }

    pub fn build(self) -> ThreadManager {
        ThreadManager::new(KernelServices {
            models: self.models,
            tool_sources: std::iter::once(
                Arc::new(StaticTools::new(self.tools)) as Arc<dyn ToolSource>
            )
            .chain(self.sources)
            .collect(),
            stop_hooks: self.stop_hooks.into(),
            config: self.config,
        })
    }
}
