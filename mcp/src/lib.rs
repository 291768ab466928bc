//! MCP servers as tool sources for the rein kernel.
//!
//! `[mcp_servers.NAME]` in config.toml (read by `rein_config::mcp`) names servers; the [`McpManager`]
//! starts each one in the background when the first thread that needs it is created
//! (one process per configuration and working directory, shared by the threads), supervises
//! it ([`server`]: starting → ready → failed / stopped, restarts with backoff) and offers
//! each thread the tools of its ready servers at every step freeze. A call is an
//! `ToolAction::Mcp` with a `ToolOutcome` like any other tool's, so every front end shows
//! it from the kernel's facts.

mod bounded;
mod content;
pub mod dependency;
mod direct;
mod handler;
pub mod http;
pub mod launch;
pub mod listing;
pub mod manager;
pub mod naming;
mod report;
pub mod search;
pub mod server;
mod tool;

pub use bounded::MAX_MESSAGE_BYTES;
pub use launch::Env;
pub use manager::{FailedServer, McpManager, RequiredServersFailed};
pub use server::Server;
