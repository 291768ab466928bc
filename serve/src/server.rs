//! The listener: one HTTP/1 connection task per socket, every request admitted
//! (`rein_bootstrap::admission`) before it is routed. Header reads are timed (a slowloris client is
//! closed) and the sockets open at once are capped.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use rein_bootstrap::Kernel;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::error::ApiError;
use crate::handlers;
use crate::runs::{Approvals, Runs};
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use rein_bootstrap::admission::{Admission, Refusal};

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The bearer token every request must carry.
    pub token: String,
    /// Host names accepted in `Host` besides the bound address (and `localhost`).
    pub allowed_hosts: Vec<String>,
    /// The working directory of new threads.
    pub cwd: PathBuf,
    /// Longest accepted request body.
    pub max_body_bytes: usize,
    /// Turns running at once; one more is answered 429.
    pub max_runs: usize,
    /// Sockets open at once; more wait to be accepted.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, and then its body.
    pub read_timeout: Duration,
    /// How long a thread stays loaded after a turn, idle (then its rollout is free for
    /// `rein exec resume` and the app-server).
    pub idle_unload: Duration,
    /// Who answers approval requests.
    pub approvals: Approvals,
}

impl ServeOptions {
    pub fn new(token: String, cwd: PathBuf) -> Self {
        Self {
            token,
            allowed_hosts: Vec::new(),
            cwd,
            max_body_bytes: 16 * 1024 * 1024,
            max_runs: 64,
            max_connections: 4096,
            read_timeout: Duration::from_secs(30),
            idle_unload: Duration::from_secs(30),
            approvals: Approvals::Decline,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("accepting a connection: {0}")]
    Accept(#[source] std::io::Error),
}

/// What every request handler shares.
pub(crate) struct App {
    pub runs: Runs,
    pub options: ServeOptions,
    /// The Agent Protocol's runs waiting for their thread (`crate::agent`).
    pub agent: crate::agent::AgentState,
}

/// Serve until the listener fails; the caller stops it by dropping the future.
pub async fn serve(
    kernel: Arc<Kernel>,
    listener: TcpListener,
    options: ServeOptions,
) -> Result<(), ServeError> {
    let app = Arc::new(App {
        runs: Runs::new(
            kernel,
            options.cwd.clone(),
            options.max_runs.max(1),
            options.idle_unload,
            options.approvals,
        ),
        options,
        agent: crate::agent::AgentState::default(),
    });
    // Before the first connection: the runs queued before a restart keep their places.
    crate::agent::recover(&app).await;
    let slots = Arc::new(Semaphore::new(app.options.max_connections.max(1)));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return Ok(());
        };
        let (socket, _peer) = listener.accept().await.map_err(ServeError::Accept)?;
        let Ok(local) = socket.local_addr() else {
            continue;
        };
        let admission = Arc::new(Admission::new(
            Some(app.options.token.clone()),
            local,
            &app.options.allowed_hosts,
        ));
        let app = Arc::clone(&app);
        let read_timeout = app.options.read_timeout;
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let (app, admission) = (Arc::clone(&app), Arc::clone(&admission));
                async move { Ok::<_, Infallible>(respond(&app, &admission, req).await) }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .serve_connection(TokioIo::new(socket), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("connection ended: {e}");
            }
            drop(slot);
        });
    }
}

async fn respond(app: &Arc<App>, admission: &Admission, req: Request<Incoming>) -> Response<Body> {
    match route(app, admission, req).await {
        Ok(response) => response,
        Err(e) => handlers::error_response(&e),
    }
}

async fn route(
    app: &Arc<App>,
    admission: &Admission,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    admitted(admission, req.headers())?;
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = req.method().clone();
    if crate::agent::owns(&segments) {
        return crate::agent::route(app, &segments, method, &query, req).await;
    }
    match (segments.as_slice(), method) {
        (["v1", "responses"], Method::POST) => handlers::create(app, req).await,
        (["v1", "chat", "completions"], Method::POST) => crate::chat::create(app, req).await,
        (["v1", "responses", id], Method::GET) => handlers::get(app, id, &query).await,
        (["v1", "responses", id, "cancel"], Method::POST) => handlers::cancel(app, id).await,
        (["v1", "responses", id, "input_items"], Method::GET) => {
            handlers::input_items(app, id, &query).await
        }
        (["v1", "responses", id, "approvals", request], Method::POST) => {
            handlers::approve(app, id, request, req).await
        }
        (
            ["v1", "responses"]
            | ["v1", "chat", "completions"]
            | ["v1", "responses", _]
            | ["v1", "responses", _, _]
            | ["v1", "responses", _, "approvals", _],
            m,
        ) => Err(ApiError::MethodNotAllowed(format!(
            "{m} is not allowed on {path}"
        ))),
        _ => Err(ApiError::NotFound(format!("no such endpoint: {path}"))),
    }
}

/// The LangGraph SDK sends its key as `x-api-key`: it is taken as the bearer token when no
/// `Authorization` is given (the same secret, compared the same way).
fn admitted(admission: &Admission, headers: &HeaderMap) -> Result<(), Refusal> {
    match headers.get("x-api-key") {
        Some(key) if !headers.contains_key(AUTHORIZATION) => {
            let bearer = HeaderValue::from_bytes(&[b"Bearer ", key.as_bytes()].concat())
                .map_err(|_| Refusal::Token)?;
            let mut headers = headers.clone();
            headers.insert(AUTHORIZATION, bearer);
            admission.check(&headers)
        }
        _ => admission.check(headers),
    }
}
