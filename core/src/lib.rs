//! rein's kernel. A [`ThreadManager`] owns threads; each thread runs one serial
//! submission loop that takes [`Op`](rein_protocol::Op)s from a bounded queue and emits
//! [`Event`](rein_protocol::Event)s. Turns, tasks and steps are spawned from the loop.
//! See ARCHITECTURE.md for the map and `runtime-model.md` for the contract.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod agents;
pub mod error;
pub mod goal;
pub mod hooks;
pub mod kernel_config;
pub mod manager;
pub mod memory;
pub mod model;
pub mod recorder;
pub mod shell_words;
pub mod store;
pub mod thread;
pub mod tool_servers;
pub mod tools;
pub mod trajectory;
pub mod turn;

pub use error::{KernelError, ThreadError};
pub use kernel_config::KernelConfig;
pub use manager::{
    CreationObserver, KernelServices, NewThread, ThreadCreated, ThreadManager, ThreadOptions,
    ThreadOrigin, ThreadStart,
};
pub use thread::{EventStream, ThreadHandle};
