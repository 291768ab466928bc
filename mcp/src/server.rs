//! One server (a configuration, in one working directory), supervised in the background:
//! starting → ready → failed / stopped, each change broadcast with its reason. Startup is
//! bounded by `startup_timeout` (the handshake and the first `tools/list`); nothing waits
//! for it but what asks to ([`Server::wait_settled`]). A server that dies after it was
//! ready is restarted with backoff, a bounded number of times in a row; while it is down
//! its tools are not offered and calls to it fail at once. `tools/list_changed` makes it
//! list its tools again, offered from the next step on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rein_core::tool_servers::{ServerStatus, StatusUpdate};
use rein_core::tools::{Tool, ToolContext, ToolSet, ToolSource};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{
    Peer, QuitReason, RoleClient, RunningService, RunningServiceCancellationToken,
};
use rmcp::ServiceExt;
use tokio::sync::{broadcast, mpsc, watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::bounded::{BoundedLines, Broken, MAX_MESSAGE_BYTES};
use crate::handler::Handler;
use crate::launch::{self, Env, StdioProcess, StdioSpec};
use crate::tool::McpTool;
use rein_config::mcp::{McpServerConfig, Transport};

/// Restarts in a row (each after a longer wait) before a server that keeps dying is left
/// failed until a reload.
pub const MAX_RESTARTS: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// A server up this long has its restart count forgiven.
const STABLE_AFTER: Duration = Duration::from_secs(60);

type ProgressMap = Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>>;

/// What the running connection and the tools share.
pub(crate) struct Shared {
    pub name: String,
    pub config: Arc<McpServerConfig>,
    pub cwd: PathBuf,
    status: watch::Sender<ServerStatus>,
    tools: RwLock<Arc<ToolSet>>,
    /// The raw tools as listed (for status listings).
    listed: RwLock<Vec<rmcp::model::Tool>>,
    /// What the last listing left out (limits), for the server's status.
    warnings: RwLock<Vec<String>>,
    /// Why rein ended the connection itself (an oversized message), if it did.
    pub(crate) broken: Broken,
    /// When the elicitations of the last [`crate::handler::ELICITATION_WINDOW`] were asked.
    pub(crate) elicited: Mutex<std::collections::VecDeque<Instant>>,
    peer: RwLock<Option<Peer<RoleClient>>>,
    pid: watch::Sender<Option<u32>>,
    pub(crate) progress: ProgressMap,
    pub(crate) tools_changed: Notify,
    /// A call found the connection unusable (an HTTP server that went away).
    pub(crate) lost: Notify,
    /// The calls under way, oldest first: an elicitation goes to the user of the latest.
    pub(crate) calls: Mutex<Vec<(u64, ToolContext)>>,
    next_call: AtomicU64,
    /// Bumped each time the tools are listed, so waiters see a new list.
    listings: watch::Sender<u64>,
    pub(crate) stop: CancellationToken,
    updates: broadcast::Sender<StatusUpdate>,
}

impl Shared {
    fn set_status(&self, status: ServerStatus) {
        match &status {
            ServerStatus::Failed { error } => {
                tracing::warn!(server = %self.name, "MCP server failed: {error}")
            }
            other => tracing::info!(server = %self.name, status = ?other, "MCP server"),
        }
        let _ = self.updates.send(StatusUpdate {
            server: self.name.clone(),
            cwd: self.cwd.clone(),
            status: status.clone(),
        });
        self.status.send_replace(status);
    }

    /// Note a call under way until the guard is dropped.
    pub(crate) fn call_started(&self, ctx: &ToolContext) -> CallGuard<'_> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, ctx.clone()));
        CallGuard { shared: self, id }
    }

    /// The call an elicitation belongs to. MCP does not say which request a server's
    /// request is about, so it is taken to be the latest call under way.
    pub(crate) fn current_call(&self) -> Option<ToolContext> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.last().map(|(_, ctx)| ctx.clone())
    }

    /// The connection to call through, if the server is up.
    pub(crate) fn peer(&self) -> Result<Peer<RoleClient>, String> {
        if let Some(peer) = self
            .peer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|p| !p.is_transport_closed())
        {
            return Ok(peer.clone());
        }
        Err(match &*self.status.borrow() {
            ServerStatus::Starting => format!("MCP server '{}' is still starting", self.name),
            ServerStatus::Ready => format!("MCP server '{}' closed its connection", self.name),
            ServerStatus::Failed { error } => {
                format!("MCP server '{}' is not running: {error}", self.name)
            }
            ServerStatus::Stopped { reason } => {
                format!("MCP server '{}' is stopped: {reason}", self.name)
            }
        })
    }
}

