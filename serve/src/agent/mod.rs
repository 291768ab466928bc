//! LangGraph's Agent Protocol on `rein serve`: assistants, threads and runs, as the
//! `langgraph-sdk` client calls them. A rein thread is the protocol's thread (same id), a
//! run is one of its turns (the run id is the turn id), so a run outlives the server as a
//! response does; everything about a run is folded from its thread's rollout ([`fold`],
//! on the Responses projection), live from the thread's subscription while it runs.
//!
//! Map: [`body`] (request bodies), `threads` (assistants and threads), `run_api` (runs,
//! their streams, join and cancel), `stateless` (runs on a thread made for them, `POST
//! /runs`), `queue` (a second run on a busy thread: `multitask_strategy`, queued runs
//! recorded and recovered after a restart). Admission (token, `Origin`, `Host`) and the approval policy are
//! the server's, shared with `/v1/responses`.

pub mod body;
pub mod fold;
#[cfg(test)]
mod fold_tests;
mod queue;
mod run_api;
mod stateless;
mod threads;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use rein_protocol::{ThreadId, TurnId};
use tokio::sync::Mutex;

use crate::error::ApiError;
use crate::records::RunRecord;
use crate::server::{App, Body};

/// The one assistant: the server's configured agent (model, profile, policies).
pub const ASSISTANT_ID: &str = "rein";

/// How many runs' strategy and modes are remembered; the oldest are forgotten first (run
/// ids are time-ordered).
const REMEMBERED: usize = 65_536;

/// What a run was started with that its rollout does not say: its strategy and stream
/// modes. Kept in memory for the runs this process started, and recorded (when not the
/// default) so that a restarted server still knows them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Remembered {
    pub strategy: body::Multitask,
    pub modes: fold::Modes,
}

impl Remembered {
    fn record(self) -> RunRecord {
        // `values` alone is what no `stream_mode` means: recorded as none.
        let stream_mode = if self.modes == fold::Modes::default().or_values() {
            Vec::new()
        } else {
            self.modes.names()
        };
        RunRecord {
            multitask_strategy: self.strategy,
            stream_mode,
        }
    }

    fn from_record(record: &RunRecord) -> Self {
        // Names this server wrote itself; one it no longer knows leaves the default.
        let names = record.stream_mode.iter().map(String::as_str);
        Self {
            strategy: record.multitask_strategy,
            modes: fold::Modes::parse(names).unwrap_or_default(),
        }
    }
}

/// What the protocol's endpoints keep in memory: the runs waiting behind a busy thread's
/// (`enqueue`), and what [`Remembered`] says. Everything else is in the rollouts.
#[derive(Default)]
pub struct AgentState {
    pending: Mutex<HashMap<TurnId, queue::Pending>>,
    /// One lane per thread: its queued runs start in the order they came.
    lanes: Mutex<HashMap<ThreadId, Arc<Mutex<()>>>>,
    runs: Mutex<BTreeMap<TurnId, Remembered>>,
}

impl AgentState {
    /// Keep what run `turn` was started with in memory only (a record of it exists).
    async fn keep(&self, turn: TurnId, run: Remembered) {
        let mut runs = self.runs.lock().await;
        runs.insert(turn, run);
        while runs.len() > REMEMBERED {
            runs.pop_first();
        }
    }
}

/// Record what run `turn` of `thread` is started with, before it starts (nothing is
/// written for the defaults), and keep it in memory.
async fn remember(
    app: &App,
    thread: ThreadId,
    turn: TurnId,
    run: Remembered,
) -> Result<(), ApiError> {
    let record = run.record();
    if record != RunRecord::default() {
        app.runs.records().put_run(thread, turn, &record).await?;
    }
    app.agent.keep(turn, run).await;
    Ok(())
}

/// What run `turn` of `thread` was started with: from memory, else from its record, else
/// the defaults (`reject`, no stream mode).
async fn remembered(app: &App, thread: ThreadId, turn: TurnId) -> Remembered {
    if let Some(run) = app.agent.runs.lock().await.get(&turn).copied() {
        return run;
    }
    let run = match app.runs.records().run(thread, turn).await {
        Ok(record) => record
            .as_ref()
            .map(Remembered::from_record)
            .unwrap_or_default(),
        Err(e) => {
            tracing::warn!("reading the record of run {turn}: {e}");
            Remembered::default()
        }
    };
    app.agent.keep(turn, run).await;
    run
}

/// After a restart, before the server takes connections: the stateless runs' threads left
/// to delete go, and the queued runs are listed again and run in their order.
pub(crate) async fn recover(app: &Arc<App>) {
    stateless::recover(app).await;
    queue::recover(app).await;
}

