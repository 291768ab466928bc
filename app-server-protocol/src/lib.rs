//! The app-server's wire types: JSON-RPC messages and the typed `*Params`, `*Response` and
//! `*Notification` of every method rein serves, mirroring the Codex app-server v2 schema
//! (same method names, camelCase field names and shapes) so Codex clients work unchanged.
//!
//! Fields Codex always sends, even as `null`, are serialized as `null` here too: some
//! clients read them unconditionally.
//!
//! Architecture invariant: pure data (serde, schemars), independent of the kernel's own
//! types; the app-server maps kernel events onto these shapes, never the other way round.

#![cfg_attr(test, allow(clippy::unwrap_used))]

/// The Codex release whose app-server protocol (its v2 schema, as this crate mirrors it)
/// rein implements. `initialize` reports it as the server's version: Codex clients compare
/// it with their own and warn about an older server.
pub const CODEX_PROTOCOL_VERSION: &str = "0.169.0";

pub mod approval;
pub mod auto_review;
pub mod client_meta;
pub mod goal;
pub mod history;
pub mod hooks;
pub mod item;
pub mod jsonrpc;
pub mod mcp;
pub mod memory;
pub mod meta;
pub mod notification;
pub mod schema;
pub mod skills;
pub mod task_graph;
pub mod thread;
pub mod turn;

pub use approval::*;
pub use auto_review::*;
pub use client_meta::*;
pub use goal::*;
pub use history::*;
pub use hooks::*;
pub use item::*;
pub use jsonrpc::*;
pub use mcp::*;
pub use memory::*;
pub use meta::*;
pub use notification::*;
pub use thread::*;
pub use turn::*;

// The schema drift check is an end-to-end module (tests/e2e/app_server_schema_drift.rs):
// it uses only the public API, and a crate without unit tests builds no test binary.