pub(crate) struct CallGuard<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.shared
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.id);
    }
}

/// A supervised server. Cheap to clone; the supervisor runs until [`Server::stop`].
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    status: watch::Receiver<ServerStatus>,
}

impl Server {
    /// Start supervising `config` in `cwd` (the thread's working directory): the startup
    /// runs in the background.
    pub(crate) fn start(
        config: Arc<McpServerConfig>,
        cwd: PathBuf,
        env: Env,
        updates: broadcast::Sender<StatusUpdate>,
    ) -> Self {
        let (status, receiver) = watch::channel(ServerStatus::Starting);
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            config,
            cwd,
            status,
            tools: RwLock::default(),
            listed: RwLock::default(),
            warnings: RwLock::default(),
            broken: Broken::default(),
            elicited: Mutex::default(),
            peer: RwLock::default(),
            pid: watch::channel(None).0,
            progress: Mutex::default(),
            tools_changed: Notify::new(),
            lost: Notify::new(),
            calls: Mutex::default(),
            next_call: AtomicU64::new(0),
            listings: watch::channel(0).0,
            stop: CancellationToken::new(),
            updates,
        });
        let _ = shared.updates.send(StatusUpdate {
            server: shared.name.clone(),
            cwd: shared.cwd.clone(),
            status: ServerStatus::Starting,
        });
        tokio::spawn(supervise(Arc::clone(&shared), env));
        Self {
            shared,
            status: receiver,
        }
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn config(&self) -> &Arc<McpServerConfig> {
        &self.shared.config
    }

    pub fn status(&self) -> ServerStatus {
        self.status.borrow().clone()
    }

    /// The process id of a running stdio server's supervisor (the server is its child; see
    /// `launch`).
    pub fn pid(&self) -> Option<u32> {
        *self.shared.pid.borrow()
    }

    /// Wait until a stdio server's process runs, and give its id.
    pub async fn spawned(&self) -> u32 {
        let mut pid = self.shared.pid.subscribe();
        let spawned = pid.wait_for(Option::is_some).await.map(|p| *p);
        spawned.ok().flatten().unwrap_or_default()
    }

    /// The tools as the server listed them (before filtering), while it is ready.
    pub fn listed_tools(&self) -> Vec<rmcp::model::Tool> {
        self.shared
            .listed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the last listing of the server's tools left out, by the limits of
    /// [`crate::listing`] (empty when nothing was).
    pub fn listing_warnings(&self) -> Vec<String> {
        self.shared
            .warnings
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The server's own description of itself, while it is connected.
    pub fn server_info(&self) -> Option<rmcp::model::Implementation> {
        let peer = self
            .shared
            .peer
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        peer.as_ref()
            .and_then(rmcp::Peer::peer_info)
            .and_then(|info| info.server_info.clone())
    }

    /// Wait until the startup under way has succeeded or failed.
    pub async fn wait_settled(&self) -> ServerStatus {
        let mut status = self.status.clone();
        let settled = status
            .wait_for(ServerStatus::settled)
            .await
            .map(|s| s.clone());
        match settled {
            Ok(s) => s,
            Err(_) => ServerStatus::Stopped {
                reason: "the supervisor ended".into(),
            },
        }
    }

    /// Wait until the status satisfies `f` (tests, front ends).
    pub async fn wait_for(&self, f: impl FnMut(&ServerStatus) -> bool) -> ServerStatus {
        let mut status = self.status.clone();
        let reached = status.wait_for(f).await.map(|s| s.clone());
        match reached {
            Ok(s) => s,
            Err(_) => self.status(),
        }
    }

    /// Wait until the server has listed tools whose raw names satisfy `f`.
    pub async fn wait_tools(&self, mut f: impl FnMut(&[String]) -> bool) {
        let mut listings = self.shared.listings.subscribe();
        loop {
            let names: Vec<String> = self
                .listed_tools()
                .iter()
                .map(|t| t.name.to_string())
                .collect();
            if f(&names) || listings.changed().await.is_err() {
                return;
            }
        }
    }

    /// Stop the server (its process group goes too) and wait until it has.
    pub async fn stop(&self) {
        self.shared.stop.cancel();
        self.wait_for(|s| matches!(s, ServerStatus::Stopped { .. }))
            .await;
    }
}

impl ToolSource for Server {
    fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(
            &self
                .shared
                .tools
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

/// A live connection and what must be stopped with it.
struct Connection {
    peer: Peer<RoleClient>,
    /// Cancels the connection's service loop.
    cancel: Option<RunningServiceCancellationToken>,
    /// The service loop; it ends when the transport closes or is cancelled.
    quit: tokio::task::JoinHandle<Result<QuitReason, tokio::task::JoinError>>,
    process: Option<StdioProcess>,
}

impl Connection {
    fn new(service: RunningService<RoleClient, Handler>, process: Option<StdioProcess>) -> Self {
        Self {
            peer: service.peer().clone(),
            cancel: Some(service.cancellation_token()),
            quit: tokio::spawn(service.waiting()),
            process,
        }
    }

    async fn close(mut self) {
        if let Some(cancel) = self.cancel.take() {
            cancel.cancel();
        }
        // A loop that ended was polled to completion already (by `serve`).
        if !self.quit.is_finished() {
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut self.quit).await;
        }
        self.quit.abort();
        if let Some(process) = self.process.take() {
            process.stop().await;
        }
    }
}

enum Ended {
    Stopped,
    Died(String),
}

async fn supervise(shared: Arc<Shared>, env: Env) {
    let mut restarts = 0u32;
    let mut ever_ready = false;
    loop {
        // The process is kept out of the startup future, so a startup that is abandoned
        // (stopped, timed out) still stops it and waits until it is gone.
        let mut process = None;
        let connection = start(&shared, &env, &mut process).await;
        let error = match connection {
            Err(error) => {
                if let Some(process) = process.take() {
                    process.kill().await;
                }
                shared.pid.send_replace(None);
                if shared.stop.is_cancelled() {
                    shared.set_status(ServerStatus::Stopped {
                        reason: "shut down".into(),
                    });
                    return;
                }
                error
            }
            Ok(mut connection) => {
                connection.process = process.take();
                ever_ready = true;
                let up = Instant::now();
                let ended = run_ready(&shared, connection).await;
                match ended {
                    Ended::Stopped => {
                        shared.set_status(ServerStatus::Stopped {
                            reason: "shut down".into(),
                        });
                        return;
                    }
                    Ended::Died(error) => {
                        if up.elapsed() >= STABLE_AFTER {
                            restarts = 0;
                        }
                        error
                    }
                }
            }
        };
        if !ever_ready || restarts >= MAX_RESTARTS {
            let error = if ever_ready {
                format!("{error} (gave up after {restarts} restarts; reload to try again)")
            } else {
                error
            };
            shared.set_status(ServerStatus::Failed { error });
            shared.stop.cancelled().await;
            shared.set_status(ServerStatus::Stopped {
                reason: "shut down".into(),
            });
            return;
        }
        let wait = FIRST_BACKOFF * 2u32.pow(restarts);
        restarts += 1;
        shared.set_status(ServerStatus::Failed {
            error: format!("{error} (restart {restarts} of {MAX_RESTARTS} in {wait:?})"),
        });
        tokio::select! {
            () = tokio::time::sleep(wait) => shared.set_status(ServerStatus::Starting),
            () = shared.stop.cancelled() => {
                shared.set_status(ServerStatus::Stopped { reason: "shut down".into() });
                return;
            }
        }
    }
}

/// One start of the server: a connection within its startup timeout, or why not (empty
/// when the server was stopped meanwhile).
async fn start(
    shared: &Arc<Shared>,
    env: &Env,
    process: &mut Option<StdioProcess>,
) -> Result<Connection, String> {
    let started = tokio::select! {
        started = tokio::time::timeout(
            shared.config.startup_timeout,
            connect(shared, env, process),
        ) => Some(started),
        () = shared.stop.cancelled() => None,
    };
    match started {
        Some(Ok(connection)) => connection,
        Some(Err(_elapsed)) => Err(format!(
            "no answer to initialize and tools/list within {:?} (startup_timeout_sec)",
            shared.config.startup_timeout
        )),
        None => Err(String::new()),
    }
}

/// Serve a ready connection until it ends; then the server's peer and tools are forgotten
/// and the connection closed.
async fn run_ready(shared: &Arc<Shared>, mut connection: Connection) -> Ended {
    shared.set_status(ServerStatus::Ready);
    let ended = serve(shared, &mut connection).await;
    *shared.peer.write().unwrap_or_else(PoisonError::into_inner) = None;
    *shared.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ToolSet::empty());
    shared
        .listed
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    connection.close().await;
    shared.pid.send_replace(None);
    ended
}

/// Run a ready connection until it closes or the server is stopped, listing the tools
/// again whenever the server says they changed.
async fn serve(shared: &Arc<Shared>, connection: &mut Connection) -> Ended {
    let peer = connection.peer.clone();
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => return Ended::Stopped,
            () = shared.tools_changed.notified() => {
                // Timed (startup_timeout a request), and given up when the server is stopped.
                tokio::select! {
                    listed = list_tools(shared, &peer) => if let Err(e) = listed {
                        return Ended::Died(e);
                    },
                    () = shared.stop.cancelled() => return Ended::Stopped,
                }
            }
            _ = &mut connection.quit => {
                return Ended::Died(shared.broken.or(
                    "the server closed the connection (it exited?)".into(),
                ));
            }
            () = shared.lost.notified() => {
                return Ended::Died("the server could not be reached".into());
            }
        }
    }
}