/// Whether `path` is one of the protocol's.
pub(crate) fn owns(segments: &[&str]) -> bool {
    matches!(segments.first(), Some(&"threads" | &"assistants" | &"runs"))
}

pub(crate) async fn route(
    app: &Arc<App>,
    segments: &[&str],
    method: Method,
    query: &str,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    use run_api::Mode;
    let path = segments.join("/");
    match (segments, &method) {
        (["assistants", "search"], &Method::POST) => threads::search_assistants(app, req).await,
        (["assistants", id], &Method::GET) => threads::get_assistant(app, id),
        (["runs"], &Method::POST) => stateless::create(app, req, Mode::Background).await,
        (["runs", "stream"], &Method::POST) => stateless::create(app, req, Mode::Stream).await,
        (["runs", "wait"], &Method::POST) => stateless::create(app, req, Mode::Wait).await,
        (["threads"], &Method::POST) => threads::create(app, req).await,
        (["threads", "search"], &Method::POST) => threads::search(app, req).await,
        (["threads", t], &Method::GET) => threads::get(app, thread_id(t)?).await,
        (["threads", t], &Method::DELETE) => threads::delete(app, thread_id(t)?).await,
        (["threads", t, "state"], &Method::GET) => threads::state(app, thread_id(t)?).await,
        (["threads", t, "history"], &Method::POST) => {
            threads::history(app, thread_id(t)?, req).await
        }
        (["threads", t, "runs"], &Method::POST) => {
            run_api::create(app, thread_id(t)?, req, Mode::Background).await
        }
        (["threads", t, "runs"], &Method::GET) => run_api::list(app, thread_id(t)?, query).await,
        (["threads", t, "runs", "stream"], &Method::POST) => {
            run_api::create(app, thread_id(t)?, req, Mode::Stream).await
        }
        (["threads", t, "runs", "wait"], &Method::POST) => {
            run_api::create(app, thread_id(t)?, req, Mode::Wait).await
        }
        (["threads", t, "runs", r], &Method::GET) => {
            run_api::get(app, thread_id(t)?, run_id(r)?).await
        }
        (["threads", t, "runs", r, "cancel"], &Method::POST) => {
            run_api::cancel(app, thread_id(t)?, run_id(r)?, query).await
        }
        (["threads", t, "runs", r, "join"], &Method::GET) => {
            run_api::join(app, thread_id(t)?, run_id(r)?).await
        }
        (["threads", t, "runs", r, "stream"], &Method::GET) => {
            let last = req
                .headers()
                .get("last-event-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            run_api::join_stream(app, thread_id(t)?, run_id(r)?, query, last).await
        }
        (
            ["assistants", _]
            | ["runs"]
            | ["runs", "stream" | "wait"]
            | ["threads"]
            | ["threads", _]
            | ["threads", _, "state" | "runs" | "history"]
            | ["threads", _, "runs", _]
            | ["threads", _, "runs", _, "cancel" | "join" | "stream"],
            m,
        ) => Err(ApiError::MethodNotAllowed(format!(
            "{m} is not allowed on /{path}"
        ))),
        _ => Err(ApiError::NotFound(format!("no such endpoint: /{path}"))),
    }
}

fn thread_id(text: &str) -> Result<ThreadId, ApiError> {
    text.parse()
        .map_err(|_| ApiError::NotFound(format!("no thread {text:?}")))
}

fn run_id(text: &str) -> Result<TurnId, ApiError> {
    text.parse()
        .map_err(|_| ApiError::NotFound(format!("no run {text:?}")))
}

/// An answer without a body.
fn empty(status: StatusCode) -> Response<Body> {
    use http_body_util::BodyExt;
    let body = http_body_util::Empty::new()
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

/// Where a run is (`Content-Location`, which the SDK reads a created run's ids from) and
/// where its stream is resumed (`Location`, which the SDK reconnects to with
/// `Last-Event-ID` when a stream is cut).
fn locate(response: &mut Response<Body>, thread: ThreadId, run: TurnId, stream: bool) {
    let run_path = format!("/threads/{thread}/runs/{run}");
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&run_path) {
        headers.insert(hyper::header::CONTENT_LOCATION, v);
    }
    if stream {
        if let Ok(v) = HeaderValue::from_str(&format!("{run_path}/stream")) {
            headers.insert(hyper::header::LOCATION, v);
        }
    }
}

/// A query string's values for `key`, in order (no percent-decoding: none of ours needs it).
fn query_all<'a>(query: &'a str, key: &str) -> Vec<&'a str> {
    query
        .split('&')
        .filter_map(|p| p.split_once('=').or(Some((p, ""))))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .collect()
}
