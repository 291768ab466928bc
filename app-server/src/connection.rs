//! One client connection over any byte stream: a reader task frames lines into a bounded
//! inbound queue, one loop handles them in order, and a writer task drains the outbound
//! queue. The inbound queue is bounded in messages and in bytes. On stdio a full queue
//! stops the reader (the client's writes wait, and every request gets a real answer);
//! on WebSocket, where one client must not hold a shared server, a full queue answers
//! requests with -32001 "overloaded" at once. No input ends the connection except the end
//! of input itself.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::dispatch::ServerState;
use crate::error::{AppServerError, RpcError};
use crate::handlers::meta::initialize_response;
use crate::handlers::thread::leave;
use crate::kernel_source::KernelSource;
use crate::lines::{Line, LineReader};
use crate::message::{self, Inbound};
use crate::methods;
use crate::outbound::{write_lines, Outbound};
use crate::subscribers::Hub;
use rein_app_server_protocol::InitializeParams;

/// Limits of one connection.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Longer lines are answered with an error and skipped.
    pub max_line_bytes: usize,
    /// Messages read but not yet handled.
    pub inbound_queue: usize,
    /// Bytes of the messages read but not yet handled.
    pub inbound_bytes: usize,
    /// Messages produced but not yet written.
    pub outbound_queue: usize,
    /// Server-wide: how long a thread nobody subscribes to stays loaded once idle.
    pub idle_unload: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: 16 * 1024 * 1024,
            inbound_queue: 256,
            inbound_bytes: 64 * 1024 * 1024,
            outbound_queue: 4096,
            idle_unload: Duration::from_secs(30),
        }
    }
}

/// Serve one client until its input ends; then shut every thread down.
pub async fn serve<R, W>(
    kernel: KernelSource,
    reader: R,
    writer: W,
    limits: ConnectionLimits,
) -> Result<(), AppServerError>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, out_rx) = Outbound::new(limits.outbound_queue);
    let writer = tokio::spawn(write_lines(out_rx, writer));
    let (in_tx, in_rx) = InboundQueue::new(&limits, WhenFull::Wait);
    let reader_out = out.clone();
    let max_line = limits.max_line_bytes;
    let reader = tokio::spawn(async move {
        let mut lines = LineReader::new(reader, max_line);
        loop {
            match lines.next().await {
                Ok(Some(Line::Message(bytes))) => {
                    if !in_tx.enqueue(&reader_out, bytes).await {
                        break;
                    }
                }
                Ok(Some(Line::TooLong { bytes })) => {
                    let error = RpcError::invalid_request(format!(
                        "Invalid request: message of {bytes} bytes exceeds the limit of {max_line} bytes"
                    ));
                    reader_out.reject(None, error).await;
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("reading from the client: {e}");
                    return Err(AppServerError::Read(e));
                }
            }
        }
        Ok(())
    });

    let hub = Arc::new(Hub::new(limits.idle_unload));
    let source = kernel.clone();
    run(kernel, Arc::clone(&hub), in_rx, out).await;
    // The only connection is gone, and the process with it: shut every thread down.
    for thread in hub.threads.all() {
        let _ = thread.handle.shutdown().await;
    }
    // Let the store finish what it was given (the listing's updates are written behind).
    if let Ok(kernel) = source.get().await {
        kernel.store().flush().await;
    }
    let read = reader.await.unwrap_or(Ok(()));
    let written = writer.await.unwrap_or(Ok(()));
    read.and(written)
}

