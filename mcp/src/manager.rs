//! The process's MCP servers. A server is started once per configuration and working
//! directory, when the first thread that needs it is created, and shared by every thread
//! with the same pair. Each thread gets one tool source that offers the tools of its
//! servers that are ready at each step freeze, so a server that becomes ready (or whose
//! tools change, or that is reloaded) is seen from the next step on and no step ever waits
//! for one. `reload` re-reads the configuration: servers whose configuration changed or
//! went away are stopped, the others keep running.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use rein_core::tools::{ThreadToolSource, ToolSet, ToolSource};
use rein_protocol::ThreadSettings;
use tokio::sync::broadcast;

use crate::launch::Env;
use crate::search::{Deferred, DEFAULT_TOOL_BUDGET};
use rein_core::tool_servers::{ServerStatus, StatusUpdate};

use crate::server::Server;
use rein_config::mcp::McpServerConfig;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) name: String,
    pub(crate) cwd: PathBuf,
}

pub(crate) struct Inner {
    pub(crate) configs: Vec<Arc<McpServerConfig>>,
    /// Bumped by every reload (and every restart of a server), so thread sources rebuild
    /// their merged set.
    pub(crate) generation: u64,
    pub(crate) servers: HashMap<Key, Server>,
}

/// The `required` servers of a directory that did not start: a thread there does not
/// start either (as in Codex, whose wording the message keeps).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("required MCP servers failed to initialize: {}", list(.failed))]
pub struct RequiredServersFailed {
    pub failed: Vec<FailedServer>,
}

/// One required server that did not start, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedServer {
    pub name: String,
    pub why: String,
}

fn list(failed: &[FailedServer]) -> String {
    let each: Vec<String> = failed
        .iter()
        .map(|f| format!("{}: {}", f.name, f.why))
        .collect();
    each.join("; ")
}

pub struct McpManager {
    inner: Mutex<Inner>,
    pub(crate) env: Env,
    pub(crate) updates: broadcast::Sender<StatusUpdate>,
    /// MCP tools a thread is offered directly at most (see [`crate::search`]).
    tool_budget: AtomicUsize,
    me: Weak<McpManager>,
}

impl McpManager {
    /// The servers of `configs` (checked by `rein_config::mcp`); nothing starts until a
    /// thread needs its servers.
    pub fn new(configs: &[McpServerConfig], env: Env) -> Arc<Self> {
        let configs = configs.iter().cloned().map(Arc::new).collect();
        Arc::new_cyclic(|me| Self {
            inner: Mutex::new(Inner {
                configs,
                generation: 0,
                servers: HashMap::new(),
            }),
            env,
            updates: broadcast::channel(256).0,
            tool_budget: AtomicUsize::new(DEFAULT_TOOL_BUDGET),
            me: me.clone(),
        })
    }

