//! rein's kernel. A [`ThreadManager`](manager::ThreadManager) owns threads; each thread
//! runs one serial submission loop that takes [`Op`](rein_protocol::Op)s from a bounded
//! queue and emits [`Event`](rein_protocol::Event)s. Turns, tasks and steps are spawned
//! from the loop. See ARCHITECTURE.md for the map and `runtime-model.md` for the contract.

pub mod model;
pub mod recorder;
pub mod rollout;
pub mod thread;
pub mod tools;