/// The handling loop of one connection, whatever its transport: messages in order from
/// `inbound`, requests answered through the connection's method module, answers and
/// notifications out through `out`, over the threads of `hub`. When the input ends or
/// `out` lags, the connection leaves every thread it subscribed to (the last to leave
/// starts its idle-unload countdown).
pub async fn run(
    kernel: KernelSource,
    hub: Arc<Hub>,
    mut inbound: mpsc::Receiver<Queued>,
    out: Outbound,
) {
    // Clients open with `initialize`: answer it while the kernel is still being built.
    let first = inbound.recv().await;
    let early = match &first {
        Some(queued) => initialize_early(&queued.bytes, kernel.home(), &out).await,
        None => return,
    };
    let answered_early = early.is_some();
    let mut pending_first = first.filter(|_| !answered_early);
    let kernel = match kernel.get().await {
        Ok(kernel) => kernel,
        Err(why) => return refuse_all(&why, pending_first, inbound, &out).await,
    };
    // MCP servers' status changes reach every connection while it is open (subscribed
    // here, not in the task, so a server started by the first request is not missed).
    let mcp_status = kernel.mcp.as_ref().map(|mcp| {
        tokio::spawn(crate::handlers::mcp::forward_status(
            mcp.subscribe(),
            out.clone(),
        ))
    });
    let state = Arc::new(ServerState::new(kernel, hub, out.clone()));
    if let Some(experimental) = early {
        state.set_experimental(experimental);
        state.mark_initialized();
    }
    let module = match methods::module(Arc::clone(&state)) {
        Ok(module) => module,
        Err(e) => {
            let why = format!("registering its methods failed: {e}");
            return refuse_all(&why, pending_first, inbound, &out).await;
        }
    };
    loop {
        // Its bytes leave the queue's budget once it is handled.
        let queued = match pending_first.take() {
            Some(queued) => queued,
            // A lagging connection is cut off: what it sent meanwhile is not acted on.
            None => match tokio::select! {
                biased;
                () = out.lagged() => None,
                next = inbound.recv() => next,
            } {
                Some(queued) => queued,
                None => break,
            },
        };
        match message::parse(&queued.bytes) {
            Ok(Inbound::Request { id, method, params }) => {
                state.handle_request(&module, id, &method, params).await;
            }
            Ok(Inbound::Notification { method }) => {
                tracing::debug!("client notification {method}");
            }
            Ok(Inbound::Response { id, outcome }) => state.handle_response(id, outcome).await,
            Err(rejected) => state.out.reject(rejected.id, rejected.error).await,
        }
    }
    if let Some(task) = mcp_status {
        task.abort();
    }
    for thread in state.threads.all() {
        leave(&state, &thread, false);
    }
}

/// Answer `bytes` if it is a well-formed `initialize` request, saying whether it opted
/// into the experimental API; `None` otherwise (it is then handled normally once the
/// kernel is ready).
async fn initialize_early(bytes: &[u8], home: &Path, out: &Outbound) -> Option<bool> {
    let Ok(Inbound::Request { id, method, params }) = message::parse(bytes) else {
        return None;
    };
    if method != "initialize" {
        return None;
    }
    // Bad params are answered by the method itself, with the field named.
    if !params.is_object() {
        return None;
    }
    let params: InitializeParams = serde_json::from_value(params).ok()?;
    let experimental = params
        .capabilities
        .as_ref()
        .is_some_and(|c| c.experimental_api);
    let answer = serde_json::value::to_raw_value(&initialize_response(home, out, params)).ok()?;
    out.respond(id, Ok(answer)).await;
    Some(experimental)
}

/// The kernel could not be built: every request is answered with why, until the input ends.
async fn refuse_all(
    why: &str,
    first: Option<Queued>,
    mut inbound: mpsc::Receiver<Queued>,
    out: &Outbound,
) {
    tracing::error!("rein could not start: {why}");
    let mut next = first;
    loop {
        let queued = match next.take() {
            Some(q) => q,
            None => match inbound.recv().await {
                Some(q) => q,
                None => return,
            },
        };
        if let Ok(Inbound::Request { id, .. }) = message::parse(&queued.bytes) {
            out.respond(
                id,
                Err(RpcError::internal(format!("rein could not start: {why}"))),
            )
            .await;
        }
    }
}

/// One message waiting to be handled, holding its share of the queue's byte budget.
pub struct Queued {
    pub bytes: Vec<u8>,
    _budget: Option<OwnedSemaphorePermit>,
}

/// What the reader does with a message that finds the inbound queue full (in messages or
/// in bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenFull {
    /// Wait for room: the reader stops reading (stdio, the server's only client).
    Wait,
    /// Answer a request -32001 "overloaded" at once (WebSocket); answers to our own
    /// requests still wait (dropping one would strand a parked tool).
    Refuse,
}

/// The sending side of a connection's inbound queue.
pub struct InboundQueue {
    tx: mpsc::Sender<Queued>,
    bytes: Arc<Semaphore>,
    max_bytes: usize,
    when_full: WhenFull,
}

