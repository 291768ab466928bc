//! `rein serve`: the agent over HTTP. OpenAI's Responses API (`/v1/responses`), so the
//! official SDKs and any HTTP client can run rein's agent, on the same home and sessions as
//! the other front ends.
//!
//! A response is one turn of a thread ([`ids`]); its object and its event stream are a
//! fold of the turn's events ([`project`]), live from the thread's subscription or replayed
//! from the rollout, with the same sequence numbers either way. Map: [`server`]
//! (listener, connections, routes), `rein_bootstrap::admission` (token, `Origin`, `Host`),
//! [`request`] (bodies), `handlers` (the endpoints), `stream` (server-sent events),
//! [`runs`] (threads, start and cancel), `driver` (each loaded thread's driver task),
//! [`error`] (OpenAI's error shape), [`records`] (what the server keeps beside the
//! rollouts: a response's `metadata`, queued runs), [`agent`] (LangGraph's Agent Protocol:
//! threads and runs on the same threads and projection), [`chat`] (`/v1/chat/completions`
//! on the same turns and projection).

pub mod agent;
pub mod chat;
mod driver;
pub mod error;
mod handlers;
pub mod ids;
pub mod project;
#[cfg(test)]
mod project_tests;
pub mod records;
pub mod request;
pub mod runs;
pub mod server;
mod stream;

pub use runs::Approvals;
pub use server::{serve, ServeError, ServeOptions};
