//! Server-sent events: `event: <type>` and `data: <json>` per `response.*` event, fed by a
//! task through a small bounded channel. A client that stops reading stalls only its own
//! task (the thread's subscription coalesces behind it, never holding the thread back); a
//! client that goes away ends the task, never the run.

use std::convert::Infallible;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::Response;
use tokio::sync::mpsc;

use crate::project::StreamEvent;
use crate::server::Body;

/// Where a stream task writes its events; `false` once the client is gone.
pub struct Sink(mpsc::Sender<Bytes>);

impl Sink {
    pub async fn send(&self, event: &StreamEvent) -> bool {
        let line = format!("event: {}\ndata: {}\n\n", event.kind(), event.data);
        self.0.send(Bytes::from(line)).await.is_ok()
    }

    /// Send an event already written out (`id:`, `event:`, `data:` lines and the blank
    /// line), as the Agent Protocol's streams do.
    pub async fn send_text(&self, text: String) -> bool {
        self.0.send(Bytes::from(text)).await.is_ok()
    }

    /// Resolves once the client has gone (its response body was dropped).
    pub async fn closed(&self) {
        self.0.closed().await;
    }

    pub async fn send_all(&self, events: &[StreamEvent]) -> bool {
        for event in events {
            if !self.send(event).await {
                return false;
            }
        }
        true
    }
}

/// A `text/event-stream` response, and the sink that feeds it.
pub fn channel() -> (Response<Body>, Sink) {
    let (tx, rx) = mpsc::channel::<Bytes>(32);
    let frames = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|bytes| (bytes, rx))
    })
    .map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
    let body = BodyExt::boxed_unsync(StreamBody::new(frames));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    (response, Sink(tx))
}
