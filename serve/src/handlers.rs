//! The endpoints. Everything about a response that is not live comes from its thread's
//! rollout: a thread loaded here whose turn is open in the rollout is running (or just
//! ending, and its live subscription says how); an open turn of a thread not loaded here
//! was cut off by a dead process, and is reported `incomplete`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response};
use rein_core::store::RolloutError;
use rein_core::EventStream;
use rein_protocol::{Event, EventMsg};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::ids::ResponseId;
use crate::project::{Cursor, Projector};
use crate::request;
use crate::runs::Started;
use crate::server::{App, Body};
use crate::stream::{self, Sink};

pub fn error_response(error: &ApiError) -> Response<Body> {
    let mut response = json_response(&error.body());
    *response.status_mut() = error.status();
    response
}

pub(crate) fn json_response(value: &Value) -> Response<Body> {
    let body = Full::new(Bytes::from(value.to_string()))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `POST /v1/responses`.
pub async fn create(app: &App, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let body = read_body(req, app.options.max_body_bytes, app.options.read_timeout).await?;
    let parsed = request::parse(&body)?;
    let parts = request::input_parts(&parsed.input)?;
    let started = app.runs.start(&parsed, parts).await?;
    if parsed.stream {
        let (response, sink) = stream::channel();
        let Started {
            id,
            previous,
            events,
        } = started;
        let record = parsed.record.clone();
        tokio::spawn(async move {
            let projector = Projector::new(id, previous).with_record(record);
            follow(projector, events, &sink, Cursor::new(None)).await;
        });
        return Ok(response);
    }
    if parsed.background {
        let (projector, _) = stored(app, started.id).await?;
        return Ok(json_response(&projector.response()));
    }
    let Started {
        id,
        previous,
        mut events,
    } = started;
    let mut projector = Projector::new(id, previous).with_record(parsed.record);
    while let Some(event) = events.recv().await {
        projector.push(&event);
        if projector.status().is_final() {
            break;
        }
    }
    if !projector.status().is_final() {
        projector.interrupted();
    }
    Ok(json_response(&projector.response()))
}

/// Feed the turn's live events to `sink` until the turn ends (or the client goes away),
/// from where `cursor` says.
async fn follow(
    mut projector: Projector,
    mut events: EventStream,
    sink: &Sink,
    mut cursor: Cursor,
) {
    while let Some(event) = events.recv().await {
        let out = cursor.step(&mut projector, &event);
        if !sink.send_all(&out).await {
            return;
        }
        if projector.status().is_final() {
            return;
        }
    }
    if let Some(last) = projector.interrupted() {
        sink.send(&last).await;
    }
}

/// `GET /v1/responses/{id}`, and with `stream=true` its events from the rollout.
pub async fn get(app: &App, id: &str, query: &str) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let params = Query::parse(query);
    if params.flag("stream")? {
        let after = params.number("starting_after")?;
        return replay(app, id, after).await;
    }
    let loaded = app.runs.loaded(id.thread).await.is_some();
    let (mut projector, _) = stored(app, id).await?;
    if !loaded {
        projector.interrupted();
    }
    Ok(json_response(&projector.response()))
}

/// The stored events of `id`'s turn, then (while it runs here) the live ones.
async fn replay(app: &App, id: ResponseId, after: Option<u64>) -> Result<Response<Body>, ApiError> {
    // Subscribed before the rollout is read: every event is in one or the other.
    let live = app
        .runs
        .loaded(id.thread)
        .await
        .map(|l| l.handle.subscribe());
    let (projector, events) = stored(app, id).await?;
    let (response, sink) = stream::channel();
    tokio::spawn(async move {
        let mut again =
            Projector::new(id, projector.previous()).with_record(projector.record().clone());
        let mut cursor = Cursor::new(after);
        let mut out = Vec::new();
        for event in &events {
            out.extend(cursor.step(&mut again, event));
        }
        if !sink.send_all(&out).await || again.status().is_final() {
            return;
        }
        match live {
            Some(live) => follow(again, live, &sink, cursor).await,
            None => {
                if let Some(last) = again.interrupted() {
                    sink.send(&last).await;
                }
            }
        }
    });
    Ok(response)
}

/// `POST /v1/responses/{id}/cancel`: interrupts the turn if it runs; answers the object.
pub async fn cancel(app: &App, id: &str) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    stored(app, id).await?;
    app.runs.cancel(id).await?;
    let loaded = app.runs.loaded(id.thread).await.is_some();
    let (mut projector, _) = stored(app, id).await?;
    if !loaded {
        projector.interrupted();
    }
    Ok(json_response(&projector.response()))
}

