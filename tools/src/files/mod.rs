//! Read-only file tools: `read_file`, `list_dir` and `grep`. Reading is allowed under
//! every sandbox policy (read-only means "read anything, write nothing"), so these need
//! no approval; they resolve paths against the turn's cwd and run their blocking I/O off
//! the async threads.
//!
//! They run in rein's own process, so a hostile workspace must not be able to hang or
//! exhaust it: files are opened with `O_NONBLOCK` (opening a FIFO never waits for a
//! writer), checked with `fstat` on the open descriptor (only regular files are read: never
//! a FIFO, a device or a socket, whatever a symlink points at), and read in bounded
//! amounts.

pub mod glob;
pub mod grep;
pub mod list_dir;
pub mod read_file;

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
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

/// Open `path` for reading if it is a regular file, without ever blocking: `follow` says
/// whether a symlink as the last component is followed (a path the model named) or refused
/// (an entry a directory walk found, which must not turn into something else).
pub fn open_regular(path: &Path, follow: bool) -> Result<(File, u64), String> {
    let mut flags = rustix::fs::OFlags::NONBLOCK.bits();
    if !follow {
        flags |= rustix::fs::OFlags::NOFOLLOW.bits();
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags as i32)
        .open(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok((file, meta.len()));
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(format!(
        "{} is {what}, not a regular file; only regular files are read",
        path.display()
    ))
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
