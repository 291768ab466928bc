//! The WebSocket transport: one JSON-RPC message per text frame, each connection with its
//! own session (initialize gate, pending requests) over the shared kernel and the shared
//! loaded threads, which several connections may subscribe to.
//! `GET /readyz` answers `200 ok` for health checks. With a token configured, the upgrade
//! request must carry `Authorization: Bearer <token>`.
//!
//! A connection whose outbound queue fills up has stopped keeping up: it is closed (1008,
//! "client fell behind") rather than allowed to stall the threads it shares with others.
//! It can reconnect and `thread/resume` to catch up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
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

/// How long a lagging client gets to take its close frame before its socket is dropped
/// (it has stopped reading, so the frame may wait behind everything it left unread).
const LAG_CLOSE_GRACE: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, Default)]
pub struct WsOptions {
    pub limits: ConnectionLimits,
    /// Required bearer token, if any.
    pub token: Option<String>,
}

pub async fn bind(addr: SocketAddr) -> Result<TcpListener, AppServerError> {
    TcpListener::bind(addr).await.map_err(AppServerError::Read)
}

/// Accept connections until the process ends.
pub async fn serve_ws(
    kernel: KernelSource,
    listener: TcpListener,
    options: WsOptions,
) -> Result<(), AppServerError> {
    let options = Arc::new(options);
    let hub = Arc::new(Hub::new(options.limits.idle_unload));
    loop {
        let (stream, peer) = listener.accept().await.map_err(AppServerError::Read)?;
        let _ = stream.set_nodelay(true);
        let kernel = kernel.clone();
        let options = Arc::clone(&options);
        let hub = Arc::clone(&hub);
        tokio::spawn(async move {
            if let Err(e) = connection(kernel, hub, stream, peer, &options).await {
                tracing::debug!(%peer, "websocket connection ended: {e}");
            }
        });
    }
}

async fn connection(
    kernel: KernelSource,
    hub: Arc<Hub>,
    mut stream: TcpStream,
    peer: SocketAddr,
    options: &WsOptions,
) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    if is_readyz(&stream).await {
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
        return Ok(());
    }
    let token = options.token.clone();
    // The error type is tungstenite's handshake callback signature, not ours to shrink.
    #[allow(clippy::result_large_err)]
    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let Some(token) = &token else {
            return Ok(resp);
        };
        let given = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given == Some(token.as_str()) {
            Ok(resp)
        } else {
            let mut refused = ErrorResponse::new(Some("missing or wrong bearer token".into()));
            *refused.status_mut() = StatusCode::UNAUTHORIZED;
            Err(refused)
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(options.limits.max_line_bytes))
        .max_frame_size(Some(options.limits.max_line_bytes));
    let ws = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await?;
    let (sink, mut frames) = ws.split();
    let lagging = CancellationToken::new();
    let queue = options.limits.outbound_queue;
    let (out, out_rx) =
        Outbound::with_policy(queue, FullQueue::DisconnectWhenFull(lagging.clone()));
    let writer = tokio::spawn(write_frames(sink, out_rx, lagging, peer, queue));
    let (in_tx, in_rx) = InboundQueue::new(&options.limits, WhenFull::Refuse);
    let reader_out = out.clone();
    let reader = tokio::spawn(async move {
        loop {
            let frame = tokio::select! {
                biased;
                () = reader_out.lagged() => break,
                frame = frames.next() => match frame {
                    Some(frame) => frame,
                    None => break,
                },
            };
            let bytes = match frame {
                Ok(Message::Text(text)) => text.as_bytes().to_vec(),
                Ok(Message::Binary(bytes)) => bytes.to_vec(),
                Ok(Message::Close(_)) => break,
                Ok(_) => continue,
                Err(e) => {
                    let error = RpcError::invalid_request(format!("Invalid request: {e}"));
                    reader_out.reject(None, error).await;
                    break;
                }
            };
            if !in_tx.enqueue(&reader_out, bytes).await {
                break;
            }
        }
    });
    run(kernel, hub, in_rx, out).await;
    let _ = reader.await;
    let _ = writer.await;
    Ok(())
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
