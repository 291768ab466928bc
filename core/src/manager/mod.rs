//! The process-wide owner of threads and of what they share: the model catalog, the tool
//! sources every thread starts with, stop hooks, kernel settings and the session store.
//! Creating a thread spawns its submission loop; the manager holds every live thread until
//! it is removed explicitly — it shut down (`Op::Shutdown`,
//! [`ThreadManager::shutdown_thread`], an idle unload by a front end) — so a thread created
//! inside the kernel, with no client handle yet, is owned all the same. Every creation is
//! broadcast ([`ThreadManager::subscribe_created`]), so front ends can show threads they did
//! not create. Dropping the manager drops its handles: threads nobody else holds then shut
//! themselves down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};

use rein_protocol::{
    AgentOrigin, Event, EventMsg, SessionId, ThreadContext, ThreadId, ThreadSettings,
};
use tokio::sync::broadcast;

use crate::agents::{AgentControl, AgentsConfig, Strategy};
use crate::error::KernelError;
use crate::hooks::Hooks;
use crate::kernel_config::KernelConfig;
use crate::model::ModelCatalog;
use crate::store::SessionStore;
use crate::thread::bus::{EventBus, EventStream};
use crate::thread::emitter::Emitter;
use crate::thread::handle::{HandleInner, ThreadHandle};
use crate::thread::state::ThreadState;
use crate::thread::submission_loop::SubmissionLoop;
use crate::tools::{StaticTools, ThreadToolSource, ThreadTools, ToolSource, ToolSources};
use crate::turn::stop_hook::StopHook;

mod options;

pub use options::{SpawnedAgent, ThreadOptions, ThreadOrigin, ThreadStart};

/// Shared by every thread of a manager.
pub struct KernelServices {
    pub models: Arc<dyn ModelCatalog>,
    /// The tool sources every thread consults (the built-ins first).
    pub tool_sources: Vec<Arc<dyn ToolSource>>,
    pub stop_hooks: Arc<[Arc<dyn StopHook>]>,
    pub config: KernelConfig,
    /// Sub-agents (the spawn / send / wait / close tools and the trees they make);
    /// `None` when they are turned off.
    pub agents: Option<Arc<AgentControl>>,
    /// The user's hooks (`rein-hooks`); `None`: no hook ever runs.
    pub hooks: Option<Arc<dyn Hooks>>,
    /// The memory store and policy; `None`: memory is off (no `remember`, no recall).
    pub memory: Option<crate::memory::Memory>,
}

/// A freshly created thread: its handle and a stream subscribed before its first event.
pub struct NewThread {
    pub handle: ThreadHandle,
    pub events: EventStream,
    /// Where the session store keeps it, if it keeps files (set by `Kernel`'s methods).
    pub path: Option<std::path::PathBuf>,
}

/// What the "thread created" broadcast carries.
#[derive(Clone)]
pub struct ThreadCreated {
    pub handle: ThreadHandle,
    pub origin: ThreadOrigin,
    /// Set for a sub-agent (spawned now, or resumed).
    pub agent: Option<AgentOrigin>,
}

/// Told of every thread as it is created, with a stream of its events subscribed before
/// the first one (a front end that must not miss a sub-agent's first events). Runs inside
/// `create_thread`: it must only hand the stream on, never wait.
pub type CreationObserver = Arc<dyn Fn(ThreadCreated, EventStream) + Send + Sync>;

type Registry = Mutex<HashMap<ThreadId, ThreadHandle>>;

pub struct ThreadManager {
    services: Arc<KernelServices>,
    store: Option<Arc<dyn SessionStore>>,
    threads: Arc<Registry>,
    created: broadcast::Sender<ThreadCreated>,
    /// Sources that give each new or resumed thread tools of its own (MCP servers).
    thread_sources: RwLock<Vec<Arc<dyn ThreadToolSource>>>,
    observers: RwLock<Vec<CreationObserver>>,
}

impl ThreadManager {
    pub fn new(services: KernelServices) -> Self {
        Self::with_store(services, None)
    }

    pub fn with_store(services: KernelServices, store: Option<Arc<dyn SessionStore>>) -> Self {
        Self {
            services: Arc::new(services),
            store,
            threads: Arc::new(Mutex::new(HashMap::new())),
            created: broadcast::channel(256).0,
            thread_sources: RwLock::default(),
            observers: RwLock::default(),
        }
    }

