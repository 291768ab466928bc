//! Why a patch was not applied. Every variant names the file, and hunk failures name the
//! patch line, so the model can fix exactly the part that was wrong.

use std::path::PathBuf;

use super::parser::ParseError;

#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("{path}: file to {action} does not exist")]
    NotFound { path: PathBuf, action: &'static str },
    #[error(
        "{path}: the hunk at patch line {patch_line} does not apply: could not find these \
         lines (searching from line {from_line} of the file):\n{expected}"
    )]
    HunkMismatch {
        path: PathBuf,
        patch_line: usize,
        /// 1-based line of the file where the search started.
        from_line: usize,
        expected: String,
    },
    #[error(
        "{path}: the hunk at patch line {patch_line} does not apply: could not find the \
         `@@ {anchor}` line"
    )]
    AnchorNotFound {
        path: PathBuf,
        patch_line: usize,
        anchor: String,
    },
    #[error("{path}: the path cannot be resolved (a symlink loop, or it names no file)")]
    Unresolvable { path: PathBuf },
    #[error(
        "{path}: a symlink appeared on the path while the patch was applied; nothing was \
         written through it (no file was changed)"
    )]
    SymlinkRace { path: PathBuf },
    #[error("{path}: {kind}, not a regular file; only regular files are patched")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path}: {size} bytes, too large to patch (the limit is {max} bytes)")]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("{path}: not a UTF-8 text file")]
    NotText { path: PathBuf },
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot write: {source} (no file was changed)")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: writing failed midway: {source}; restoring the other files also failed for: {unrestored:?}")]
    PartiallyApplied {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        unrestored: Vec<PathBuf>,
    },
}
