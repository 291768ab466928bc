//! Node.js for the end-to-end tests that drive rein with npm packages (the official SDKs,
//! the reference MCP server), installed under target/ by `scripts/test-setup.sh`.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Whether `tool --version` runs.
pub fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The absolute path of `tool` on `PATH` (ACP wants an absolute MCP server command).
pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(tool))
        .find(|path| path.is_file())
}

/// `entry` (relative to the repo root), running `scripts/test-setup.sh` first if it is
/// missing; `None` when node or npm is missing, so nothing can install it.
pub fn installed(entry: &str) -> Option<PathBuf> {
    if !has("node") || !has("npm") {
        return None;
    }
    let root = repo_root();
    let path = root.join(entry);
    if !path.exists() {
        let status = Command::new(root.join("scripts/test-setup.sh"))
            .status()
            .unwrap();
        assert!(status.success(), "scripts/test-setup.sh failed");
    }
    assert!(path.exists(), "{entry} was not installed");
    Some(path)
}