    pub fn builder(models: Arc<dyn ModelCatalog>) -> ThreadManagerBuilder {
        ThreadManagerBuilder {
            models,
            tools: Vec::new(),
            sources: Vec::new(),
            stop_hooks: Vec::new(),
            config: KernelConfig::default(),
            store: None,
            agents: None,
            hooks: None,
            memory: None,
        }
    }

    pub fn services(&self) -> &Arc<KernelServices> {
        &self.services
    }

    /// The sub-agent machinery, when it is on.
    pub fn agents(&self) -> Option<&Arc<AgentControl>> {
        self.services.agents.as_ref()
    }

    /// Where persisted threads live; `None` when every thread is ephemeral.
    pub fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.store.as_ref()
    }

    /// Hand every thread created from now on to `observer`, with its events from the first.
    pub fn observe_created(&self, observer: CreationObserver) {
        self.observers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(observer);
    }

    /// Ask `source` for tools of every thread created or resumed from now on.
    pub fn add_thread_tool_source(&self, source: Arc<dyn ThreadToolSource>) {
        self.thread_sources
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(source);
    }

    /// Every thread created from now on, as it is created.
    pub fn subscribe_created(&self) -> broadcast::Receiver<ThreadCreated> {
        self.created.subscribe()
    }

    fn threads(&self) -> MutexGuard<'_, HashMap<ThreadId, ThreadHandle>> {
        lock(&self.threads)
    }

    /// Whether a new root may work by `strategy`: the planner needs sub-agents to run its
    /// graph on, so asking for it with them off is refused, never dropped.
    pub fn check_strategy(&self, strategy: Option<Strategy>) -> Result<(), KernelError> {
        if strategy == Some(Strategy::Planner) && self.services.agents.is_none() {
            return Err(KernelError::InvalidSettings(
                "the planner strategy needs sub-agents, which are off \
                 (features.multi_agent = false)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Create (or resume, or fork) a thread and spawn its loop. Must run inside a tokio
    /// runtime.
    pub fn create_thread(&self, options: ThreadOptions) -> Result<NewThread, KernelError> {
        let ThreadOptions {
            start,
            recorder,
            thread_id,
            origin,
            agent: spawned,
            context,
            context_warnings,
            strategy,
        } = options;
        let (mut state, thread_id, fresh) =
            self.initial_state(start, thread_id, spawned.as_ref(), strategy)?;
        if self.get(thread_id).is_some() {
            return Err(KernelError::AlreadyLoaded(thread_id));
        }
        let bus = Arc::new(EventBus::default());
        let events = bus.subscribe();
        let observers = self.observer_streams(&bus);
        let emitter = Emitter::new(thread_id, Arc::clone(&bus), recorder);
        let (tx, rx) = async_channel::bounded(self.services.config.op_queue_capacity.max(1));
        state.thread_id = Some(thread_id);
        let origin_of_agent = spawned.as_ref().map(|a| &a.origin);
        let tools = self.thread_tools(&state, fresh.as_ref(), origin_of_agent);
        let agent = origin_of_agent.cloned().or_else(|| state.agent.clone());
        let strategy = state.strategy;
        let mut submission_loop = SubmissionLoop::new(
            state,
            emitter,
            Arc::clone(&self.services),
            Arc::clone(&tools),
            rx,
        );
        submission_loop.goal_forked(matches!(origin, ThreadOrigin::Forked { .. }));
        if let Some(settings) = fresh {
            let configured = EventMsg::ThreadConfigured {
                session_id: spawned
                    .as_ref()
                    .map_or(SessionId::from(thread_id), |a| a.session_id),
                settings,
                forked_from: None,
                strategy,
            };
            first_events(
                &mut submission_loop,
                configured,
                spawned,
                context,
                context_warnings,
            );
        }
        let inner = Arc::new(HandleInner {
            thread_id,
            inbox: tx,
            bus,
            tools,
        });
        let handle = ThreadHandle { inner };
        self.unregister_on_exit(&mut submission_loop, &handle);
        self.threads().insert(thread_id, handle.clone());
        let created = ThreadCreated {
            handle: handle.clone(),
            origin,
            agent,
        };
        for (observer, stream) in observers {
            observer(created.clone(), stream);
        }
        tokio::spawn(submission_loop.run());
        let _ = self.created.send(created);
        Ok(NewThread {
            handle,
            events,
            path: None,
        })
    }

    /// Each creation observer with its own subscription to the new thread's events, taken
    /// before the thread can emit any.
    fn observer_streams(&self, bus: &Arc<EventBus>) -> Vec<(CreationObserver, EventStream)> {
        self.observers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|o| (Arc::clone(o), bus.subscribe()))
            .collect()
    }

    /// The state a thread starts from, its id, and the settings of a new thread (none for a
    /// resumed one, whose settings its events hold). A new thread's settings are checked
    /// here, before anything is written.
    fn initial_state(
        &self,
        start: ThreadStart,
        thread_id: Option<ThreadId>,
        spawned: Option<&SpawnedAgent>,
        strategy: Option<Strategy>,
    ) -> Result<(ThreadState, ThreadId, Option<ThreadSettings>), KernelError> {
        match start {
            ThreadStart::New { settings } => {
                self.services.models.client(&settings.model)?;
                if let Some(effort) = &settings.reasoning_effort {
                    self.services
                        .models
                        .check_effort(&settings.model, effort)
                        .map_err(|e| KernelError::InvalidSettings(e.to_string()))?;
                }
                if !settings.cwd.is_absolute() {
                    return Err(KernelError::InvalidSettings(format!(
                        "cwd must be an absolute path: {}",
                        settings.cwd.display()
                    )));
                }
                let id = thread_id.unwrap_or_default();
                let (settings, strategy) = match (&self.services.agents, spawned) {
                    (Some(agents), None) => agents.root_settings(settings, strategy),
                    _ => {
                        self.check_strategy(strategy)?;
                        (settings, None)
                    }
                };
                let mut state = ThreadState::new();
                state.strategy = strategy;
                Ok((state, id, Some(settings)))
            }
            ThreadStart::Resume { events } => {
                let state = replay(events)?;
                let id = state.thread_id.unwrap_or_default();
                Ok((state, id, None))
            }
        }
    }

    /// The thread's tools: the kernel's sources, the per-thread ones, and the sub-agent
    /// tools its depth, role and strategy allow (a role may narrow the whole set).
    fn thread_tools(
        &self,
        state: &ThreadState,
        fresh: Option<&ThreadSettings>,
        spawned: Option<&AgentOrigin>,
    ) -> Arc<ThreadTools> {
        let mut sources = self.services.tool_sources.clone();
        if let Some(settings) = fresh.or(state.settings.as_ref()) {
            let thread_sources = self
                .thread_sources
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            sources.extend(thread_sources.iter().filter_map(|s| s.for_thread(settings)));
        }
        let tools = Arc::new(ThreadTools::new(ToolSources::new(sources)));
        if let Some(agents) = &self.services.agents {
            let origin = spawned.or(state.agent.as_ref());
            let depth = origin.map_or(0, |o| o.depth);
            let role = origin.and_then(|o| o.role.as_deref());
            let strategy = state.strategy.unwrap_or(agents.config().strategy);
            tools.sources.add(agents.tool_source(depth, role, strategy));
            if let Some(allow) = agents.role_tools(role) {
                tools.sources.restrict(allow);
            }
        }
        tools.set_grants(state.session_grants.clone());
        tools
    }

    /// The loop takes itself out of the registry when it ends, however it ends.
    fn unregister_on_exit(&self, submission_loop: &mut SubmissionLoop, handle: &ThreadHandle) {
        let thread_id = handle.inner.thread_id;
        let registry: Weak<Registry> = Arc::downgrade(&self.threads);
        let served = Arc::downgrade(&handle.inner);
        submission_loop.on_exit(Box::new(move || {
            if let Some(registry) = registry.upgrade() {
                let mut threads = lock(&registry);
                if threads
                    .get(&thread_id)
                    .is_some_and(|h| Arc::as_ptr(&h.inner) == served.as_ptr())
                {
                    threads.remove(&thread_id);
                }
            }
        }));
    }

    /// A handle to a loaded thread, if it is still running.
    pub fn get(&self, id: ThreadId) -> Option<ThreadHandle> {
        let mut threads = self.threads();
        match threads.get(&id) {
            Some(handle) if !handle.is_closed() => Some(handle.clone()),
            Some(_) => {
                threads.remove(&id);
                None
            }
            None => None,
        }
    }

    /// Ids of the threads still running, oldest first.
    pub fn list_loaded(&self) -> Vec<ThreadId> {
        let mut threads = self.threads();
        threads.retain(|_, h| !h.is_closed());
        let mut ids: Vec<ThreadId> = threads.keys().copied().collect();
        ids.sort();
        ids
    }

    /// Shut one thread down and wait for it (its last events durable, its rollout
    /// released). `false` if it was not loaded.
    pub async fn shutdown_thread(&self, id: ThreadId) -> bool {
        let handle = self.threads().get(&id).cloned();
        match handle {
            Some(handle) => {
                let _ = handle.shutdown().await;
                self.threads().remove(&id);
                true
            }
            None => false,
        }
    }

    /// Shut every thread down, then wait until everything the store was given is
    /// durable: what a process runs before it exits (end of input, SIGTERM).
    pub async fn shutdown_all(&self) {
        let handles: Vec<ThreadHandle> = self.threads().values().cloned().collect();
        futures::future::join_all(handles.iter().map(ThreadHandle::shutdown)).await;
        self.threads().clear();
        if let Some(store) = &self.store {
            store.flush().await;
        }
    }
}

fn lock(registry: &Registry) -> MutexGuard<'_, HashMap<ThreadId, ThreadHandle>> {
    registry
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    store: Option<Arc<dyn SessionStore>>,
    agents: Option<AgentsConfig>,
    hooks: Option<Arc<dyn Hooks>>,
    memory: Option<crate::memory::Memory>,
}

impl ThreadManagerBuilder {
    /// Give every thread memory: the `remember` tool and the per-turn recall.
    pub fn memory(self, memory: crate::memory::Memory) -> Self {
        self.memory_with_tool(memory, |tool| tool)
    }

    /// [`Self::memory`], the `remember` tool passed through `wrap` first (a replay answers
    /// its calls with their recorded results).
    pub fn memory_with_tool(
        mut self,
        memory: crate::memory::Memory,
        wrap: impl FnOnce(Arc<dyn crate::tools::Tool>) -> Arc<dyn crate::tools::Tool>,
    ) -> Self {
        self.tools
            .push(wrap(Arc::new(crate::memory::tool::RememberTool::new(
                memory.clone(),
            ))));
        self.memory = Some(memory);
        self
    }

    /// Run the user's hooks around every thread's tool calls.
    pub fn hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Offer every thread the sub-agent tools, with these limits (unless
    /// `config.enabled` is false). They need a manager built with
    /// [`build_shared`](Self::build_shared).
    pub fn agents(mut self, config: AgentsConfig) -> Self {
        self.agents = Some(config).filter(|c| c.enabled);
        self
    }

    /// [`build`](Self::build), shared: the sub-agent tools reach the manager through it.
    pub fn build_shared(self) -> Arc<ThreadManager> {
        Arc::new_cyclic(|weak: &Weak<ThreadManager>| {
            let manager = self.build();
            if let Some(agents) = manager.agents() {
                agents.attach(weak.clone());
            }
            manager
        })
    }

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

    /// Where persisted threads live.
    pub fn store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    pub fn build(self) -> ThreadManager {
        ThreadManager::with_store(
            KernelServices {
                models: self.models,
                tool_sources: std::iter::once(
                    Arc::new(StaticTools::new(self.tools)) as Arc<dyn ToolSource>
                )
                .chain(self.sources)
                .collect(),
                stop_hooks: self.stop_hooks.into(),
                config: self.config,
                agents: self.agents.map(AgentControl::new),
                hooks: self.hooks,
                memory: self.memory,
            },
            self.store,
        )
    }
}

/// A new thread's first events: its configuration, a sub-agent's origin, the project
/// context and its warnings, and the history a sub-agent is given.
fn first_events(
    submission_loop: &mut SubmissionLoop,
    configured: EventMsg,
    spawned: Option<SpawnedAgent>,
    context: Option<ThreadContext>,
    context_warnings: Vec<String>,
) {
    submission_loop.emit(None, configured);
    if let Some(spawned) = &spawned {
        submission_loop.emit(
            None,
            EventMsg::AgentOrigin {
                origin: spawned.origin.clone(),
            },
        );
    }
    if let Some(context) = context {
        submission_loop.emit(None, EventMsg::ContextLoaded { context });
    }
    for message in context_warnings {
        submission_loop.emit(None, EventMsg::Warning { message });
    }
    if let Some(spawned) = spawned {
        for item in spawned.history {
            submission_loop.emit(None, EventMsg::ItemCompleted { item });
        }
    }
}
