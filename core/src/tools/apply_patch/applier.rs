//! Applies a parsed patch atomically. Staging computes every resulting file in memory
//! (later operations see the results of earlier ones); nothing touches the disk until
//! every hunk of every file has matched. Committing writes each new content to a temp
//! file beside its target, then renames them all into place and removes deleted files;
//! if anything fails, what was already done is restored from the staged originals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::diff::unified_diff;
use super::error::PatchError;
use super::matcher;
use super::parser::{FileOp, Hunk, Patch};

/// What happened to one file, for the model and the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The path as the patch named it.
    pub path: PathBuf,
    pub kind: ChangeKind,
    /// Unified diff of this operation.
    pub diff: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Add,
    Delete,
    Update { move_to: Option<PathBuf> },
}

/// A patch whose results are computed and ready to be written.
#[derive(Debug)]
pub struct StagedPatch {
    /// Final content per absolute path; `None` deletes.
    writes: BTreeMap<PathBuf, Option<String>>,
    /// What was on disk before (`None` = absent), for every path in `writes`.
    originals: BTreeMap<PathBuf, Option<String>>,
    pub changes: Vec<FileChange>,
}

impl StagedPatch {
    /// Every absolute path the patch writes or deletes.
    pub fn touched_paths(&self) -> impl Iterator<Item = &Path> {
        self.writes.keys().map(PathBuf::as_path)
    }
}

/// Resolve a patch path against the working directory.
pub fn resolve(cwd: &Path, path: &Path) -> PathBuf {
    cwd.join(path)
}

/// Compute every file's new content. Reads the disk; writes nothing.
pub fn stage(patch: &Patch, cwd: &Path) -> Result<StagedPatch, PatchError> {
    let mut staged = StagedPatch {
        writes: BTreeMap::new(),
        originals: BTreeMap::new(),
        changes: Vec::new(),
    };
    for op in &patch.ops {
        match op {
            FileOp::Add { path, contents } => {
                let abs = resolve(cwd, path);
                let before = staged.current(&abs)?;
                staged.set(abs, Some(contents.clone()))?;
                staged.changes.push(FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Add,
                    diff: unified_diff(path, before.as_deref(), Some(contents)),
                });
            }
            FileOp::Delete { path } => {
                let abs = resolve(cwd, path);
                let before = staged.current(&abs)?.ok_or_else(|| PatchError::NotFound {
                    path: path.clone(),
                    action: "delete",
                })?;
                staged.set(abs, None)?;
                staged.changes.push(FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Delete,
                    diff: unified_diff(path, Some(&before), None),
                });
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let abs = resolve(cwd, path);
                let before = staged.current(&abs)?.ok_or_else(|| PatchError::NotFound {
                    path: path.clone(),
                    action: "update",
                })?;
                let after = apply_hunks(path, &before, hunks)?;
                match move_to {
                    Some(dest) => {
                        staged.set(abs, None)?;
                        staged.set(resolve(cwd, dest), Some(after.clone()))?;
                    }
                    None => staged.set(abs, Some(after.clone()))?,
                }
                staged.changes.push(FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Update {
                        move_to: move_to.clone(),
                    },
                    diff: unified_diff(
                        move_to.as_ref().unwrap_or(path),
                        Some(&before),
                        Some(&after),
                    ),
                });
            }
        }
    }
    Ok(staged)
}

impl StagedPatch {
    /// The content of `abs` as earlier operations of this patch left it.
    fn current(&mut self, abs: &Path) -> Result<Option<String>, PatchError> {
        if let Some(content) = self.writes.get(abs) {
            return Ok(content.clone());
        }
        read_original(abs)
    }

    fn set(&mut self, abs: PathBuf, content: Option<String>) -> Result<(), PatchError> {
        if !self.originals.contains_key(&abs) {
            let original = read_original(&abs)?;
            self.originals.insert(abs.clone(), original);
        }
        self.writes.insert(abs, content);
        Ok(())
    }

    /// Write everything. On failure, files already changed are restored.
    pub fn commit(self) -> Result<Vec<FileChange>, PatchError> {
        let mut temps: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut created_dirs: Vec<PathBuf> = Vec::new();
        for (path, content) in &self.writes {
            let Some(content) = content else { continue };
            match write_temp(path, content, &mut created_dirs) {
                Ok(temp) => temps.push((temp, path.clone())),
                Err(source) => {
                    discard(&temps, &created_dirs);
                    return Err(PatchError::Write {
                        path: path.clone(),
                        source,
                    });
                }
            }
        }
        let mut done: Vec<&PathBuf> = Vec::new();
        let renames = temps.iter().map(|(temp, path)| (path, Some(temp)));
        let deletes = self
            .writes
            .iter()
            .filter(|(_, c)| c.is_none())
            .map(|(path, _)| (path, None));
        for (path, temp) in renames.chain(deletes) {
            let result = match temp {
                Some(temp) => std::fs::rename(temp, path),
                None => std::fs::remove_file(path),
            };
            if let Err(source) = result {
                let pending: Vec<(PathBuf, PathBuf)> = temps
                    .iter()
                    .filter(|(_, p)| !done.contains(&p))
                    .cloned()
                    .collect();
                discard(&pending, &[]);
                let unrestored = self.restore(&done);
                if unrestored.is_empty() {
                    discard(&[], &created_dirs);
                    return Err(PatchError::Write {
                        path: path.clone(),
                        source,
                    });
                }
                return Err(PatchError::PartiallyApplied {
                    path: path.clone(),
                    source,
                    unrestored,
                });
            }
            done.push(path);
        }
        Ok(self.changes)
    }

