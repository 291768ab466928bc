//! The WebSocket transport: one JSON-RPC message per text frame, each connection with its
//! own session (initialize gate, pending requests) over the shared kernel and the shared
//! loaded threads, which several connections may subscribe to.
//! `GET /readyz` answers `200 ok` for health checks. The upgrade request passes
//! [`admit`]'s checks (no `Origin`, a `Host` naming this server, the bearer token).
//!
//! Resources a client holds are bounded: at most `max_connections` sockets are open at
//! once (one more is answered 503 and closed); a socket that has not finished its
//! upgrade, or has not sent its first message, within `handshake_timeout` is closed; and
//! running out of descriptors in `accept` (EMFILE, ENFILE) pauses accepting briefly
//! rather than ending the server.
//!
//! A connection whose outbound queue fills up has stopped keeping up: it is closed (1008,
//! "client fell behind") rather than allowed to stall the threads it shares with others.
//! It can reconnect and `thread/resume` to catch up.

pub mod admit;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use crate::connection::{run, ConnectionLimits, InboundQueue, WhenFull};
use crate::error::{AppServerError, RpcError};
use crate::kernel_source::KernelSource;
use crate::outbound::{FullQueue, Outbound};
use crate::subscribers::Hub;
use rein_bootstrap::admission::Admission;

/// How long a lagging client gets to take its close frame before its socket is dropped
/// (it has stopped reading, so the frame may wait behind everything it left unread).
const LAG_CLOSE_GRACE: Duration = Duration::from_secs(10);

/// How long accepting pauses when the process is out of descriptors: long enough for
/// timeouts and closing clients to free some, short enough not to be noticed.
const FD_EXHAUSTED_PAUSE: Duration = Duration::from_millis(100);

/// What a socket over the connection cap is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 21\r\nconnection: close\r\n\r\ntoo many connections\n";

#[derive(Clone, Debug)]
pub struct WsOptions {
    pub limits: ConnectionLimits,
    /// Required bearer token; `None` only when the user asked for no authentication.
    pub token: Option<String>,
    /// Host names, besides the bound address (and `localhost` on loopback), that a
    /// client's `Host` header may give.
    pub allowed_hosts: Vec<String>,
    /// Sockets open at once, handshaking or not.
    pub max_connections: usize,
    /// How long a socket may take to finish its upgrade, and then to send its first
    /// message.
    pub handshake_timeout: Duration,
}

