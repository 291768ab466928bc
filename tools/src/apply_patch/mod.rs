//! `apply_patch`: the Codex patch format, applied atomically. [`parser`] reads the
//! envelope, [`matcher`] finds hunks with whitespace-tolerant context, [`applier`] stages
//! every result in memory and then writes all files or none through directories opened
//! without following symlinks ([`fs`]), [`diff`] renders what
//! changed, and [`tool`] exposes it to the model behind the policy engine;
//! [`invocation`] recognises a patch sent through the shell tool instead; [`client`]
//! applies one through an editor that reads and writes files for rein.

pub mod applier;
pub mod client;
pub mod diff;
pub mod error;
pub mod fs;
pub mod invocation;
pub mod matcher;
pub mod parser;
pub mod tool;

use std::path::Path;

pub use applier::{stage, ChangeKind, FileChange, StagedPatch};
pub use error::PatchError;
pub use parser::{parse, FileOp, Hunk, ParseError, Patch};
pub use tool::ApplyPatchTool;

/// Parse `text` and apply it under `cwd`: every file changes, or none does.
pub fn apply(text: &str, cwd: &Path) -> Result<Vec<FileChange>, PatchError> {
    let patch = parse(text)?;
    stage(&patch, cwd)?.commit()
}

/// The model-facing summary of an applied patch: one line per file, then the diffs.
pub fn summarize(changes: &[FileChange]) -> String {
    let mut out = String::from("Success. Updated the following files:\n");
    for change in changes {
        let (mark, extra) = match &change.kind {
            ChangeKind::Add => ("A", String::new()),
            ChangeKind::Delete => ("D", String::new()),
            ChangeKind::Update { move_to: None } => ("M", String::new()),
            ChangeKind::Update { move_to: Some(to) } => ("R", format!(" -> {}", to.display())),
        };
        out.push_str(&format!("{mark} {}{extra}\n", change.path.display()));
    }
    for change in changes {
        out.push('\n');
        out.push_str(&change.diff);
    }
    out
}
