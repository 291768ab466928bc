//! Rollout persistence: every persisted event of a thread goes to one JSONL file under
//! `$REIN_HOME/sessions/`, and a thread is rebuilt from it in a new process (resume),
//! branched (fork), listed and archived.
//!
//! Map: [`layout`] says where files live, [`format`](mod@format) what a line is, [`writer`] appends
//! (with [`lock`]: one writer per thread, and [`blobs`]), [`reader`] loads tolerantly,
//! [`resume`] repairs and forks event lists, [`index`] lists threads (its one connection
//! lives on the [`indexer`] thread), [`store`] ties them together per `$REIN_HOME` as
//! blocking operations, [`service`] is the session store the kernel uses (its own writer,
//! sync and index threads), [`codex`] imports Codex CLI rollouts.
//!
//! Architecture invariant: the files are the source of truth. The index is a cache that
//! [`store::RolloutStore::reindex`] rebuilds; state is always `ThreadState::apply` folded
//! over the events read back, never a second reducer.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod blobs;
pub mod codex;
mod decode;
pub mod format;
pub mod index;
pub mod indexer;
pub(crate) mod io_guard;
pub mod layout;
pub mod lock;
pub mod memory;
pub mod reader;
pub mod resume;
pub mod service;
pub mod store;

pub mod writer;

// The timestamp helpers are the kernel's (the meta line's `created_at` uses them too).
use rein_core::store::time;

// The store's types are the kernel's (`rein_core::store`): one import path each.
use rein_core::store::RolloutError;
pub use resume::{fork_events, repair_for_resume};
pub use service::{RolloutService, ServiceOptions};
pub use store::RolloutStore;
pub use writer::{Durability, RolloutWriter};
