//! Everything the server sends goes through one [`Outbound`]: responses, notifications and
//! server → client requests are serialized here and handed to the connection's writer task
//! through a bounded queue, so one line is always one whole message.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use rein_protocol::app_server::{RequestId, ServerNotification};
use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::error::{AppServerError, RpcError};

#[derive(Clone)]
pub struct Outbound {
    tx: mpsc::Sender<String>,
    shared: Arc<Shared>,
}

struct Shared {
    next_request_id: AtomicI64,
    /// Notification methods the client opted out of at `initialize`.
    opted_out: OnceLock<HashSet<String>>,
}

impl Outbound {
    /// An outbound queue of `capacity` messages and the receiver its writer drains.
    pub fn new(capacity: usize) -> (Self, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let shared = Arc::new(Shared {
            next_request_id: AtomicI64::new(0),
            opted_out: OnceLock::new(),
        });
        (Self { tx, shared }, rx)
    }

    pub fn set_opted_out(&self, methods: HashSet<String>) {
        let _ = self.shared.opted_out.set(methods);
    }

    pub async fn respond(&self, id: RequestId, outcome: Result<Value, RpcError>) {
        let message = match outcome {
            Ok(result) => json!({ "id": id, "result": result }),
            Err(error) => json!({ "id": id, "error": error.body() }),
        };
        self.send(&message).await;
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

    pub async fn request(&self, id: &RequestId, method: &str, params: Value) {
        let message = json!({ "id": id, "method": method, "params": params });
        self.send(&message).await;
    }

    async fn send(&self, message: &Value) {
        // A closed writer means the client is gone; there is nobody left to tell.
        let _ = self.tx.send(message.to_string()).await;
    }
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
