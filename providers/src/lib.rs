//! Model providers over HTTP: the clients of the Responses and Chat Completions APIs
//! ([`http`]) and the [`catalog`] that builds them from the configuration, so the kernel
//! only ever sees `ModelClient` and `ModelCatalog`.
//!
//! Architecture invariant: a client turns one `ModelRequest` into one stream and never
//! retries; retries, history and events stay in the kernel, so every provider behaves
//! the same under faults.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod catalog;
pub mod http;
pub mod known_models;

pub use catalog::{endpoint, ProviderCatalog};
