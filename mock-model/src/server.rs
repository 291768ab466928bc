//! The HTTP server: accepts connections, records and logs each request, routes it to a
//! wire format, and plays the next scripted reply as a streamed body — including the
//! scripted faults. Each reply is produced by its own task that feeds the body through a
//! channel, so a client that goes away is noticed as the channel closing.

use std::convert::Infallible;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

use crate::chat::ChatWire;
use crate::play::{delivery, Delivery, Player, Said};
use crate::responses::ResponsesWire;
use crate::wire::{self, Wire};
use crate::RecordedRequest;

type Body = BoxBody<Bytes, std::io::Error>;
type Chunk = Result<Frame<Bytes>, std::io::Error>;

/// State shared by the server handle and every connection.
pub(crate) struct Shared {
    pub(crate) player: Player,
    pub(crate) log: Option<Mutex<std::fs::File>>,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    pub(crate) abandoned: AtomicUsize,
    pub(crate) connections: AtomicUsize,
    pub(crate) changed: Notify,
}

impl Shared {
    fn record(&self, request: RecordedRequest) {
        if let Some(log) = &self.log {
            let line =
                json!({"method": request.method, "path": request.path, "body": request.body});
            let mut file = log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A failed log write must not fail the request the client is waiting for.
            if let Err(e) = writeln!(file, "{line}") {
                tracing::warn!(error = %e, "could not write the request log");
            }
        }
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request);
        self.changed.notify_waiters();
    }

    fn stream_abandoned(&self) {
        self.abandoned.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Responses,
    Chat,
    Models,
    NotFound,
}

fn route(method: &Method, path: &str) -> Route {
    let path = path.strip_prefix("/v1").unwrap_or(path);
    match (method, path) {
        (&Method::POST, "/responses") => Route::Responses,
        (&Method::POST, "/chat/completions") => Route::Chat,
        (&Method::GET, "/models") => Route::Models,
        _ => Route::NotFound,
    }
}

pub(crate) async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into(),
            )
        })
        .collect();
    let raw = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                &wire::error_body(
                    &format!("could not read the body: {e}"),
                    "invalid_request_error",
                    None,
                ),
            ))
        }
    };
    let body: Value = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into()))
    };
    let route = route(&method, &path);
    shared.record(RecordedRequest {
        method: method.to_string(),
        path,
        headers,
        body: body.clone(),
    });
    let response = match route {
        Route::Models => json_response(
            StatusCode::OK,
            &json!({"object": "list", "data": [
                {"id": "mock-model", "object": "model", "created": 0, "owned_by": "rein"}
            ]}),
        ),
        Route::NotFound => json_response(
            StatusCode::NOT_FOUND,
            &wire::error_body("no such endpoint", "invalid_request_error", None),
        ),
        Route::Responses | Route::Chat if !body.is_object() => json_response(
            StatusCode::BAD_REQUEST,
            &wire::error_body(
                "the body must be a JSON object",
                "invalid_request_error",
                None,
            ),
        ),
        Route::Responses | Route::Chat => reply(&shared, route, &body, raw.len()),
    };
    Ok(response)
}

fn reply(shared: &Arc<Shared>, route: Route, body: &Value, request_bytes: usize) -> Response<Body> {
    let (index, scripted) = shared.player.reply_for(
        wire::last_user_text(body),
        wire::ends_with_tool_output(body),
    );
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model");
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match delivery(&scripted, index, request_bytes) {
        Delivery::HttpError { status, message } => json_response(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &wire::status_error_body(status, &message),
        ),
        Delivery::RateLimited { retry_after_ms } => {
            let mut response = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &wire::rate_limit_body(retry_after_ms),
            );
            let headers = response.headers_mut();
            headers.insert(
                RETRY_AFTER,
                HeaderValue::from(retry_after_ms.div_ceil(1000)),
            );
            headers.insert("retry-after-ms", HeaderValue::from(retry_after_ms));
            response
        }
        Delivery::ContextWindowExceeded if route == Route::Responses => sse_response(
            Full::new(Bytes::from(
                ResponsesWire::new(index, model, created).context_window_failure(),
            ))
            .map_err(|never| match never {})
            .boxed(),
        ),
        Delivery::ContextWindowExceeded => {
            json_response(StatusCode::BAD_REQUEST, &wire::chat_context_window_body())
        }
        Delivery::Stream {
            said,
            delay_ms,
            cut_after,
            hang_after,
        } => {
            let wire: Box<dyn Wire> = match route {
                Route::Chat => Box::new(ChatWire::new(index, model, created)),
                _ => Box::new(
                    ResponsesWire::new(index, model, created)
                        .with_encrypted_reasoning(wire::includes_encrypted_reasoning(body)),
                ),
            };
            let (tx, rx) = mpsc::channel::<Chunk>(32);
            let plan = Plan {
                said,
                delay: Duration::from_millis(delay_ms),
                cut_after,
                hang_after,
            };
            tokio::spawn(produce(Arc::clone(shared), wire, plan, tx));
            let chunks = futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|chunk| (chunk, rx))
            });
            sse_response(StreamBody::new(chunks).boxed())
        }
    }
}

struct Plan {
    said: Vec<Said>,
    delay: Duration,
    cut_after: Option<usize>,
    hang_after: Option<usize>,
}

/// Streams one reply into `tx`. The receiver is the response body; it is dropped when the
/// client disconnects, which is how a dropped client stream is observed here.
async fn produce(
    shared: Arc<Shared>,
    mut wire: Box<dyn Wire>,
    plan: Plan,
    tx: mpsc::Sender<Chunk>,
) {
    let data = |bytes: Vec<u8>| Ok(Frame::data(Bytes::from(bytes)));
    if tx.send(data(wire.prelude())).await.is_err() {
        shared.stream_abandoned();
        return;
    }
    for (n, said) in plan.said.iter().enumerate() {
        if plan.cut_after == Some(n) {
            // End the body here. Failing the body instead would make hyper drop the
            // connection before flushing what was already queued, so the client would
            // not reliably see the first `n` events.
            return;
        }
        if plan.hang_after == Some(n) {
            tx.closed().await;
            shared.stream_abandoned();
            return;
        }
        if !plan.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(plan.delay) => {}
                () = tx.closed() => {
                    shared.stream_abandoned();
                    return;
                }
            }
        }
        if tx.send(data(wire.render(said))).await.is_err() {
            shared.stream_abandoned();
            return;
        }
    }
}

fn sse_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let body = Full::new(Bytes::from(value.to_string()))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