impl InboundQueue {
    pub fn new(limits: &ConnectionLimits, when_full: WhenFull) -> (Self, mpsc::Receiver<Queued>) {
        let (tx, rx) = mpsc::channel(limits.inbound_queue.max(1));
        let max_bytes = limits.inbound_bytes.clamp(1, Semaphore::MAX_PERMITS);
        let queue = Self {
            tx,
            bytes: Arc::new(Semaphore::new(max_bytes)),
            max_bytes,
            when_full,
        };
        (queue, rx)
    }

    /// Queue one line; returns false once the handling loop is gone.
    pub async fn enqueue(&self, out: &Outbound, bytes: Vec<u8>) -> bool {
        // A message larger than the whole budget takes all of it (the line limit caps it).
        let cost = u32::try_from(bytes.len().clamp(1, self.max_bytes)).unwrap_or(u32::MAX);
        let refuse = self.when_full == WhenFull::Refuse;
        let budget = match Arc::clone(&self.bytes).try_acquire_many_owned(cost) {
            Ok(permit) => permit,
            Err(_) if refuse && self.refused(out, &bytes).await => return true,
            Err(_) => match Arc::clone(&self.bytes).acquire_many_owned(cost).await {
                Ok(permit) => permit,
                Err(_) => return false,
            },
        };
        let queued = Queued {
            bytes,
            _budget: Some(budget),
        };
        match self.tx.try_send(queued) {
            Ok(()) => true,
            Err(TrySendError::Full(queued)) => {
                if refuse && self.refused(out, &queued.bytes).await {
                    return true;
                }
                self.tx.send(queued).await.is_ok()
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }

    /// Answer `bytes` "overloaded" if it is a request; false if it must wait instead.
    async fn refused(&self, out: &Outbound, bytes: &[u8]) -> bool {
        match message::peek_id(bytes) {
            Some(id) => {
                out.reject(Some(id), RpcError::overloaded()).await;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_bootstrap::{bootstrap, BootstrapOptions};
    use serde_json::{json, Value};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// Requests over a real connection and its method module, on the demo kernel.
    #[tokio::test]
    async fn requests_without_jsonrpc_are_answered_through_the_module_without_it() {
        let home = tempfile::tempdir().unwrap();
        let options = BootstrapOptions {
            home: Some(home.path().to_owned()),
            demo: true,
            ..BootstrapOptions::default()
        };
        let kernel = Arc::new(bootstrap(options, &|_| None).unwrap());
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let served = tokio::spawn(serve(
            KernelSource::ready(kernel),
            BufReader::new(server_read),
            server_write,
            ConnectionLimits::default(),
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();
        let mut exchange = async |request: Value| {
            let line = format!("{request}\n");
            client_write.write_all(line.as_bytes()).await.unwrap();
            lines.next_line().await.unwrap().unwrap()
        };

        // Before `initialize`, the gate answers, whatever the method.
        // Compared as JSON: the key order follows serde_json's features (the ACP SDK turns on
        // `preserve_order` in a workspace build).
        let early: Value =
            serde_json::from_str(&exchange(json!({ "id": 1, "method": "no/such" })).await).unwrap();
        assert_eq!(
            early,
            json!({ "error": { "code": -32600, "message": "Not initialized" }, "id": 1 })
        );
        let init = json!({ "id": 2, "method": "initialize",
            "params": { "clientInfo": { "name": "t", "version": "1" } } });
        let answer: Value = serde_json::from_str(&exchange(init.clone()).await).unwrap();
        assert!(answer["result"]["userAgent"].is_string(), "{answer}");
        let again = exchange(json!({ "id": 3, "method": "initialize", "params": init["params"] }));
        let again: Value = serde_json::from_str(&again.await).unwrap();
        assert_eq!(
            again,
            json!({ "error": { "code": -32600, "message": "Already initialized" }, "id": 3 })
        );

        let account = exchange(json!({ "id": "a", "method": "account/read" })).await;
        let parsed: Value = serde_json::from_str(&account).unwrap();
        assert_eq!(parsed["id"], "a", "{account}");
        assert!(parsed["result"].is_object(), "{account}");
        assert!(!account.contains("jsonrpc"), "{account}");
        let unknown: Value =
            serde_json::from_str(&exchange(json!({ "id": -4, "method": "no/such" })).await)
                .unwrap();
        assert_eq!(
            unknown,
            json!({ "error": { "code": -32601, "message": "Method not found: no/such" }, "id": -4 })
        );
        let typed = exchange(json!({ "id": 5, "method": "thread/start", "params": { "cwd": 5 } }));
        let typed: Value = serde_json::from_str(&typed.await).unwrap();
        assert_eq!(typed["error"]["code"], -32602);
        assert_eq!(typed["error"]["data"], json!({ "field": "cwd" }));

        client_write.shutdown().await.unwrap();
        served.await.unwrap().unwrap();
    }

    fn limits(messages: usize, bytes: usize) -> ConnectionLimits {
        ConnectionLimits {
            inbound_queue: messages,
            inbound_bytes: bytes,
            ..ConnectionLimits::default()
        }
    }

    #[tokio::test]
    async fn a_full_inbound_queue_refuses_requests_but_keeps_answers() {
        let (out, mut written) = Outbound::new(8);
        let (tx, mut rx) = InboundQueue::new(&limits(1, 1 << 20), WhenFull::Refuse);
        let tx = Arc::new(tx);
        assert!(
            tx.enqueue(&out, b"{\"id\":1,\"method\":\"a\"}".to_vec())
                .await
        );
        // The queue is full: a request is answered "overloaded" at once, not queued.
        assert!(
            tx.enqueue(&out, b"{\"id\":2,\"method\":\"b\"}".to_vec())
                .await
        );
        let refusal: serde_json::Value =
            serde_json::from_str(&written.recv().await.unwrap()).unwrap();
        assert_eq!(refusal["id"], 2);
        assert_eq!(refusal["error"]["code"], -32001);
        // An answer to our own request waits for room instead of being dropped.
        let answer = b"{\"id\":0,\"result\":{}}".to_vec();
        let waiting = tokio::spawn({
            let (tx, out) = (Arc::clone(&tx), out.clone());
            async move { tx.enqueue(&out, answer).await }
        });
        assert_eq!(
            rx.recv().await.unwrap().bytes,
            b"{\"id\":1,\"method\":\"a\"}".to_vec()
        );
        assert!(waiting.await.unwrap());
        assert_eq!(
            rx.recv().await.unwrap().bytes,
            b"{\"id\":0,\"result\":{}}".to_vec()
        );
        assert!(written.try_recv().is_err(), "nothing else was written");
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_a_waiting_reader_loses_nothing() {
        use futures::FutureExt;
        let (out, mut written) = Outbound::new(8);
        // Room for many messages but only 100 bytes.
        let (tx, mut rx) = InboundQueue::new(&limits(100, 100), WhenFull::Wait);
        let big = |id: u8| {
            let mut m = format!("{{\"id\":{id},\"method\":\"m\",\"params\":\"").into_bytes();
            m.resize(70, b'x');
            m.extend_from_slice(b"\"}");
            m
        };
        assert!(tx.enqueue(&out, big(1)).await);
        // The second does not fit the byte budget: the reader waits (no "overloaded").
        let mut second = Box::pin(tx.enqueue(&out, big(2)));
        assert!((&mut second).now_or_never().is_none(), "the reader waits");
        let first = rx.recv().await.unwrap();
        assert_eq!(first.bytes, big(1));
        drop(first);
        assert!(second.await);
        assert_eq!(rx.recv().await.unwrap().bytes, big(2));
        assert!(written.try_recv().is_err(), "nothing was refused");
        // On WebSocket the same excess is refused at once.
        let (tx, _rx) = InboundQueue::new(&limits(100, 100), WhenFull::Refuse);
        assert!(tx.enqueue(&out, big(3)).await);
        assert!(tx.enqueue(&out, big(4)).now_or_never().unwrap());
        let refusal: serde_json::Value =
            serde_json::from_str(&written.recv().await.unwrap()).unwrap();
        assert_eq!(
            (refusal["id"].clone(), refusal["error"]["code"].clone()),
            (json!(4), json!(-32001))
        );
    }
}
