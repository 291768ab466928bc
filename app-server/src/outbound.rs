//! Everything the server sends goes through one [`Outbound`]: responses, notifications and
//! server → client requests are serialized here and handed to the connection's writer task
//! through a bounded queue, so one line is always one whole message.
//!
//! What a full queue means is the transport's choice ([`FullQueue`]): the only client of a
//! stdio server slows the server down, while one of many WebSocket clients that stops
//! reading is cut off, so that the threads it shares with others never wait for it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use rein_app_server_protocol::{RequestId, ServerNotification, ServerRequest};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio_util::sync::CancellationToken;

use crate::error::{AppServerError, RpcError};

/// What sending does when the connection's queue is full.
#[derive(Clone, Debug)]
pub enum FullQueue {
    /// Wait for room: nothing is ever dropped.
    Backpressure,
    /// Declare the connection lagging: cancel the token (the transport closes the
    /// connection) and drop this message and every later one, without waiting.
    DisconnectWhenFull(CancellationToken),
}

#[derive(Clone)]
pub struct Outbound {
    tx: mpsc::Sender<String>,
    shared: Arc<Shared>,
}

struct Shared {
    next_request_id: AtomicI64,
    full: FullQueue,
    /// Notification methods the client opted out of at `initialize`.
    opted_out: OnceLock<HashSet<String>>,
}

impl Outbound {
    /// An outbound queue of `capacity` messages that waits when full, and the receiver
    /// its writer drains.
    pub fn new(capacity: usize) -> (Self, mpsc::Receiver<String>) {
        Self::with_policy(capacity, FullQueue::Backpressure)
    }

    pub fn with_policy(capacity: usize, full: FullQueue) -> (Self, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let shared = Arc::new(Shared {
            next_request_id: AtomicI64::new(0),
            full,
            opted_out: OnceLock::new(),
        });
        (Self { tx, shared }, rx)
    }

    pub fn set_opted_out(&self, methods: HashSet<String>) {
        let _ = self.shared.opted_out.set(methods);
    }

    /// Answer request `id` with a method's result, already JSON (as jsonrpsee serialized
    /// it from the handler's typed response), or an error.
    pub async fn respond(&self, id: RequestId, outcome: Result<Box<RawValue>, RpcError>) {
        let message = match outcome {
            Ok(result) => serde_json::to_string(&Answer {
                id: &id,
                result: &result,
            }),
            Err(error) => serde_json::to_string(&json!({ "id": id, "error": error.body() })),
        };
        match message {
            Ok(line) => self.send_line(line).await,
            Err(e) => tracing::error!("cannot serialize the answer to {id}: {e}"),
        }
    }

    /// An error to a message whose id could not be read answers with `"id": null`.
    pub async fn reject(&self, id: Option<RequestId>, error: RpcError) {
        let message = json!({ "id": id, "error": error.body() });
        self.send(&message).await;
    }

    pub async fn notify(&self, notification: ServerNotification) {
        if self
            .shared
            .opted_out
            .get()
            .is_some_and(|o| o.contains(notification.method()))
        {
            return;
        }
        let mut message = match serde_json::to_value(&notification) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("cannot serialize {}: {e}", notification.method());
                return;
            }
        };
        if let Value::Object(map) = &mut message {
            map.insert("emittedAtMs".into(), json!(now_ms()));
        }
        self.send(&message).await;
    }

    /// A fresh id for a server → client request. Allocated before sending, so the
    /// pending-request table knows the id before the client can answer it.
    pub fn next_request_id(&self) -> RequestId {
        RequestId::Integer(self.shared.next_request_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Ask the client `request` under `id` (`{"id", "method", "params"}`).
    pub async fn request(&self, id: &RequestId, request: &ServerRequest) {
        let message = Asking { id, request };
        match serde_json::to_string(&message) {
            Ok(line) => self.send_line(line).await,
            Err(e) => tracing::error!("cannot serialize {}: {e}", request.method()),
        }
    }

    /// Resolves once the connection has been declared lagging; never under backpressure.
    pub async fn lagged(&self) {
        match &self.shared.full {
            FullQueue::Backpressure => std::future::pending().await,
            FullQueue::DisconnectWhenFull(lagging) => lagging.cancelled().await,
        }
    }

    async fn send(&self, message: &Value) {
        self.send_line(message.to_string()).await;
    }

    async fn send_line(&self, line: String) {
        // A closed writer means the client is gone; there is nobody left to tell.
        match &self.shared.full {
            FullQueue::Backpressure => {
                let _ = self.tx.send(line).await;
            }
            FullQueue::DisconnectWhenFull(lagging) => {
                // Past the first gap the client's view is broken anyway: it must
                // reconnect and resume, so nothing more is queued for it.
                if lagging.is_cancelled() {
                    return;
                }
                if let Err(TrySendError::Full(_)) = self.tx.try_send(line) {
                    lagging.cancel();
                }
            }
        }
    }
}

/// A successful answer on the wire (no `jsonrpc`, as Codex).
#[derive(Serialize)]
struct Answer<'a> {
    id: &'a RequestId,
    result: &'a RawValue,
}

/// A server → client request on the wire.
#[derive(Serialize)]
struct Asking<'a> {
    id: &'a RequestId,
    #[serde(flatten)]
    request: &'a ServerRequest,
}

/// Drain the queue into `out`, one message per line, until every sender is dropped.
pub async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<String>,
    mut out: W,
) -> Result<(), AppServerError> {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        out.write_all(line.as_bytes())
            .await
            .map_err(AppServerError::Write)?;
        // Flush only when nothing else is queued, so bursts of deltas go out in one write.
        if rx.is_empty() {
            out.flush().await.map_err(AppServerError::Write)?;
        }
    }
    out.flush().await.map_err(AppServerError::Write)
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub fn now_secs() -> i64 {
    now_ms() / 1000
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn note(n: i64) -> Value {
        json!({ "method": "n", "params": n })
    }

    #[tokio::test]
    async fn a_full_queue_cuts_a_lagging_connection_off_at_once() {
        let lagging = CancellationToken::new();
        let (out, mut rx) =
            Outbound::with_policy(1, FullQueue::DisconnectWhenFull(lagging.clone()));
        out.send(&note(1)).await;
        assert!(!lagging.is_cancelled(), "room for one");
        assert!(out.lagged().now_or_never().is_none());
        out.send(&note(2))
            .now_or_never()
            .expect("a send to a full queue returns at once");
        assert!(lagging.is_cancelled());
        out.lagged()
            .now_or_never()
            .expect("the lag is visible to the connection");
        // Once lagging, nothing more is queued, even with room.
        assert_eq!(rx.recv().await.unwrap(), note(1).to_string());
        out.send(&note(3)).now_or_never().unwrap();
        assert!(rx.try_recv().is_err(), "nothing after the gap");
    }

    #[tokio::test]
    async fn a_full_queue_under_backpressure_waits_for_room() {
        let (out, mut rx) = Outbound::new(1);
        out.send(&note(1)).await;
        let second = note(2);
        let mut waiting = Box::pin(out.send(&second));
        assert!((&mut waiting).now_or_never().is_none(), "the send waits");
        assert!(out.lagged().now_or_never().is_none(), "and never lags");
        assert_eq!(rx.recv().await.unwrap(), note(1).to_string());
        waiting.await;
        assert_eq!(rx.recv().await.unwrap(), note(2).to_string());
    }
}
