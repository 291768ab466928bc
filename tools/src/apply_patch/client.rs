//! A patch applied through the client (an editor that reads and writes files for rein):
//! the old texts are the editor's (unsaved changes included) and the new ones are written
//! by the editor, which shows them as its own diffs. The policy is rein's and comes first:
//! the patch's paths are judged (and, when the policy says so, the user asked) before the
//! client hears of the patch, so a refused write never reaches it; unlike a patch on disk,
//! one that needs approval is asked about before its hunks are matched (matching needs
//! the client's texts). The paths the client is asked to read and write are the resolved
//! paths the policy judged.
//!
//! The editor writes by path, after rein's check, while sandboxed commands of the same batch
//! may still change the workspace: a symlink swapped in between would carry the write
//! anywhere (the editor follows it). So each path is checked again at the moment it is
//! handed to the editor (see `unchanged_target`): the policy judged it with every link
//! resolved, so a link on it now means its target changed, and the write is refused. What
//! is left is the editor's own moment between that check and its write.
//!
//! ACP has no delete, so a patch that deletes or moves a file is applied on disk, as
//! without a client. The client writes file by file; should one write fail, the files
//! already written get their old text back through the client, and a file the patch
//! created stays (the client cannot delete it): the error names it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_protocol::ToolOutcome;

use super::applier::{apply_hunks, resolve, ChangeKind, FileChange};
use super::diff::unified_diff;
use super::fs::MAX_PATCHED_FILE_BYTES;
use super::parser::{FileOp, Patch};
use super::summarize;
use super::tool::file_diff;
use crate::policy::{Action, PolicyEngine};
use crate::{ToolContext, ToolResult};

/// Whether `patch` can go through the client: it only adds and updates files in place.
pub fn fits_client(patch: &Patch) -> bool {
    patch.ops.iter().all(|op| {
        matches!(
            op,
            FileOp::Add { .. } | FileOp::Update { move_to: None, .. }
        )
    })
}

/// One file the patch writes: its resolved path, and its text before (`None`: absent).
struct Staged {
    before: Option<String>,
    after: String,
}

/// Apply `patch` (whose paths are relative to `cwd`) through the client.
pub async fn apply_through_client(
    policy: &PolicyEngine,
    ctx: &ToolContext,
    patch: &Patch,
    cwd: &Path,
) -> ToolResult {
    let mut targets = Vec::with_capacity(patch.ops.len());
    for op in &patch.ops {
        match resolve(cwd, op.path(), false) {
            Ok(abs) => targets.push(abs),
            Err(e) => return ToolResult::err(e.to_string()),
        }
    }
    // Before the client hears of the patch: a refused write never reaches it.
    let action = Action::Patch {
        paths: targets.clone(),
    };
    if let Err(refusal) = policy.authorize(ctx, action).await {
        return refusal.into_result();
    }
    let (files, changes) = match stage(ctx, patch, &targets).await {
        Ok(staged) => staged,
        Err(message) => return ToolResult::err(message),
    };
    if let Err(message) = write_all(ctx, &files).await {
        return ToolResult::err(message);
    }
    let diffs = changes.iter().map(|c| file_diff(c, cwd)).collect();
    ToolResult::new(
        summarize(&changes),
        true,
        ToolOutcome::Patched { changes: diffs },
    )
}

