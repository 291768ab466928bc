//! Read-only file tools: `read_file`, `list_dir` and `grep`. Reading is allowed under
//! every sandbox policy (read-only means "read anything, write nothing"), so these need
//! no approval; they resolve paths against the turn's cwd and run their blocking I/O off
//! the async threads.

pub mod glob;
pub mod grep;
pub mod list_dir;
pub mod read_file;

use std::path::{Path, PathBuf};

pub use grep::GrepTool;
pub use list_dir::ListDirTool;
pub use read_file::ReadFileTool;

/// Directories no listing or search descends into unless asked explicitly.
pub const DEFAULT_IGNORES: &[&str] = &[".git"];

/// `path` relative to the turn's `cwd`, or the cwd itself.
pub fn resolve(cwd: &Path, path: Option<&Path>) -> PathBuf {
    match path {
        Some(p) => cwd.join(p),
        None => cwd.to_path_buf(),
    }
}

/// Whether `bytes` looks like binary data (a NUL in the first block).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// Run blocking file work off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the file tool failed: {e}"))?
}
