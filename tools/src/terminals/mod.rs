//! Background terminals: commands the model starts to keep running (a dev server, a
//! watcher). Unlike foreground commands they survive the call and the turn — an
//! interrupt does not touch them — and are reached later by id to write to stdin and
//! read new output. They die when the thread cleans its background terminals, when it
//! shuts down, or when the registry is dropped.

pub mod registry;
pub mod write_stdin;

pub use registry::{BackgroundTerminals, Started, TerminalError, TerminalSnapshot};
pub use write_stdin::WriteStdinTool;