/// Every file's new text, from the client's old texts (later operations see the results
/// of earlier ones, as on disk).
async fn stage(
    ctx: &ToolContext,
    patch: &Patch,
    targets: &[PathBuf],
) -> Result<(BTreeMap<PathBuf, Staged>, Vec<FileChange>), String> {
    let mut files: BTreeMap<PathBuf, Staged> = BTreeMap::new();
    let mut changes = Vec::with_capacity(patch.ops.len());
    for (op, abs) in patch.ops.iter().zip(targets) {
        let current = match files.get(abs) {
            Some(staged) => Some(staged.after.clone()),
            None => read_current(ctx, op, abs).await?,
        };
        let (after, change) = match op {
            FileOp::Add { path, contents } => (
                contents.clone(),
                FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Add,
                    diff: unified_diff(path, current.as_deref(), Some(contents)),
                },
            ),
            FileOp::Update { path, hunks, .. } => {
                let Some(before) = current.as_deref() else {
                    return Err(format!("{}: file to update does not exist", path.display()));
                };
                let after = apply_hunks(path, before, hunks).map_err(|e| e.to_string())?;
                let diff = unified_diff(path, Some(before), Some(&after));
                (
                    after,
                    FileChange {
                        path: path.clone(),
                        kind: ChangeKind::Update { move_to: None },
                        diff,
                    },
                )
            }
            // `fits_client` let none through.
            FileOp::Delete { path } => {
                return Err(format!(
                    "{}: a delete cannot go through the client",
                    path.display()
                ))
            }
        };
        changes.push(change);
        files
            .entry(abs.clone())
            .and_modify(|staged| staged.after.clone_from(&after))
            .or_insert(Staged {
                before: current,
                after,
            });
    }
    Ok((files, changes))
}

/// The client's text of `abs` before the patch: `None` for a file an Add creates (absent
/// on disk; the client cannot say "no such file" apart from other failures).
async fn read_current(
    ctx: &ToolContext,
    op: &FileOp,
    abs: &Path,
) -> Result<Option<String>, String> {
    if matches!(op, FileOp::Add { .. }) && tokio::fs::symlink_metadata(abs).await.is_err() {
        return Ok(None);
    }
    let text = ctx
        .read_text_file(abs.to_path_buf(), None, None)
        .await
        .map_err(|e| format!("{}: cannot read the file: {e}", op.path().display()))?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_PATCHED_FILE_BYTES {
        return Err(format!(
            "{}: the file is larger than {MAX_PATCHED_FILE_BYTES} bytes",
            op.path().display()
        ));
    }
    Ok(Some(text))
}

/// Why a resolved, judged path may no longer be written: a component of it is a symlink
/// now (a sandboxed command swapped one in), or it cannot be looked at.
fn changed(path: &Path) -> Option<String> {
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component);
        match std::fs::symlink_metadata(&prefix) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Some(format!(
                    "{} is a symbolic link now: the target changed after the policy judged \
                     it, so the write is refused",
                    prefix.display()
                ))
            }
            Ok(_) => {}
            // A file the patch creates is absent until the editor writes it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && prefix == path => {}
            Err(e) => return Some(format!("{}: cannot be checked: {e}", prefix.display())),
        }
    }
    None
}

/// Check `path` again just before the editor is asked to write it (off the executor: it
/// reads the disk).
async fn unchanged_target(path: &Path) -> Result<(), String> {
    let owned = path.to_path_buf();
    match tokio::task::spawn_blocking(move || changed(&owned)).await {
        Ok(None) => Ok(()),
        Ok(Some(why)) => Err(why),
        Err(e) => Err(format!("{}: cannot be checked: {e}", path.display())),
    }
}

/// Write `text` to `path` through the client, if its target is still the judged one.
async fn write_checked(ctx: &ToolContext, path: &Path, text: &str) -> Result<(), String> {
    unchanged_target(path).await?;
    ctx.write_text_file(path.to_path_buf(), text.to_owned())
        .await
        .map_err(|e| format!("the client did not write it: {e}"))
}

/// Write every file through the client; on a failure, put back what was written.
async fn write_all(ctx: &ToolContext, files: &BTreeMap<PathBuf, Staged>) -> Result<(), String> {
    let mut written: Vec<(&PathBuf, &Staged)> = Vec::new();
    for (path, staged) in files {
        if let Err(e) = write_checked(ctx, path, &staged.after).await {
            let mut unrestored = Vec::new();
            for (done, was) in written {
                let restored = match &was.before {
                    Some(before) => write_checked(ctx, done, before).await.is_ok(),
                    None => false,
                };
                if !restored {
                    unrestored.push(done.display().to_string());
                }
            }
            let mut message = format!("{}: {e}", path.display());
            if !unrestored.is_empty() {
                message.push_str(&format!(
                    "; these files stay changed: {}",
                    unrestored.join(", ")
                ));
            }
            return Err(message);
        }
        written.push((path, staged));
    }
    Ok(())
}