    /// Put the original content back for `paths`; returns those that could not be.
    fn restore(&self, paths: &[&PathBuf]) -> Vec<PathBuf> {
        paths
            .iter()
            .filter(|p| {
                let result = match self.originals.get(**p) {
                    Some(Some(content)) => std::fs::write(p, content),
                    _ => std::fs::remove_file(p),
                };
                result.is_err()
            })
            .map(|p| (*p).clone())
            .collect()
    }
}

fn read_original(abs: &Path) -> Result<Option<String>, PatchError> {
    match std::fs::read(abs) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| PatchError::NotText {
                path: abs.to_path_buf(),
            }),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(source) => Err(PatchError::Read {
            path: abs.to_path_buf(),
            source,
        }),
    }
}

fn write_temp(path: &Path, content: &str, created: &mut Vec<PathBuf>) -> std::io::Result<PathBuf> {
    let parent = path.parent().unwrap_or(Path::new("."));
    create_dirs(parent, created)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per process and per write, so concurrent patches never share a temp file.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let temp = parent.join(format!(".{name}.rein-patch-{}-{n}.tmp", std::process::id()));
    std::fs::write(&temp, content)?;
    // Keep the mode of the file being replaced (e.g. an executable script).
    if let Ok(meta) = std::fs::metadata(path) {
        if let Err(e) = std::fs::set_permissions(&temp, meta.permissions()) {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
    }
    Ok(temp)
}

/// `create_dir_all`, remembering which directories it created (outermost first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    for d in missing.into_iter().rev() {
        std::fs::create_dir(d)?;
        created.push(d.to_path_buf());
    }
    Ok(())
}

fn discard(temps: &[(PathBuf, PathBuf)], created_dirs: &[PathBuf]) {
    for (temp, _) in temps {
        let _ = std::fs::remove_file(temp);
    }
    for dir in created_dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Apply the hunks of one Update to `content`.
pub fn apply_hunks(path: &Path, content: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let mut lines: Vec<String> = content.split('\n').map(str::to_owned).collect();
    if content.ends_with('\n') || content.is_empty() {
        lines.pop();
    }
    let mut cursor = 0;
    let mut edits: Vec<(usize, usize, &[String])> = Vec::new();
    for hunk in hunks {
        if let Some(anchor) = &hunk.anchor {
            let at = matcher::find(&lines, std::slice::from_ref(anchor), cursor, false)
                .ok_or_else(|| PatchError::AnchorNotFound {
                    path: path.to_path_buf(),
                    patch_line: hunk.patch_line,
                    anchor: anchor.clone(),
                })?;
            cursor = at + 1;
        }
        if hunk.old.is_empty() {
            // A pure addition goes after its anchor, or at the end of the file.
            let at = if hunk.anchor.is_some() {
                cursor
            } else {
                lines.len()
            };
            edits.push((at, 0, &hunk.new));
            continue;
        }
        let mut old: &[String] = &hunk.old;
        let mut new: &[String] = &hunk.new;
        let mut found = matcher::find(&lines, old, cursor, hunk.end_of_file);
        // A trailing empty context line often stands for the file's final newline.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = matcher::find(&lines, old, cursor, hunk.end_of_file);
        }
        let at = found.ok_or_else(|| PatchError::HunkMismatch {
            path: path.to_path_buf(),
            patch_line: hunk.patch_line,
            from_line: cursor + 1,
            expected: hunk.old.join("\n"),
        })?;
        edits.push((at, old.len(), new));
        cursor = at + old.len();
    }
    // A pure addition without an anchor lands at the end even when later hunks edit
    // earlier lines: apply from the bottom up so no edit shifts another's position.
    edits.sort_by_key(|(at, _, _)| *at);
    for (at, len, new) in edits.into_iter().rev() {
        lines.splice(at..at + len, new.iter().cloned());
    }
    let mut out = lines.join("\n");
    if !lines.is_empty() {
        out.push('\n');
    }
    Ok(out)
}
