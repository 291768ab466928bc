//! The streaming driver both wire APIs share: send one request, check its status, read
//! the body as SSE with an idle timeout, and let a [`WireDecoder`] turn events into
//! [`ModelEvent`]s.
//!
//! The stream is driven by whoever polls it — no background task — so dropping it drops
//! the response body at once and the connection is closed, whatever the server is doing.

use std::collections::VecDeque;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};

use super::errors::{error_for_response, malformed};
use super::sse::{SseEvent, SseParser};
use rein_core::model::{ModelError, ModelEvent, ModelStream};

/// Turns one wire format's events into model events.
pub trait WireDecoder: Send + 'static {
    /// Handle one event, pushing what it yields. An error ends the stream.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError>;

    /// The body ended. Push `Completed` if the reply was complete, or say why it was not.
    fn on_end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;
}

type Body = BoxStream<'static, Result<bytes::Bytes, reqwest::Error>>;

enum State<D> {
    Start {
        request: reqwest::RequestBuilder,
        decoder: D,
    },
    Reading(Reading<D>),
    Draining(Leftover),
    Done,
}

struct Reading<D> {
    body: Body,
    parser: SseParser,
    decoder: D,
    pending: VecDeque<ModelEvent>,
    failure: Option<ModelError>,
    ended: bool,
}

/// Stream the reply to `request`, decoded by `decoder`.
pub fn sse_stream<D: WireDecoder>(
    request: reqwest::RequestBuilder,
    decoder: D,
    idle_timeout: Duration,
) -> ModelStream {
    stream::unfold(State::Start { request, decoder }, move |state| async move {
        match state {
            State::Start { request, decoder } => match start(request, idle_timeout).await {
                Ok(body) => {
                    let reading = Reading {
                        body,
                        parser: SseParser::new(),
                        decoder,
                        pending: VecDeque::new(),
                        failure: None,
                        ended: false,
                    };
                    next(reading, idle_timeout).await
                }
                Err(e) => Some((Err(e), State::Done)),
            },
            State::Reading(reading) => next(reading, idle_timeout).await,
            State::Draining(mut leftover) => {
                if let Some(body) = leftover.0.take() {
                    drain(body).await;
                }
                None
            }
            State::Done => None,
        }
    })
    .boxed()
}

async fn start(
    request: reqwest::RequestBuilder,
    idle_timeout: Duration,
) -> Result<Body, ModelError> {
    let response = match tokio::time::timeout(idle_timeout, request.send()).await {
        Err(_) => return Err(ModelError::IdleTimeout(idle_timeout)),
        // A request reqwest could not even build (a bad header) will never succeed.
        Ok(Err(e)) if e.is_builder() => {
            return Err(ModelError::BadRequest {
                status: 0,
                message: describe(e),
            })
        }
        Ok(Err(e)) => return Err(ModelError::Connect(describe(e))),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        let body = match tokio::time::timeout(idle_timeout, response.text()).await {
            Ok(Ok(text)) => text,
            // The status alone still classifies the failure.
            Ok(Err(_)) | Err(_) => String::new(),
        };
        return Err(error_for_response(status.as_u16(), &headers, &body));
    }
    Ok(response.bytes_stream().boxed())
}

async fn next<D: WireDecoder>(
    mut r: Reading<D>,
    idle_timeout: Duration,
) -> Option<(Result<ModelEvent, ModelError>, State<D>)> {
    loop {
        if let Some(event) = r.pending.pop_front() {
            if matches!(event, ModelEvent::Completed { .. }) {
                let next = if r.ended {
                    State::Done
                } else {
                    State::Draining(Leftover(Some(r.body)))
                };
                return Some((Ok(event), next));
            }
            return Some((Ok(event), State::Reading(r)));
        }
        if let Some(e) = r.failure.take() {
            return Some((Err(e), State::Done));
        }
        if r.ended {
            return None;
        }
        match tokio::time::timeout(idle_timeout, r.body.next()).await {
            Err(_) => return Some((Err(ModelError::IdleTimeout(idle_timeout)), State::Done)),
            Ok(None) => {
                r.ended = true;
                r.parser.finish();
                if let Err(e) = r.decoder.on_end(&mut r.pending) {
                    r.failure = Some(e);
                }
            }
            Ok(Some(Err(e))) => {
                tracing::debug!(error = %describe(e), "model stream broke");
                return Some((Err(ModelError::StreamCut), State::Done));
            }
            Ok(Some(Ok(chunk))) => feed(&mut r, chunk.as_ref()),
        }
    }
}

/// After `Completed` the server only has the end of the body left to send. Reading it
/// returns the connection to the pool — a new TLS handshake per request would cost more
/// than parsing the whole stream — without holding back the `Completed` event: the stream
/// reads it when polled once more, or in the background if it is dropped first. A server
/// that keeps talking past the grace period is cut off.
struct Leftover(Option<Body>);

const DRAIN_GRACE: Duration = Duration::from_secs(2);

async fn drain(mut body: Body) {
    let rest = async { while let Some(Ok(_)) = body.next().await {} };
    let _ = tokio::time::timeout(DRAIN_GRACE, rest).await;
}

impl Drop for Leftover {
    fn drop(&mut self) {
        if let Some(body) = self.0.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(drain(body));
            }
        }
    }
}

fn feed<D: WireDecoder>(r: &mut Reading<D>, chunk: &[u8]) {
    let Reading {
        parser,
        decoder,
        pending,
        failure,
        ..
    } = r;
    let fed = parser.feed(chunk, &mut |event| {
        if failure.is_none() {
            if let Err(e) = decoder.on_event(&event, pending) {
                *failure = Some(e);
            }
        }
    });
    if let Err(too_large) = fed {
        failure.get_or_insert(malformed(too_large));
    }
    if failure.is_some() {
        // Events after a failure are not part of a reply the kernel can use.
        r.ended = true;
    }
}

/// A transport error's message with its causes, e.g. "error sending request: connection
/// refused". The URL is left out: a query parameter may carry a secret.
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