impl Default for WsOptions {
    fn default() -> Self {
        Self {
            limits: ConnectionLimits::default(),
            token: None,
            allowed_hosts: Vec::new(),
            max_connections: 128,
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

pub async fn bind(addr: SocketAddr) -> Result<TcpListener, AppServerError> {
    TcpListener::bind(addr).await.map_err(AppServerError::Read)
}

/// Accept connections until the process ends. No accept error ends it.
pub async fn serve_ws(
    kernel: KernelSource,
    listener: TcpListener,
    options: WsOptions,
) -> Result<(), AppServerError> {
    let options = Arc::new(options);
    let hub = Arc::new(Hub::new(options.limits.idle_unload));
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let mut busy = BusyLog::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) if out_of_descriptors(&e) => {
                tracing::warn!(
                    "websocket accept: {e}; pausing {} ms (raise `ulimit -n` or lower --max-connections)",
                    FD_EXHAUSTED_PAUSE.as_millis()
                );
                tokio::time::sleep(FD_EXHAUSTED_PAUSE).await;
                continue;
            }
            // A connection that failed before we took it (reset, aborted) is the
            // client's problem, not the listener's.
            Err(e) => {
                tracing::debug!("websocket accept: {e}");
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            // One attempt, never waited on: a client that does not read it loses nothing.
            let _ = stream.try_write(BUSY);
            busy.refused(peer, options.max_connections);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let kernel = kernel.clone();
        let options = Arc::clone(&options);
        let hub = Arc::clone(&hub);
        tokio::spawn(async move {
            if let Err(e) = connection(kernel, hub, stream, peer, &options).await {
                tracing::debug!(%peer, "websocket connection ended: {e}");
            }
            drop(slot);
        });
    }
}

/// Says that connections are refused at the cap, at most once per [`BUSY_LOG_EVERY`]
/// (a flood must not flood the log too).
#[derive(Default)]
struct BusyLog {
    last: Option<tokio::time::Instant>,
    since: u64,
}

const BUSY_LOG_EVERY: Duration = Duration::from_secs(5);

impl BusyLog {
    fn refused(&mut self, peer: SocketAddr, max: usize) {
        self.since += 1;
        let now = tokio::time::Instant::now();
        if self.last.is_some_and(|at| now < at + BUSY_LOG_EVERY) {
            return;
        }
        tracing::warn!(
            %peer,
            refused = self.since,
            "websocket connections refused: {max} open already (--max-connections)"
        );
        self.last = Some(now);
        self.since = 0;
    }
}

fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

type Tungstenite = tokio_tungstenite::tungstenite::Error;

async fn connection(
    kernel: KernelSource,
    hub: Arc<Hub>,
    stream: TcpStream,
    peer: SocketAddr,
    options: &WsOptions,
) -> Result<(), Tungstenite> {
    let Some(ws) = tokio::time::timeout(options.handshake_timeout, handshake(stream, options))
        .await
        .map_err(|_| Tungstenite::Io(std::io::ErrorKind::TimedOut.into()))??
    else {
        return Ok(());
    };
    let (sink, frames) = ws.split();
    let lagging = CancellationToken::new();
    let queue = options.limits.outbound_queue;
    let (out, out_rx) =
        Outbound::with_policy(queue, FullQueue::DisconnectWhenFull(lagging.clone()));
    let writer = tokio::spawn(write_frames(sink, out_rx, lagging, peer, queue));
    let (in_tx, in_rx) = InboundQueue::new(&options.limits, WhenFull::Refuse);
    let reader_out = out.clone();
    let first_within = options.handshake_timeout;
    let reader = tokio::spawn(async move {
        read_frames(frames, in_tx, reader_out, first_within, peer).await;
    });
    run(kernel, hub, in_rx, out).await;
    let _ = reader.await;
    let _ = writer.await;
    Ok(())
}

/// Answer `/readyz`, or upgrade the connection once [`Admission`] lets it in. `None`:
/// the connection was a health check, now answered.
async fn handshake(
    mut stream: TcpStream,
    options: &WsOptions,
) -> Result<Option<WebSocketStream<TcpStream>>, Tungstenite> {
    if is_readyz(&stream).await {
        answer_readyz(&mut stream).await;
        return Ok(None);
    }
    let local = stream.local_addr()?;
    let admission = Admission::new(options.token.clone(), local, &options.allowed_hosts);
    // The error type is tungstenite's handshake callback signature, not ours to shrink.
    #[allow(clippy::result_large_err)]
    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        match admission.check(req.headers()) {
            Ok(()) => Ok(resp),
            Err(refusal) => {
                tracing::warn!("websocket upgrade refused: {refusal}");
                Err(admit::refused(refusal))
            }
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(options.limits.max_line_bytes))
        .max_frame_size(Some(options.limits.max_line_bytes));
    let ws = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await?;
    Ok(Some(ws))
}

async fn answer_readyz(stream: &mut TcpStream) {
    // Read the request head first: closing with unread input would reset the
    // connection before the client reads the answer.
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let _ = stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
        .await;
    let _ = stream.shutdown().await;
}

/// Queue the client's frames until it closes, lags, or sends nothing within
/// `first_within` of its upgrade (an idle socket holds a slot and a descriptor).
async fn read_frames(
    mut frames: SplitStream<WebSocketStream<TcpStream>>,
    in_tx: InboundQueue,
    out: Outbound,
    first_within: Duration,
    peer: SocketAddr,
) {
    let mut first_by = Some(tokio::time::Instant::now() + first_within);
    loop {
        let idle = async {
            match first_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let frame = tokio::select! {
            biased;
            () = out.lagged() => break,
            () = idle => {
                tracing::info!(%peer, "websocket client sent nothing after its upgrade: closing");
                break;
            }
            frame = frames.next() => match frame {
                Some(frame) => frame,
                None => break,
            },
        };
        first_by = None;
        let bytes = match frame {
            Ok(Message::Text(text)) => text.as_bytes().to_vec(),
            Ok(Message::Binary(bytes)) => bytes.to_vec(),
            Ok(Message::Close(_)) => break,
            Ok(_) => continue,
            Err(e) => {
                let error = RpcError::invalid_request(format!("Invalid request: {e}"));
                out.reject(None, error).await;
                break;
            }
        };
        if !in_tx.enqueue(&out, bytes).await {
            break;
        }
    }
}

/// Send the queued messages as text frames until the queue closes or the client lags; a
/// lagging client is told why in a close frame, if it takes it within the grace.
async fn write_frames(
    mut sink: SplitSink<WebSocketStream<TcpStream>, Message>,
    mut queued: mpsc::Receiver<String>,
    lagging: CancellationToken,
    peer: SocketAddr,
    queue: usize,
) {
    loop {
        let line = tokio::select! {
            biased;
            () = lagging.cancelled() => break,
            line = queued.recv() => match line {
                Some(line) => line,
                None => break,
            },
        };
        // A client that stopped reading blocks this send: the lag frees it.
        let sent = tokio::select! {
            biased;
            () = lagging.cancelled() => break,
            sent = sink.send(Message::text(line)) => sent,
        };
        if sent.is_err() {
            return;
        }
    }
    if !lagging.is_cancelled() {
        let _ = sink.close().await;
        return;
    }
    tracing::warn!(%peer, queue, "websocket client fell behind: disconnecting it");
    let close = CloseFrame {
        code: CloseCode::Policy,
        reason: "client fell behind".into(),
    };
    let closing = sink.send(Message::Close(Some(close)));
    let _ = tokio::time::timeout(LAG_CLOSE_GRACE, closing).await;
}

/// Whether the connection opens with `GET /readyz` (peeked, so a WebSocket upgrade still
/// sees its whole request).
async fn is_readyz(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 32];
    match stream.peek(&mut buf).await {
        Ok(n) => buf[..n].starts_with(b"GET /readyz"),
        Err(_) => false,
    }
}