async fn connect(
    shared: &Arc<Shared>,
    env: &Env,
    slot: &mut Option<StdioProcess>,
) -> Result<Connection, String> {
    let handler = Handler {
        shared: Arc::clone(shared),
    };
    shared.broken.clear();
    let service = match &shared.config.transport {
        Transport::Stdio {
            command,
            args,
            env: literal,
            env_vars,
            cwd,
        } => {
            let dir = launch::server_cwd(cwd.as_deref(), &shared.cwd);
            let spec = StdioSpec {
                server: &shared.name,
                command,
                args,
                env: literal,
                env_vars,
                cwd: &dir,
            };
            let (process, stdout, stdin) = launch::spawn(&spec, env)
                .map_err(|e| format!("cannot start `{command}` in {}: {e}", dir.display()))?;
            shared.pid.send_replace(process.pid);
            *slot = Some(process);
            let stdout = BoundedLines::new(
                stdout,
                MAX_MESSAGE_BYTES,
                &shared.name,
                shared.broken.clone(),
            );
            match handler.serve((stdout, stdin)).await {
                Ok(service) => service,
                Err(e) => return Err(shared.broken.or(format!("initialize failed: {e}"))),
            }
        }
        Transport::StreamableHttp {
            url,
            bearer_token_env_var,
            http_headers,
            env_http_headers,
        } => {
            let transport = crate::http::transport(
                &shared.name,
                url,
                bearer_token_env_var.as_deref(),
                http_headers,
                env_http_headers,
                env,
            )?;
            match handler.serve(transport).await {
                Ok(service) => service,
                Err(e) => {
                    let cause = crate::http::root_cause(&e);
                    return Err(format!("initialize at {url} failed: {cause}"));
                }
            }
        }
    };
    let connection = Connection::new(service, None);
    let peer = connection.peer.clone();
    if let Err(e) = list_tools(shared, &peer).await {
        connection.close().await;
        return Err(shared.broken.or(e));
    }
    *shared.peer.write().unwrap_or_else(PoisonError::into_inner) = Some(peer);
    Ok(connection)
}