    /// Offer threads at most `budget` MCP tools directly (`mcp_tool_budget`); past it,
    /// `tool_search` instead.
    pub fn set_tool_budget(&self, budget: usize) {
        self.tool_budget.store(budget, Ordering::Relaxed);
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every status change of every server from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<StatusUpdate> {
        self.updates.subscribe()
    }

    /// The configured servers, enabled or not, in name order.
    pub fn configs(&self) -> Vec<Arc<McpServerConfig>> {
        self.lock().configs.clone()
    }

    /// The servers for threads in `cwd`, started now if they are not running yet.
    pub fn servers_for(&self, cwd: &Path) -> Vec<Server> {
        let mut inner = self.lock();
        let configs: Vec<_> = inner
            .configs
            .iter()
            .filter(|c| c.enabled)
            .cloned()
            .collect();
        configs
            .into_iter()
            .map(|config| {
                let key = Key {
                    name: config.name.clone(),
                    cwd: cwd.to_owned(),
                };
                inner
                    .servers
                    .entry(key)
                    .or_insert_with(|| {
                        Server::start(
                            config,
                            cwd.to_owned(),
                            Arc::clone(&self.env),
                            self.updates.clone(),
                        )
                    })
                    .clone()
            })
            .collect()
    }

    /// Every server started so far.
    pub fn running(&self) -> Vec<Server> {
        let mut servers: Vec<Server> = self.lock().servers.values().cloned().collect();
        servers.sort_by(|a, b| a.name().cmp(b.name()));
        servers
    }

    /// Wait for the `required` servers of threads in `cwd`: an error lists each one that
    /// failed to start.
    pub async fn wait_required(&self, cwd: &Path) -> Result<(), RequiredServersFailed> {
        let mut failed = Vec::new();
        for server in self.servers_for(cwd) {
            if !server.config().required {
                continue;
            }
            let why = match server.wait_settled().await {
                ServerStatus::Ready | ServerStatus::Starting => continue,
                ServerStatus::Failed { error } => error,
                ServerStatus::Stopped { reason } => reason,
            };
            failed.push(FailedServer {
                name: server.name().to_owned(),
                why,
            });
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(RequiredServersFailed { failed })
        }
    }

    /// The servers of threads in `cwd` that are still starting (a one-shot run waits for
    /// them, see [`McpManager::wait_started`]).
    pub fn starting(&self, cwd: &Path) -> Vec<String> {
        self.servers_for(cwd)
            .iter()
            .filter(|s| s.status() == ServerStatus::Starting)
            .map(|s| s.name().to_owned())
            .collect()
    }

    /// Wait until every server of threads in `cwd` has settled (each startup is bounded
    /// by its `startup_timeout`), so a one-shot run's only step offers their tools; gives
    /// the servers that did not start, with why.
    pub async fn wait_started(&self, cwd: &Path) -> Vec<(String, String)> {
        let servers = self.servers_for(cwd);
        let settled = futures::future::join_all(servers.iter().map(Server::wait_settled)).await;
        servers
            .iter()
            .zip(settled)
            .filter_map(|(server, status)| match status {
                ServerStatus::Failed { error } => Some((server.name().to_owned(), error)),
                ServerStatus::Stopped { reason } => Some((server.name().to_owned(), reason)),
                ServerStatus::Ready | ServerStatus::Starting => None,
            })
            .collect()
    }

    /// Use `configs` from now on: servers whose configuration changed or that are gone are
    /// stopped (threads start the new ones at their next step), and a server that had
    /// failed is tried again.
    pub async fn reload(&self, configs: &[McpServerConfig]) {
        let configs: Vec<Arc<McpServerConfig>> = configs.iter().cloned().map(Arc::new).collect();
        let stopped: Vec<Server> = {
            let mut inner = self.lock();
            let keep = |server: &Server| {
                configs
                    .iter()
                    .any(|c| c.enabled && **c == **server.config())
                    && !matches!(server.status(), ServerStatus::Failed { .. })
            };
            let gone: Vec<Key> = inner
                .servers
                .iter()
                .filter(|(_, s)| !keep(s))
                .map(|(k, _)| k.clone())
                .collect();
            let stopped = gone
                .iter()
                .filter_map(|k| inner.servers.remove(k))
                .collect();
            inner.configs = configs;
            inner.generation += 1;
            stopped
        };
        for server in stopped {
            server.stop().await;
        }
    }

    /// Stop every server and wait until each has (its process group is gone).
    pub async fn shutdown(&self) {
        let servers: Vec<Server> = self.lock().servers.drain().map(|(_, s)| s).collect();
        futures::future::join_all(servers.iter().map(Server::stop)).await;
    }
}

impl ThreadToolSource for McpManager {
    fn for_thread(&self, settings: &ThreadSettings) -> Option<Arc<dyn ToolSource>> {
        // Even with no server configured: a reload may add some. Start the thread's servers now, in the background, so they are ready sooner.
        let servers = self.servers_for(&settings.cwd);
        let generation = self.lock().generation;
        Some(Arc::new(ThreadServers {
            manager: self.me.clone(),
            cwd: settings.cwd.clone(),
            cache: RwLock::new(Cache {
                generation,
                servers,
                parts: Vec::new(),
                all: Arc::new(ToolSet::empty()),
                found: 0,
                merged: Arc::new(ToolSet::empty()),
            }),
            deferred: Arc::default(),
        }))
    }
}

struct Cache {
    generation: u64,
    servers: Vec<Server>,
    parts: Vec<Arc<ToolSet>>,
    /// Every tool of the servers.
    all: Arc<ToolSet>,
    /// The version of the searches' findings `merged` was made with.
    found: u64,
    /// What the thread is offered: `all`, or `tool_search` and what it found.
    merged: Arc<ToolSet>,
}

/// One thread's view of its servers.
struct ThreadServers {
    manager: Weak<McpManager>,
    cwd: PathBuf,
    cache: RwLock<Cache>,
    deferred: Arc<Deferred>,
}

impl ToolSource for ThreadServers {
    fn ensure_server(
        &self,
        name: &str,
    ) -> Option<futures::future::BoxFuture<'static, Result<(), String>>> {
        let manager = self.manager.upgrade()?;
        let configured = manager.lock().configs.iter().any(|c| c.name == name);
        if !configured {
            return None;
        }
        let (name, cwd) = (name.to_owned(), self.cwd.clone());
        Some(Box::pin(async move {
            manager
                .ensure_server(&name, &cwd)
                .await
                .map_err(|e| e.to_string())
        }))
    }

    fn tools(&self) -> Arc<ToolSet> {
        let Some(manager) = self.manager.upgrade() else {
            return Arc::new(ToolSet::empty());
        };
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        let generation = manager.lock().generation;
        if generation != cache.generation {
            cache.servers = manager.servers_for(&self.cwd);
            cache.generation = generation;
        }
        let parts: Vec<Arc<ToolSet>> = cache.servers.iter().map(ToolSource::tools).collect();
        let same = parts.len() == cache.parts.len()
            && parts
                .iter()
                .zip(&cache.parts)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        let found = self.deferred.version.load(Ordering::Relaxed);
        if !same || found != cache.found {
            if !same {
                cache.all = Arc::new(ToolSet::merged(parts.iter().map(AsRef::as_ref)));
                cache.parts = parts;
            }
            let budget = manager.tool_budget.load(Ordering::Relaxed);
            cache.merged = if cache.all.specs().len() > budget {
                self.deferred.set_catalog(Arc::clone(&cache.all));
                Arc::new(self.deferred.offered())
            } else {
                Arc::clone(&cache.all)
            };
            cache.found = found;
        }
        Arc::clone(&cache.merged)
    }

    /// Every tool of the servers, the ones behind `tool_search` too.
    fn runnable(&self) -> Arc<ToolSet> {
        // Brings the cache up to date with the servers first.
        self.tools();
        Arc::clone(
            &self
                .cache
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .all,
        )
    }
}
