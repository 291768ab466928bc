//! rein's app-server: JSON-RPC 2.0 for IDE clients, wire-compatible with the Codex
//! app-server v2 protocol, so clients written for Codex drive rein unchanged.
//!
//! Map: [`connection`] frames one client's stream ([`lines`]) and runs its loop;
//! [`message`] classifies each line; [`dispatch`] gates on `initialize` and calls the
//! connection's jsonrpsee method module ([`methods`]), whose callbacks are the
//! [`handlers`]; each loaded thread has a [`pump`] task that answers its turn requests
//! ([`deferred`]) and turns its kernel events into notifications through [`event_map`] (an
//! exhaustive match) and [`convert`]; everything sent goes through [`outbound`]. Wire types live in
//! `rein_app_server_protocol`.
//!
//! Architecture invariant: this crate only translates between the wire and the kernel's
//! `Op`s and `Event`s; rules about turns, approvals and history live in `rein-core`.
//! stdout carries protocol messages only; logs go to stderr through `tracing`.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod children;
pub mod collab_items;
pub mod connection;
pub mod convert;
pub mod deferred;
pub mod dispatch;
pub mod error;
pub mod event_map;
pub mod handlers;
pub mod kernel_source;
pub mod lines;
pub mod loaded;
pub mod message;
pub mod methods;
pub mod outbound;
pub mod pump;
pub mod skills_watch;
pub mod subscribers;
pub mod tool_items;
pub mod turns;
pub mod ws;

pub use connection::{serve, ConnectionLimits};
pub use error::{AppServerError, RpcError};
pub use kernel_source::KernelSource;

/// Serve one client on this process's stdin and stdout.
pub async fn serve_stdio(
    kernel: KernelSource,
    limits: ConnectionLimits,
) -> Result<(), AppServerError> {
    let stdin = tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    serve(kernel, stdin, tokio::io::stdout(), limits).await
}
