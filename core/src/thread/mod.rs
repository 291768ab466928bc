//! A thread: one continuing conversation with its own serial submission loop.

pub mod state;