/// `GET /v1/responses/{id}/input_items` (`order=asc|desc`, newest first by default).
pub async fn input_items(app: &App, id: &str, query: &str) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let params = Query::parse(query);
    let (projector, _) = stored(app, id).await?;
    let mut data = projector.input_items().to_vec();
    match params.get("order") {
        None | Some("desc") => data.reverse(),
        Some("asc") => {}
        Some(other) => {
            return Err(ApiError::bad(
                format!("order must be asc or desc, not {other:?}"),
                Some("order"),
            ))
        }
    }
    let first = data.first().map(|i| i["id"].clone());
    let last = data.last().map(|i| i["id"].clone());
    Ok(json_response(&json!({
        "object": "list", "data": data, "first_id": first, "last_id": last, "has_more": false,
    })))
}

/// `POST /v1/responses/{id}/approvals/{request_id}` with `{"decision": ...}`: answers an
/// approval the turn waits for (`--approvals http`); answers the response object.
pub async fn approve(
    app: &App,
    id: &str,
    request_id: &str,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let body = read_body(req, app.options.max_body_bytes, app.options.read_timeout).await?;
    let answer: request::ApprovalAnswer = request::parse_json(&body)?;
    app.runs.approve(id, request_id, answer.decision).await?;
    let (projector, _) = stored(app, id).await?;
    Ok(json_response(&projector.response()))
}

fn parse_id(id: &str) -> Result<ResponseId, ApiError> {
    id.parse()
        .map_err(|e: crate::ids::NotAnId| ApiError::NotFound(e.to_string()))
}

/// `id`'s turn folded from the rollout, and the turn's stored events.
async fn stored(app: &App, id: ResponseId) -> Result<(Projector, Vec<Event>), ApiError> {
    let not_found = || ApiError::NotFound(format!("no response {id}"));
    let loaded = app
        .runs
        .kernel()
        .store()
        .read(id.thread)
        .await
        .map_err(|e| match e {
            RolloutError::ThreadNotFound(_) => not_found(),
            other => ApiError::Internal(other.to_string()),
        })?;
    let previous = previous_turn(&loaded.events, id);
    let events: Vec<Event> = loaded
        .events
        .into_iter()
        .filter(|e| e.turn_id == Some(id.turn))
        .collect();
    let mut projector = Projector::new(id, previous);
    for event in &events {
        projector.push(event);
    }
    if !projector.started() {
        return Err(not_found());
    }
    let record = app.runs.records().response(id).await?;
    let projector = projector.with_record(record.unwrap_or_default());
    Ok((projector, events))
}

/// The response before `id` on its thread: the turn started before it.
fn previous_turn(events: &[Event], id: ResponseId) -> Option<ResponseId> {
    let mut previous = None;
    for event in events {
        if let (EventMsg::TurnStarted { .. }, Some(turn)) = (&event.msg, event.turn_id) {
            if turn == id.turn {
                return previous;
            }
            previous = Some(ResponseId {
                thread: id.thread,
                turn,
            });
        }
    }
    None
}

pub(crate) async fn read_body(
    req: Request<Incoming>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::TooLarge { limit });
    }
    let collected = tokio::time::timeout(timeout, Limited::new(req.into_body(), limit).collect())
        .await
        .map_err(|_| ApiError::bad("the request body took too long to arrive", None))?;
    match collected {
        Ok(body) => Ok(body.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::TooLarge { limit }),
        Err(e) => Err(ApiError::bad(format!("reading the body: {e}"), None)),
    }
}

/// A query string's parameters (no percent-decoding: none of ours needs it).
struct Query<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Query<'a> {
    fn parse(query: &'a str) -> Self {
        Self(
            query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').unwrap_or((p, "")))
                .collect(),
        )
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn flag(&self, key: &str) -> Result<bool, ApiError> {
        match self.get(key) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(other) => Err(ApiError::bad(
                format!("{key} must be true or false, not {other:?}"),
                Some(key),
            )),
        }
    }

    fn number(&self, key: &str) -> Result<Option<u64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse().map_err(|_| {
                    ApiError::bad(format!("{key} must be a number, not {v:?}"), Some(key))
                })
            })
            .transpose()
    }
}
