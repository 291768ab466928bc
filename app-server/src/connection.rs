//! One client connection over any byte stream: a reader task frames lines into a bounded
//! inbound queue, one loop handles them in order, and a writer task drains the outbound
//! queue. A full inbound queue answers requests with -32001 "overloaded" at once; no input
//! ends the connection except the end of input itself.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc::{self, error::TrySendError};

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

/// Limits of one connection.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Longer lines are answered with an error and skipped.
    pub max_line_bytes: usize,
    /// Messages read but not yet handled.
    pub inbound_queue: usize,
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
    let (in_tx, in_rx) = mpsc::channel::<Vec<u8>>(limits.inbound_queue.max(1));
    let reader_out = out.clone();
    let max_line = limits.max_line_bytes;
    let reader = tokio::spawn(async move {
        let mut lines = LineReader::new(reader, max_line);
        loop {
            match lines.next().await {
                Ok(Some(Line::Message(bytes))) => {
                    if !enqueue(&in_tx, &reader_out, bytes).await {
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
    run(kernel, Arc::clone(&hub), in_rx, out).await;
    // The only connection is gone, and the process with it: shut every thread down.
    for thread in hub.threads.all() {
        let _ = thread.handle.shutdown().await;
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
    mut inbound: mpsc::Receiver<Vec<u8>>,
    out: Outbound,
) {
    // Clients open with `initialize`: answer it while the kernel is still being built.
    let first = inbound.recv().await;
    let answered_early = match &first {
        Some(bytes) => initialize_early(bytes, kernel.home(), &out).await,
        None => return,
    };
    let mut pending_first = first.filter(|_| !answered_early);
    let kernel = match kernel.get().await {
        Ok(kernel) => kernel,
        Err(why) => return refuse_all(&why, pending_first, inbound, &out).await,
    };
    let state = Arc::new(ServerState::new(kernel, hub, out.clone()));
    if answered_early {
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
        let bytes = match pending_first.take() {
            Some(bytes) => bytes,
            // A lagging connection is cut off: what it sent meanwhile is not acted on.
            None => match tokio::select! {
                biased;
                () = out.lagged() => None,
                next = inbound.recv() => next,
            } {
                Some(bytes) => bytes,
                None => break,
            },
        };
        match message::parse(&bytes) {
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
    for thread in state.threads.all() {
        leave(&state, &thread, false);
    }
}

/// Answer `bytes` if it is a well-formed `initialize` request; false otherwise (it is then
/// handled normally once the kernel is ready).
async fn initialize_early(bytes: &[u8], home: &Path, out: &Outbound) -> bool {
    let Ok(Inbound::Request { id, method, params }) = message::parse(bytes) else {
        return false;
    };
    if method != "initialize" {
        return false;
    }
    match initialize_response(home, out, params) {
        Ok(result) => {
            out.respond(id, Ok(result)).await;
            true
        }
        Err(_) => false,
    }
}

/// The kernel could not be built: every request is answered with why, until the input ends.
async fn refuse_all(
    why: &str,
    first: Option<Vec<u8>>,
    mut inbound: mpsc::Receiver<Vec<u8>>,
    out: &Outbound,
) {
    tracing::error!("rein could not start: {why}");
    let mut next = first;
    loop {
        let bytes = match next.take() {
            Some(b) => b,
            None => match inbound.recv().await {
                Some(b) => b,
                None => return,
            },
        };
        if let Ok(Inbound::Request { id, .. }) = message::parse(&bytes) {
            out.respond(
                id,
                Err(RpcError::internal(format!("rein could not start: {why}"))),
            )
            .await;
        }
    }
}

/// Queue one line; a request that finds the queue full is refused as overloaded, while
/// answers to our own requests wait for room (dropping one would strand a parked tool).
/// Returns false once the handling loop is gone.
pub(crate) async fn enqueue(tx: &mpsc::Sender<Vec<u8>>, out: &Outbound, bytes: Vec<u8>) -> bool {
    match tx.try_send(bytes) {
        Ok(()) => true,
        Err(TrySendError::Full(bytes)) => match message::peek_id(&bytes) {
            Some(id) => {
                out.reject(Some(id), RpcError::overloaded()).await;
                true
            }
            None => tx.send(bytes).await.is_ok(),
        },
        Err(TrySendError::Closed(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::bootstrap::{bootstrap, BootstrapOptions};
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
        let early = exchange(json!({ "id": 1, "method": "no/such" })).await;
        assert_eq!(
            early,
            r#"{"error":{"code":-32600,"message":"Not initialized"},"id":1}"#
        );
        let init = json!({ "id": 2, "method": "initialize",
            "params": { "clientInfo": { "name": "t", "version": "1" } } });
        let answer: Value = serde_json::from_str(&exchange(init.clone()).await).unwrap();
        assert!(answer["result"]["userAgent"].is_string(), "{answer}");
        let again = exchange(json!({ "id": 3, "method": "initialize", "params": init["params"] }));
        assert_eq!(
            again.await,
            r#"{"error":{"code":-32600,"message":"Already initialized"},"id":3}"#
        );

        let account = exchange(json!({ "id": "a", "method": "account/read" })).await;
        assert!(account.starts_with(r#"{"id":"a","result":{"#), "{account}");
        assert!(!account.contains("jsonrpc"), "{account}");
        let unknown = exchange(json!({ "id": -4, "method": "no/such" })).await;
        assert_eq!(
            unknown,
            r#"{"error":{"code":-32601,"message":"Method not found: no/such"},"id":-4}"#
        );
        let typed = exchange(json!({ "id": 5, "method": "thread/start", "params": { "cwd": 5 } }));
        let typed: Value = serde_json::from_str(&typed.await).unwrap();
        assert_eq!(typed["error"]["code"], -32602);
        assert_eq!(typed["error"]["data"], json!({ "field": "cwd" }));

        client_write.shutdown().await.unwrap();
        served.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_full_inbound_queue_refuses_requests_but_keeps_answers() {
        let (out, mut written) = Outbound::new(8);
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1);
        assert!(enqueue(&tx, &out, b"{\"id\":1,\"method\":\"a\"}".to_vec()).await);
        // The queue is full: a request is answered "overloaded" at once, not queued.
        assert!(enqueue(&tx, &out, b"{\"id\":2,\"method\":\"b\"}".to_vec()).await);
        let refusal: serde_json::Value =
            serde_json::from_str(&written.recv().await.unwrap()).unwrap();
        assert_eq!(refusal["id"], 2);
        assert_eq!(refusal["error"]["code"], -32001);
        // An answer to our own request waits for room instead of being dropped.
        let answer = b"{\"id\":0,\"result\":{}}".to_vec();
        let waiting = tokio::spawn({
            let (tx, out) = (tx.clone(), out.clone());
            async move { enqueue(&tx, &out, answer).await }
        });
        assert_eq!(
            rx.recv().await.unwrap(),
            b"{\"id\":1,\"method\":\"a\"}".to_vec()
        );
        assert!(waiting.await.unwrap());
        assert_eq!(
            rx.recv().await.unwrap(),
            b"{\"id\":0,\"result\":{}}".to_vec()
        );
        assert!(written.try_recv().is_err(), "nothing else was written");
    }
}
