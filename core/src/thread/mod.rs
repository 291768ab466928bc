//! A thread: one continuing conversation with its own serial submission loop.

pub(crate) mod bus;
pub(crate) mod emitter;
pub(crate) mod handle;
pub(crate) mod open_items;
pub(crate) mod outbox;
pub(crate) mod router;
pub mod state;
pub(crate) mod submission_loop;

pub use bus::EventStream;
pub use handle::ThreadHandle;