/// List the server's tools (within the limits of [`crate::listing`]) and offer the enabled
/// ones from the next step on.
async fn list_tools(shared: &Arc<Shared>, peer: &Peer<RoleClient>) -> Result<(), String> {
    let listing = crate::listing::list(peer, shared.config.startup_timeout)
        .await
        .map_err(|e| shared.broken.or(e))?;
    let listed = listing.tools;
    let offered: Vec<&rmcp::model::Tool> = listed
        .iter()
        .filter(|t| shared.config.offers(&t.name))
        .collect();
    let raw: Vec<&str> = offered.iter().map(|t| t.name.as_ref()).collect();
    let names = crate::naming::model_names(&shared.name, &raw);
    let tools: Vec<Arc<dyn Tool>> = offered
        .into_iter()
        .zip(names)
        .filter_map(|(tool, name)| {
            name.map(|n| Arc::new(McpTool::new(Arc::clone(shared), tool.clone(), n)) as _)
        })
        .collect();
    tracing::info!(server = %shared.name, tools = tools.len(), "MCP server tools listed");
    *shared.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ToolSet::new(tools));
    *shared
        .listed
        .write()
        .unwrap_or_else(PoisonError::into_inner) = listed;
    *shared
        .warnings
        .write()
        .unwrap_or_else(PoisonError::into_inner) = listing.warnings;
    shared.listings.send_modify(|n| *n += 1);
    Ok(())
}
