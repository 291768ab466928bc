//! The test harness of the rein workspace, one copy for every test binary: a real
//! `rein mock-model` launcher and `REIN_HOME`s pointing at it, the line-peer that drives
//! `rein app-server` / `rein acp` over stdio, the app-server WebSocket client, process and
//! file watchers, and the kernel-level fixtures (scripted model catalogs, tools) of the
//! crate-level integration tests.
//!
//! A dev-dependency only. Each tier turns on the feature it needs, so the fast loop
//! (`cargo test -p rein-core`) builds the kernel fixtures and not the end-to-end ones:
//! `kernel` (rein-core fixtures), `mcp` (kernel + an MCP manager), `rollout` (event-stream
//! builders), `processes` (pidfd watchers), `e2e` (everything that runs the `rein` binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Duration;

/// How long any single expected message or event may take before a test fails: a guard
/// against hangs, never a synchronisation point.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub mod test_setup;

/// A fresh directory that the workspace-write sandbox does not let rein write: not under
/// the temp dir (writable there). Under `target_tmp` (a test's `CARGO_TARGET_TMPDIR`),
/// unless the checkout itself is under the temp dir, then under `$HOME`.
#[cfg(feature = "e2e")]
pub fn dir_outside_the_temp_dir(target_tmp: &std::path::Path) -> tempfile::TempDir {
    let base = if target_tmp.starts_with(std::env::temp_dir()) {
        std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("/root"), Into::into)
    } else {
        target_tmp.to_path_buf()
    };
    tempfile::tempdir_in(base).expect("a directory outside the temp dir")
}

#[cfg(feature = "processes")]
pub mod executables;
#[cfg(feature = "processes")]
pub mod processes;

#[cfg(feature = "e2e")]
pub mod acp;
#[cfg(feature = "e2e")]
pub mod app_server;
#[cfg(feature = "e2e")]
pub mod exec;
#[cfg(feature = "e2e")]
pub mod fs_events;
#[cfg(feature = "e2e")]
pub mod line_peer;
#[cfg(feature = "e2e")]
pub mod memory;
#[cfg(feature = "e2e")]
pub mod mock_model;
#[cfg(feature = "e2e")]
pub mod replay;
#[cfg(feature = "e2e")]
pub mod serve;
#[cfg(feature = "e2e")]
pub mod tmux;
#[cfg(feature = "e2e")]
pub mod unprivileged;
#[cfg(feature = "e2e")]
pub mod ws_client;

#[cfg(feature = "kernel")]
pub mod agents;
#[cfg(feature = "kernel")]
pub mod kernel;

#[cfg(feature = "mcp")]
pub mod mcp;

#[cfg(feature = "rollout")]
pub mod rollout;

/// The name `--exact` needs to pick `test` (a function of the module `module_path`, i.e.
/// `module_path!()` at the test) out of its test binary: the module path without the
/// crate's own name, so it holds wherever the test file is mounted.
pub fn test_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}
