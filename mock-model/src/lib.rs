//! The HTTP face of rein's scripted model. [`serve`] plays a
//! [`Script`] — the same format the in-process scripted
//! model plays — over `POST /v1/responses` (OpenAI Responses streaming),
//! `POST /v1/chat/completions` (Chat Completions streaming) and `GET /v1/models`, with the
//! script's faults: HTTP errors, 429 with `Retry-After`, a cut stream, a stream that never
//! ends, and context-window-exceeded in the shape OpenAI sends it.
//!
//! Every request is kept in memory ([`MockServer::requests`], headers included, for
//! tests) and, when a log path is given, appended to it as one JSON line
//! `{"method", "path", "body"}` — without headers, so keys never reach the file.
//!
//! Architecture invariant: replies are chosen in the order requests arrive, one script
//! entry per request, whatever the endpoint.

mod chat;
mod play;
mod responses;
mod server;
mod wire;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rein_protocol::script::Script;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};
use tokio::task::{JoinHandle, JoinSet};

use server::Shared;

#[derive(Debug, thiserror::Error)]
pub enum MockError {
    #[error("could not listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("could not open the request log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not read the script {}: {source}", path.display())]
    ReadScript {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the script {} is not valid: {source}", path.display())]
    ParseScript {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names are lower-case.
    pub headers: Vec<(String, String)>,
    /// The JSON body; a string if it was not JSON, `null` if empty.
    pub body: serde_json::Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a script file (JSON).
pub fn load_script(path: &Path) -> Result<Script, MockError> {
    let text = std::fs::read_to_string(path).map_err(|source| MockError::ReadScript {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| MockError::ParseScript {
        path: path.to_owned(),
        source,
    })
}

/// A running mock model server. Dropping it stops the server and closes its connections.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Start serving `script` on `addr` (port 0 picks a free one). Requests are appended to
/// `request_log` as JSON lines when it is given (the file is created or appended to).
pub async fn serve(
    script: Script,
    addr: SocketAddr,
    request_log: Option<PathBuf>,
) -> Result<MockServer, MockError> {
    let log = match request_log {
        Some(path) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|source| MockError::Log { path, source })?,
        )),
        None => None,
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| MockError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| MockError::Bind { addr, source })?;
    let shared = Arc::new(Shared {
        player: play::Player::new(script),
        log,
        requests: Mutex::new(Vec::new()),
        abandoned: AtomicUsize::new(0),
        connections: AtomicUsize::new(0),
        changed: Notify::new(),
    });
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
    Ok(MockServer {
        addr: bound,
        shared,
        stop: Some(stop),
        task: Some(task),
    })
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    // Dropping the set when the loop ends aborts every connection still open.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let shared = Arc::clone(&shared);
                connections.spawn(async move {
                    let service = service_fn(move |req| server::handle(Arc::clone(&shared), req));
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(error = %e, "mock model connection ended with an error");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

impl MockServer {
    /// Answer every request that ends with a tool's output with `reply` instead of the
    /// next scripted reply (benchmarks of concurrent tool turns: the first request of
    /// each turn gets the tool call, its follow-up this, whatever order they arrive in).
    /// Returns false if a reply was already set.
    pub fn answer_tool_outputs_with(&self, reply: rein_protocol::script::ScriptedReply) -> bool {
        self.shared.player.answer_tool_outputs_with(reply)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL a provider configuration points at: `http://<addr>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// How many TCP connections were accepted (clients that pool connections reuse one).
    pub fn connections_accepted(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// How many reply streams ended because the client went away before the reply did.
    pub fn abandoned_streams(&self) -> usize {
        self.shared.abandoned.load(Ordering::SeqCst)
    }

    /// Wait until at least `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        self.wait_until(|| self.requests().len() >= n).await;
    }

    /// Wait until at least `n` reply streams were abandoned by their clients.
    pub async fn wait_for_abandoned(&self, n: usize) {
        self.wait_until(|| self.abandoned_streams() >= n).await;
    }

    async fn wait_until(&self, done: impl Fn() -> bool) {
        loop {
            let changed = self.shared.changed.notified();
            if done() {
                return;
            }
            changed.await;
        }
    }

    /// Stop accepting, close every connection, and wait for the server task to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

// The server seen by a plain HTTP client (what used to be this crate's integration test),
// run with the unit tests so the crate builds one test binary (CONTRIBUTING.md): it
// uses only the public API.
#[cfg(test)]
mod tests {
    mod wire;
}
